import Foundation
import HeraldCore
import HeraldPostgres

/// `herald explain ID`: why did this person get, or not get, this notification? The row, its decision
/// trail (every claim, skip, deferral, send and failure with the inputs that decided it), and each
/// delivery attempt.
public enum Explain {
    public struct NotFound: Error, CustomStringConvertible {
        public var description: String
    }

    public static func report(_ db: PGConnection, id: UUID) throws -> JSONValue {
        let (events, deliveries) = try trail(db, id: id)
        guard let row = try db.query("""
            select id, recipient_user_id, member_user_id, alert_state_id, channel, kind, severity, priority,
                   \(Lease.shownStatus) as status, attempts, max_attempts, permanent, last_error, skip_reason, scheduled_at, run_after,
                   locked_until, locked_by, dedupe_key, provider_message_id, sent_at, created_at, updated_at,
                   escalated_from
              from notification_queue q where id = \(id)
            """).first else {
            // Pruned from the queue: the trail outlives it, and its `pruned` event says what it was.
            guard !events.isEmpty else {
                throw NotFound(description: "no notification_queue row and no trail has id \(id.uuidString.lowercased())")
            }
            var r: [String: JSONValue] = ["id": .string(id.uuidString.lowercased()), "pruned": true]
            if let pruned = events.last(where: { $0["event"]?.stringValue == "pruned" }), case .object(let d)? = pruned["details"] {
                r.merge(d) { _, snapshot in snapshot }
            }
            return ["row": .object(r), "events": .array(events), "deliveries": .array(deliveries)]
        }
        var r: [String: JSONValue] = [:]
        for key in ["id", "recipient_user_id", "member_user_id", "alert_state_id", "channel", "kind", "severity",
                    "priority", "status", "last_error", "skip_reason", "locked_by", "dedupe_key",
                    "provider_message_id", "escalated_from"] {
            if let s = row[key].string { r[key] = .string(s) }
        }
        for key in ["attempts", "max_attempts"] { if let n = row[key].int { r[key] = .number(Double(n)) } }
        r["permanent"] = .bool(row["permanent"].bool ?? false)
        for key in ["scheduled_at", "run_after", "locked_until", "sent_at", "created_at", "updated_at"] {
            if let d = row[key].date { r[key] = .string(ISO8601.string(d)) }
        }

        // The escalation chain onwards: the rows this one was escalated to, with what became of them.
        var escalations: [JSONValue] = []
        for e in try db.query("""
            select id, channel, \(Lease.shownStatus) as status, skip_reason from notification_queue q
             where escalated_from = \(id) order by created_at
            """) {
            var o: [String: JSONValue] = ["id": .string(e["id"].uuid?.lowercased ?? ""),
                                          "channel": .string(e["channel"].string ?? ""),
                                          "status": .string(e["status"].string ?? "")]
            if let reason = e["skip_reason"].string { o["skip_reason"] = .string(reason) }
            escalations.append(.object(o))
        }
        var report: [String: JSONValue] = ["row": .object(r), "events": .array(events), "deliveries": .array(deliveries),
                                           "escalations": .array(escalations)]
        report["follow_ups"] = try followUps(db, id: id)
        return .object(report)
    }

    /// The row's events and delivery attempts, in order: they are kept after the row is pruned. The
    /// events are the trail's (`notification_trail`): those of `notification_events`, and the
    /// decisions of sends, which their delivery rows carry.
    static func trail(_ db: PGConnection, id: UUID) throws -> (events: [JSONValue], deliveries: [JSONValue]) {
        var events: [JSONValue] = []
        for e in try db.query("""
            select at, pass_id, event, reason, details::text as details from notification_trail
             where queue_id = \(id) order by at, source, seq
            """) {
            var o: [String: JSONValue] = ["event": .string(e["event"].string ?? "")]
            if let d = e["at"].date { o["at"] = .string(ISO8601.string(d)) }
            if let s = e["pass_id"].string { o["pass_id"] = .string(s) }
            if let s = e["reason"].string { o["reason"] = .string(s) }
            if let s = e["details"].string, let v = try? JSONValue.parse(s), v != .null { o["details"] = v }
            events.append(.object(o))
        }
        var deliveries: [JSONValue] = []
        for d in try db.query("""
            select at, attempt, provider, destination, outcome, http_status, provider_error_code,
                   provider_message_id, error, latency_ms, final_status, final_error_code, final_error, final_at,
                   final_source
              from notification_deliveries where queue_id = \(id) order by id
            """) {
            var o: [String: JSONValue] = [
                "attempt": .number(Double(d["attempt"].int ?? 0)),
                "provider": .string(d["provider"].string ?? ""),
                "destination": .string(Redact.destination(d["destination"].string ?? "")),
                "outcome": .string(d["outcome"].string ?? ""),
            ]
            if let x = d["at"].date { o["at"] = .string(ISO8601.string(x)) }
            if let x = d["http_status"].int { o["http_status"] = .number(Double(x)) }
            if let x = d["provider_error_code"].string { o["provider_error_code"] = .string(x) }
            if let x = d["provider_message_id"].string { o["provider_message_id"] = .string(x) }
            if let x = d["error"].string { o["error"] = .string(x) }
            if let x = d["latency_ms"].int { o["latency_ms"] = .number(Double(x)) }
            // What the provider said later (docs/delivery-truth.md).
            for key in ["final_status", "final_error_code", "final_error", "final_source"] {
                if let x = d[key].string { o[key] = .string(x) }
            }
            if let x = d["final_at"].date { o["final_at"] = .string(ISO8601.string(x)) }
            deliveries.append(.object(o))
        }
        return (events, deliveries)
    }

    /// The trail as readable lines: one per event, with the inputs that decided it.
    public static func text(_ report: JSONValue) -> String {
        let row = report["row"]?.objectValue ?? [:]
        func s(_ k: String) -> String { row[k]?.stringValue ?? "-" }
        var lines = [
            "notification \(s("id"))" + (row["pruned"]?.boolValue == true ? " (pruned from the queue; from its trail)" : ""),
            "  to \(s("recipient_user_id")) by \(s("channel")), kind \(s("kind")), severity \(s("severity")), priority \(s("priority"))",
            "  status \(s("status"))" + (row["skip_reason"].map { " (\($0.stringValue ?? ""))" } ?? "")
                + ", attempts \(s("attempts"))/\(s("max_attempts"))"
                + (row["permanent"]?.boolValue == true ? ", failed for good" : ""),
            "  scheduled \(s("scheduled_at")), run after \(s("run_after"))"
                + (row["sent_at"].map { ", sent \($0.stringValue ?? "")" } ?? ""),
        ]
        if let e = row["last_error"]?.stringValue { lines.append("  last error: \(e)") }
        if let from = row["escalated_from"]?.stringValue { lines.append("  escalated from \(from)") }
        if case .array(let next)? = report["escalations"], !next.isEmpty {
            for e in next {
                lines.append("  escalated to \(e["id"]?.stringValue ?? "?") by \(e["channel"]?.stringValue ?? "?"): "
                    + (e["status"]?.stringValue ?? "?") + (e["skip_reason"]?.stringValue.map { " (\($0))" } ?? ""))
            }
        }
        lines += followUpLines(report)
        lines.append("")
        lines.append("trail:")
        if case .array(let events)? = report["events"] {
            for e in events {
                var line = "  \(e["at"]?.stringValue ?? "?")  \(e["event"]?.stringValue ?? "")"
                if let r = e["reason"]?.stringValue { line += " (\(r))" }
                if let p = e["pass_id"]?.stringValue { line += "  pass \(p)" }
                lines.append(line)
                if case .object(let d)? = e["details"] {
                    for k in d.keys.sorted() {
                        lines.append("      \(k): \(d[k]!.stringValue ?? d[k]!.jsonText)")
                    }
                }
            }
        }
        if case .array(let deliveries)? = report["deliveries"], !deliveries.isEmpty {
            lines.append("")
            lines.append("deliveries:")
            for d in deliveries {
                var line = "  attempt \(d["attempt"]?.intValue ?? 0)  \(d["provider"]?.stringValue ?? "") → \(d["destination"]?.stringValue ?? "")  \(d["outcome"]?.stringValue ?? "")"
                if let h = d["http_status"]?.intValue { line += "  HTTP \(h)" }
                if let c = d["provider_error_code"]?.stringValue { line += "  \(c)" }
                if let m = d["latency_ms"]?.intValue { line += "  \(m) ms" }
                lines.append(line)
                if let e = d["error"]?.stringValue { lines.append("      \(e)") }
                if let f = d["final_status"]?.stringValue {
                    var truth = "      then: \(f)"
                    if let c = d["final_error_code"]?.stringValue { truth += " \(c)" }
                    if let e = d["final_error"]?.stringValue { truth += " — \(e)" }
                    if let src = d["final_source"]?.stringValue { truth += " (\(src)\(d["final_at"]?.stringValue.map { ", \($0)" } ?? ""))" }
                    lines.append(truth)
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}
