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
        if started { steps += try unwritten(db, sources: sources, written: steps) }
        return ["started": .bool(started), "steps": .array(steps),
                "note": .string(started ? "each step fires only while its condition fails at its time"
                                        : "the chain starts when the notification is first sent")]
    }

    /// The steps of the type's policy that the chain has no row for: a `next_admin` step of a member
    /// whose family has no other admin.
    private static func unwritten(_ db: PGConnection, sources: [UUID], written: [JSONValue]) throws -> [JSONValue] {
        let have = Set(written.map { "\($0["step"]?.intValue ?? 0):\($0["loop"]?.intValue ?? 0)" })
        var out: [JSONValue] = []
        for s in try db.query("""
            select l.loop, p.ordinality as step, p.value ->> 'to' as to, p.value ->> 'until' as until
              from notification_types t
              join lateral jsonb_array_elements(t.follow_up -> 'steps') with ordinality p on true
              join lateral generate_series(1, coalesce((t.follow_up ->> 'loops')::int, 1)) l(loop) on true
             where t.type = (select q.kind from notification_queue q where q.id = any(\(sources)::uuid[]) limit 1)
             order by 1, 2
            """) where !have.contains("\(s["step"].int ?? 0):\(s["loop"].int ?? 0)") {
            out.append(["step": .number(Double(s["step"].int ?? 0)), "loop": .number(Double(s["loop"].int ?? 0)),
                        "to": .string(s["to"].string ?? ""), "until": .string(s["until"].string ?? ""),
                        "outcome": .string("not enqueued: no other admin of the family to tell")])
        }
        return out
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
                let whom = s["channel"]?.stringValue.map { "\($0) to \(s["recipient_user_id"]?.stringValue ?? "?") " } ?? ""
                lines.append("  step \(s["step"]?.intValue ?? 0), loop \(s["loop"]?.intValue ?? 0): " + whom
                    + "(\(s["to"]?.stringValue ?? "?"), until \(s["until"]?.stringValue ?? "?")): "
                    + (s["outcome"]?.stringValue ?? ""))
            }
        }
        return lines
    }
}
