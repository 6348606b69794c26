import Foundation
import HeraldCore
import HeraldPostgres

/// `herald status`: the queue at a glance — depth by status and channel, the oldest due row, stuck
/// leases, rows failed for good, and the last passes. A claimed row (pending under a lease) is shown
/// as `processing`.
public enum Status {
    public static func report(_ db: PGConnection, now: Date = Date()) throws -> JSONValue {
        var depth: [String: JSONValue] = [:]
        for row in try db.query("""
            select \(Lease.shownStatus) as status, q.channel, count(*)::int as n from notification_queue q group by 1, 2
            """) {
            let status = row["status"].string ?? "?"
            var byChannel = depth[status]?.objectValue ?? [:]
            byChannel[row["channel"].string ?? "?"] = .number(Double(row["n"].int ?? 0))
            depth[status] = .object(byChannel)
        }
        let due = try db.query("""
            select count(*)::int as n, min(run_after) as oldest from notification_queue q
             where \(QueueStore.due(now))
            """).first
        let paused = try QueueStore(db: db, passId: "status").countPaused(now: now)
        let pauses = try Operator.pauses(db)
        let scheduled = try db.query("""
            select count(*)::int as n from notification_queue
             where status = 'pending' and run_after > \(now)
            """).first?["n"].int ?? 0
        let stuck = try db.query("""
            select count(*)::int as n, min(q.locked_until) as oldest from notification_queue q
             where \(Lease.expired)
            """).first
        let leased = try db.query("""
            select count(*)::int as n from notification_queue q where \(Lease.live)
            """).first?["n"].int ?? 0
        let dead = try db.query("""
            select count(*)::int as n from notification_queue where status = 'failed' and permanent
            """).first?["n"].int ?? 0
        var passes: [JSONValue] = []
        for row in try db.query("""
            select pass_id, started_at, finished_at, exit_code, summary from herald_passes
             order by started_at desc limit 5
            """) {
            var p: [String: JSONValue] = ["pass_id": .string(row["pass_id"].string ?? "")]
            if let d = row["started_at"].date { p["started_at"] = .string(ISO8601.string(d)) }
            if let d = row["finished_at"].date { p["finished_at"] = .string(ISO8601.string(d)) }
            if let c = row["exit_code"].int { p["exit_code"] = .number(Double(c)) }
            if let s = row["summary"].string, let v = try? JSONValue.parse(s) {
                for key in ["processed", "sent", "skipped", "failed", "deferred", "duration_ms"] {
                    if let x = v[key] { p[key] = x }
                }
            }
            passes.append(.object(p))
        }
        // The queue's hash partitions (sql/017), from the catalog: 1 for the plain table.
        let partitions = try db.query("""
            select greatest(count(*), 1)::int as n from pg_inherits where inhparent = 'notification_queue'::regclass
            """).first?["n"].int ?? 1
        var out: [String: JSONValue] = [
            "queue_partitions": .number(Double(partitions)),
            "depth": .object(depth),
            "due": .number(Double(due?["n"].int ?? 0)),
            "scheduled": .number(Double(scheduled)),
            "leased": .number(Double(leased)),
            "stuck_leases": .number(Double(stuck?["n"].int ?? 0)),
            "dead": .number(Double(dead)),
            "paused": .number(Double(paused.values.reduce(0, +))),
            "pauses": .array(pauses),
            "last_passes": .array(passes),
        ]
        if let oldest = due?["oldest"].date {
            out["oldest_due"] = .string(ISO8601.string(oldest))
            out["oldest_due_age_s"] = .number(now.timeIntervalSince(oldest).rounded())
        }
        if let oldest = stuck?["oldest"].date { out["oldest_stuck_lease"] = .string(ISO8601.string(oldest)) }
        return .object(out)
    }

    /// The report as a few readable lines.
    public static func text(_ r: JSONValue) -> String {
        var lines: [String] = []
        let statuses = ["pending", "processing", "sent", "failed", "skipped"]
        let depth = r["depth"]?.objectValue ?? [:]
        let channels = Set(depth.values.flatMap { $0.objectValue?.keys.map { $0 } ?? [] }).sorted()
        let header = ["channel"] + statuses
        var table = [header]
        for c in channels {
            table.append([c] + statuses.map { depth[$0]?[c]?.intValue.map(String.init) ?? "0" })
        }
        let widths = header.indices.map { i in table.map { $0[i].count }.max() ?? 0 }
        for row in table {
            lines.append(row.enumerated().map { i, cell in
                i == 0 ? cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                       : String(repeating: " ", count: widths[i] - cell.count) + cell
            }.joined(separator: "  "))
        }
        if channels.isEmpty { lines.append("the queue is empty") }
        lines.append("")
        lines.append("due now: \(r["due"]?.intValue ?? 0)"
            + (r["oldest_due"].map { ", oldest since \($0.stringValue ?? "") (\(r["oldest_due_age_s"]?.intValue ?? 0) s)" } ?? ""))
        lines.append("scheduled later: \(r["scheduled"]?.intValue ?? 0)")
        lines.append("leased: \(r["leased"]?.intValue ?? 0); stuck leases (expired): \(r["stuck_leases"]?.intValue ?? 0)")
        lines.append("failed for good: \(r["dead"]?.intValue ?? 0)")
        if let n = r["queue_partitions"]?.intValue, n > 1 {
            lines.append("queue partitions: \(n) (herald run --shard K/\(n) works in one)")
        }
        if case .array(let pauses)? = r["pauses"], !pauses.isEmpty {
            lines.append("paused (due rows held back: \(r["paused"]?.intValue ?? 0)):")
            for p in pauses {
                let scope = [p["channel"]?.stringValue.map { "channel \($0)" }, p["kind"]?.stringValue.map { "kind \($0)" }]
                    .compactMap { $0 }.joined(separator: ", ")
                lines.append("  \(scope) since \(p["paused_at"]?.stringValue ?? "?") by \(p["paused_by"]?.stringValue ?? "?")"
                    + (p["reason"]?.stringValue.map { ": \($0)" } ?? ""))
            }
        }
        if case .array(let passes)? = r["last_passes"], !passes.isEmpty {
            lines.append("")
            lines.append("last passes:")
            for p in passes {
                let counts = ["processed", "sent", "skipped", "failed", "deferred"]
                    .map { "\($0) \(p[$0]?.intValue ?? 0)" }.joined(separator: ", ")
                lines.append("  \(p["started_at"]?.stringValue ?? "?")  \(p["pass_id"]?.stringValue ?? "")  exit \(p["exit_code"]?.intValue.map(String.init) ?? "-")  \(counts)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
