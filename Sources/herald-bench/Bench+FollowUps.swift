import Foundation
import HeraldCore
import HeraldPostgres
import HeraldWorker

/// Section 10: what a follow-up policy (sql/057) costs per notification, beside the enqueue and the
/// send it adds to, and that a type without one costs nothing more. 5,000 in-app notifications on the
/// log adapter, drained by one pass at batch 1,000:
///   - enqueue, one statement: a type without a policy, and one with (the same lookup of the type);
///   - the send of a type without a policy, with the follow-up triggers and with them disabled (the
///     floor: what the send cost before), taking turns;
///   - the send of a type with a one-step policy: each send enqueues its chain;
///   - the step at its time: the claim's check of each step (unread, so it is sent) beside the plain send;
///   - the read that cancels a pending step, beside a read of a notification with none.
/// Three rounds, the best of each.
extension Bench {
    struct FollowUpCosts {
        var enqueuePlain = Double.infinity, enqueueFollowed = Double.infinity
        var sendPlain = Double.infinity, sendFloor = Double.infinity, sendFollowed = Double.infinity
        var steps = Double.infinity, readCancel = Double.infinity, readPlain = Double.infinity
        var readFloor = Double.infinity
    }

    static let benchPolicy = #"{"steps": [{"after_seconds": 600, "channels": ["in_app"], "to": "same", "until": "read"}]}"#

    func followUps() throws {
        print("10. follow-ups: 5,000 in-app notifications on the log adapter, one pass at batch 1,000 (µs per notification)")
        let url = try freshDatabase("herald_bench_followups")
        let db = try PGConnection(url)
        defer { db.close() }
        try db.execute("insert into notification_types (type, follow_up) values ('bench_followed', \(Bench.benchPolicy)::jsonb)")
        try db.execute("update notification_types set daily_cap = null, min_spacing_seconds = null, per_minute_cap = null")
        try db.execute("""
            insert into user_profiles (user_id) select md5('follow' || g)::uuid from generate_series(1, 5000) g
            """)
        var c = FollowUpCosts()
        let rows = 5_000, now = Date()
        let settings = Settings(["DATABASE_URL": url, "HERALD_CHANNEL_IN_APP": "log"])
        func perRow(_ seconds: Double, _ n: Int) -> Double { seconds / Double(max(n, 1)) * 1e6 }
        for round in 0..<3 {
            c.enqueuePlain = min(c.enqueuePlain, perRow(try enqueueFollowUpBench(db, kind: "system", at: now), rows))
            c.enqueueFollowed = min(c.enqueueFollowed, perRow(try enqueueFollowUpBench(db, kind: "bench_followed", at: now), rows))
            for on in round % 2 == 0 ? [true, false] : [false, true] {
                try setFollowUpTriggers(db, on)
                _ = try enqueueFollowUpBench(db, kind: "system", at: now)
                let (s, t) = try pass(settings, drainOptions(batch: 1_000, now: now))
                if on { c.sendPlain = min(c.sendPlain, perRow(t, s.sent)) } else { c.sendFloor = min(c.sendFloor, perRow(t, s.sent)) }
            }
            try setFollowUpTriggers(db, true)
            _ = try enqueueFollowUpBench(db, kind: "bench_followed", at: now)
            let (s, t) = try pass(settings, drainOptions(batch: 1_000, now: now))
            c.sendFollowed = min(c.sendFollowed, perRow(t, s.sent))
            let (steps, st) = try pass(settings, drainOptions(batch: 1_000, now: now.addingTimeInterval(660)))
            c.steps = min(c.steps, perRow(st, steps.sent))
            try measureReads(db, now: now, into: &c, settings: settings)
        }
        Bench.line("enqueue, a type with a policy", String(format: "%.2f µs", c.enqueueFollowed), "without a policy",
                   String(format: "%.2f µs", c.enqueuePlain), String(format: "(%+.0f%%)", (c.enqueueFollowed / c.enqueuePlain - 1) * 100))
        Bench.line("send, a type without a policy", String(format: "%.1f µs", c.sendPlain), "follow-up triggers off",
                   String(format: "%.1f µs", c.sendFloor), String(format: "(%+.0f%%; aim: within noise)", (c.sendPlain / c.sendFloor - 1) * 100))
        Bench.line("send, a type with a policy", String(format: "%.1f µs", c.sendFollowed), "without a policy",
                   String(format: "%.1f µs", c.sendPlain), String(format: "(%+.1f µs: its chain enqueued)", c.sendFollowed - c.sendPlain))
        Bench.line("a step at its time (checked, sent)", String(format: "%.1f µs", c.steps), "a plain send",
                   String(format: "%.1f µs", c.sendPlain), String(format: "(%+.1f µs: the claim's check)", c.steps - c.sendPlain))
        Bench.line("a read cancelling its step", String(format: "%.1f µs", c.readCancel), "a read without a chain",
                   String(format: "%.1f µs", c.readPlain), String(format: "(%+.1f µs)", c.readCancel - c.readPlain))
        Bench.line("a read, a type using none", String(format: "%.1f µs", c.readPlain), "the read triggers off",
                   String(format: "%.1f µs", c.readFloor), String(format: "(%+.0f%%; aim: within noise)", (c.readPlain / c.readFloor - 1) * 100))
        print("")
    }

    /// A fresh queue of 5,000 due rows of `kind`, one per person, in one statement; its wall time.
    func enqueueFollowUpBench(_ db: PGConnection, kind: String, at: Date) throws -> Double {
        try db.execute("truncate notification_queue, inbox, notification_events cascade")
        let seconds = try Bench.seconds {
            try db.execute("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, scheduled_at, run_after)
                select md5('follow' || g)::uuid, 'in_app', \(kind), jsonb_build_object('title', 'Hello', 'body', 'Row ' || g),
                       \(at), \(at)
                  from generate_series(1, 5000) g
                """)
        }
        try db.execute("vacuum analyze notification_queue")
        return seconds
    }

    func setFollowUpTriggers(_ db: PGConnection, _ on: Bool) throws {
        let verb = on ? "enable" : "disable"
        try db.execute("alter table notification_queue \(unescaped: verb) trigger herald_follow_up_start")
        try db.execute("alter table inbox \(unescaped: verb) trigger herald_inbox_read")
    }

    /// The trigger a read fires: the follow-up cancel, the read-elsewhere withdrawal and a digest's read.
    func setReadTriggers(_ db: PGConnection, _ on: Bool) throws {
        try db.execute("alter table inbox \(unescaped: on ? "enable" : "disable") trigger herald_inbox_read")
    }

    /// 1,000 reads one per transaction, as the app marks them, commits not waited for (the disk's time is
    /// the same for each): of notifications whose step is pending (each read cancels it), of
    /// notifications of a type using none of follow-ups, quiet once read and digests, and of the same
    /// with the read's triggers (the follow-up cancel, the read-elsewhere withdrawal) disabled.
    func measureReads(_ db: PGConnection, now: Date, into c: inout FollowUpCosts, settings: Settings) throws {
        let n = 1_000
        try db.execute("set synchronous_commit = off")
        defer { _ = try? db.execute("reset synchronous_commit") }
        defer { _ = try? setReadTriggers(db, true) }
        for (kind, triggers) in [("bench_followed", true), ("system", true), ("system", false)] {
            try setReadTriggers(db, triggers)
            _ = try enqueueFollowUpBench(db, kind: kind, at: now)
            _ = try pass(settings, drainOptions(batch: 1_000, now: now))
            // The chains' rows counted, as autovacuum would after such a burst: planned from the
            // statistics of the queue before its chains, a read's cancelling statement took 2 ms.
            try db.execute("analyze notification_queue")
            let ids = try db.query("select id from inbox order by id limit \(n)").compactMap { $0["id"].uuid }
            let seconds = try Bench.seconds {
                for id in ids { try db.execute("update inbox set is_read = true, read_at = now() where id = \(id)") }
            }
            let us = seconds / Double(ids.count) * 1e6
            switch (kind, triggers) {
            case (_, false): c.readFloor = min(c.readFloor, us)
            case ("system", _): c.readPlain = min(c.readPlain, us)
            default: c.readCancel = min(c.readCancel, us)
            }
        }
    }
}
