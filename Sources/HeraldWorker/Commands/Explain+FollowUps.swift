import Foundation
import HeraldCore
import HeraldPostgres

/// `herald explain` of a notification with a follow-up policy (sql/057): its chain, each step with when
/// it fired or why not, and what satisfied it.
extension Explain {
    /// The chain of the notification `id` belongs to — the one its send started, or, for a step, the
    /// one it is a step of — one entry per step, loop and channel, in order. Nil when the row has
    /// nothing to do with a follow-up policy.
    static func followUps(_ db: PGConnection, id: UUID) throws -> JSONValue? {
        guard let row = try db.query("""
            select q.follows_up, q.follow_up_of, q.recipient_user_id, coalesce(q.notification_group, q.id::text) as key
              from notification_queue q where q.id = \(id)
            """).first else { return nil }
        let sources: [UUID]
        if let of = row["follow_up_of"].uuid {
            sources = [of]
        } else if row["follows_up"].bool == true, let recipient = row["recipient_user_id"].uuid, let key = row["key"].string {
            // Every copy of the notification to this recipient: whichever was sent first started it.
            sources = try db.query("""
                select q.id from notification_queue q
                 where q.recipient_user_id = \(recipient) and (q.notification_group = \(key) or q.id = \(id))
                """).compactMap { $0["id"].uuid }
        } else {
            return nil
        }
        var steps: [JSONValue] = []
        for s in try db.query("""
            select q.id, q.recipient_user_id, q.channel, \(Lease.shownStatus) as status, q.skip_reason, q.run_after,
                   q.sent_at, q.payload -> 'follow_up' ->> 'step' as step, q.payload -> 'follow_up' ->> 'loop' as loop,
                   q.payload -> 'follow_up' ->> 'until' as until, q.payload -> 'follow_up' ->> 'to' as to,
                   (select e.details::text from notification_events e
                     where e.queue_id = q.id and e.reason = 'follow_up_satisfied' order by e.at desc limit 1) as satisfied,
                   (select e.reason from notification_events e
                     where e.queue_id = q.id and e.event = 'deferred' order by e.at desc limit 1) as held
              from notification_queue q where q.follow_up_of = any(\(sources)::uuid[])
             order by (q.payload -> 'follow_up' ->> 'loop')::int, (q.payload -> 'follow_up' ->> 'step')::int, q.channel
            """) {
            steps.append(.object(step(s)))
        }
        let started = !steps.isEmpty
        return ["started": .bool(started), "steps": .array(steps),
                "note": .string(started ? "each step fires only while its condition fails at its time"
                                        : "the chain starts when the notification is first sent")]
    }

    /// One step's entry: what it is, and when it fired or why not.
    private static func step(_ s: PGRow) -> [String: JSONValue] {
        var o: [String: JSONValue] = [:]
        for key in ["channel", "status", "until", "to", "skip_reason"] { if let v = s[key].string { o[key] = .string(v) } }
        o["id"] = .string(s["id"].uuid?.lowercased ?? "")
        o["recipient_user_id"] = .string(s["recipient_user_id"].uuid?.lowercased ?? "")
        o["step"] = .number(Double(Int(s["step"].string ?? "") ?? 0))
        o["loop"] = .number(Double(Int(s["loop"].string ?? "") ?? 0))
        if let d = s["run_after"].date { o["due_at"] = .string(ISO8601.string(d)) }
        if let d = s["sent_at"].date { o["fired_at"] = .string(ISO8601.string(d)) }
        if let text = s["satisfied"].string, let v = try? JSONValue.parse(text) { o["satisfied"] = v }
        let status = s["status"].string ?? ""
        let outcome: String
        switch status {
        case "sent": outcome = "fired at \(o["fired_at"]?.stringValue ?? "?")"
        case "skipped" where s["skip_reason"].string == SkipReason.followUpSatisfied.rawValue:
            let by = o["satisfied"]
            outcome = "not sent: satisfied by \(by?["satisfied_by"]?.stringValue ?? "?")"
                + (by?["by"]?.stringValue.map { " of \($0)" } ?? "") + (by?["at"]?.stringValue.map { " at \($0)" } ?? "")
        case "skipped": outcome = "not sent: \(s["skip_reason"].string ?? "skipped")"
        case "processing": outcome = "being sent"
        case "failed": outcome = "failed; retried while attempts remain"
        default:
            outcome = "due at \(o["due_at"]?.stringValue ?? "?")" + (s["held"].string == "quiet_hours" ? " (held by quiet hours)" : "")
        }
        o["outcome"] = .string(outcome)
        return o
    }

    /// The chain as readable lines, for `Explain.text`.
    static func followUpLines(_ report: JSONValue) -> [String] {
        guard case .object(let chain)? = report["follow_ups"] else { return [] }
        var lines = ["", "follow-ups: \(chain["note"]?.stringValue ?? "")"]
        if case .array(let steps)? = chain["steps"] {
            for s in steps {
                lines.append("  step \(s["step"]?.intValue ?? 0), loop \(s["loop"]?.intValue ?? 0): "
                    + "\(s["channel"]?.stringValue ?? "?") to \(s["recipient_user_id"]?.stringValue ?? "?") "
                    + "(\(s["to"]?.stringValue ?? "?"), until \(s["until"]?.stringValue ?? "?")): "
                    + (s["outcome"]?.stringValue ?? ""))
            }
        }
        return lines
    }
}
