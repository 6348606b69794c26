import Foundation
import HeraldCore
import HeraldPostgres
import HeraldWorker

/// Section 10: what a follow-up policy (sql/057) costs per notification, beside the enqueue and the
/// send it adds to, and that a type without one costs nothing more. 5,000 in-app notifications on the
/// log adapter, drained by one pass at batch 1,000:
///   - enqueue, one statement: a type without a policy, and one with (the same lookup of the type);
///   - the send of a type without a policy, with the follow-up triggers and with them disabled (the
///     floor: what the send cost before), and the floor a second time (how far two runs of the same
///     work lie apart: the noise the difference is read against);
///   - the send of a type with a one-step policy: each send enqueues its chain;
///   - the step at its time: the claim's check of each step (unread, so it is sent) beside the plain send;
///   - reads, in µs of the server backend's CPU: one that cancels a pending step, one of a type using
///     none of follow-ups, quiet once read and digests, and the same with the read trigger disabled,
///     twice, these three in chunks taking turns.
/// Five rounds, the ways taking turns; a way's figure is its median round.
extension Bench {
    /// Each way's rounds, in µs per notification.
    struct FollowUpCosts {
        var rounds: [String: [Double]] = [:]
        mutating func add(_ way: String, _ value: Double) { rounds[way, default: []].append(value) }
        func median(_ way: String) -> Double {
            guard let sorted = rounds[way]?.sorted(), !sorted.isEmpty else { return .nan }
            return sorted[sorted.count / 2]
        }
        /// `way` against `floor`, read against how far `floor` and `again` (the floor's second run) lie apart.
        func verdict(_ way: String, _ floor: String, _ again: String) -> String {
            let extra = median(way) / median(floor) - 1, noise = abs(median(again) / median(floor) - 1)
            return String(format: "(%+.1f%%; the same way twice: %.1f%% apart; aim: within noise: %@)",
                          extra * 100, noise * 100, extra <= noise ? "met" : "not met")
        }
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
        for round in 0..<5 {
            c.add("enqueue plain", perRow(try enqueueFollowUpBench(db, kind: "system", at: now), rows))
            c.add("enqueue followed", perRow(try enqueueFollowUpBench(db, kind: "bench_followed", at: now), rows))
            let sends = [("send", true), ("send floor", false), ("send floor again", false)]
            for (way, on) in round % 2 == 0 ? sends : sends.reversed() {
                try setFollowUpTriggers(db, on)
                _ = try enqueueFollowUpBench(db, kind: "system", at: now)
                let (s, t) = try pass(settings, drainOptions(batch: 1_000, now: now))
                c.add(way, perRow(t, s.sent))
            }
            try setFollowUpTriggers(db, true)
            _ = try enqueueFollowUpBench(db, kind: "bench_followed", at: now)
            let (s, t) = try pass(settings, drainOptions(batch: 1_000, now: now))
            c.add("send followed", perRow(t, s.sent))
            let (steps, st) = try pass(settings, drainOptions(batch: 1_000, now: now.addingTimeInterval(660)))
            c.add("steps", perRow(st, steps.sent))
            try measureReads(db, now: now, reversed: round % 2 == 1, into: &c, settings: settings)
        }
        followUpLines(c)
    }

    func followUpLines(_ c: FollowUpCosts) {
        func f(_ way: String, _ digits: Int = 1) -> String { String(format: "%.\(digits)f µs", c.median(way)) }
        func delta(_ way: String, _ base: String) -> Double { c.median(way) - c.median(base) }
        Bench.line("enqueue, a type with a policy", f("enqueue followed", 2), "without a policy", f("enqueue plain", 2),
                   String(format: "(%+.0f%%)", (c.median("enqueue followed") / c.median("enqueue plain") - 1) * 100))
        Bench.line("send, a type without a policy", f("send"), "follow-up triggers off", f("send floor"),
                   c.verdict("send", "send floor", "send floor again"))
        Bench.line("send, a type with a policy", f("send followed"), "without a policy", f("send"),
                   String(format: "(%+.1f µs: its chain enqueued)", delta("send followed", "send")))
        Bench.line("a step at its time (checked, sent)", f("steps"), "a plain send", f("send"),
                   String(format: "(%+.1f µs: the claim's check)", delta("steps", "send")))
        Bench.line("a read cancelling its step (CPU)", f("read cancel"), "a read without a chain", f("read"),
                   String(format: "(%+.1f µs)", delta("read cancel", "read")))
        Bench.line("a read, a type using none (CPU)", f("read"), "without the read trigger", f("read floor"),
                   c.verdict("read", "read floor", "read floor again"))
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

    /// The trigger a read fires (the follow-up cancel, the read-elsewhere withdrawal and a digest's
    /// read) there or not: dropped, and made again from its own `definition`. Not disabled: the server
    /// still fetches each updated row's old version for a disabled AFTER row trigger (0.3 µs a read in
    /// a loop of one-row updates), which would flatter the trigger.
    func setReadTriggers(_ db: PGConnection, _ on: Bool, definition: String) throws {
        try db.execute("drop trigger if exists herald_inbox_read on inbox")
        if on { try db.execute(SQL(unescaped: definition)) }
    }

    /// `pg_get_triggerdef` of the read trigger: what makes it again.
    func readTriggerDefinition(_ db: PGConnection) throws -> String {
        guard let definition = try db.query("""
            select pg_get_triggerdef(oid) as def from pg_trigger
             where tgrelid = 'public.inbox'::regclass and tgname = 'herald_inbox_read'
            """).first?["def"].string else { throw BenchError("no herald_inbox_read trigger") }
        return definition
    }

    /// Reads one per transaction, as the app marks them, commits not waited for, in µs of the server
    /// backend's CPU per read (the disk's and the client's time are the same for each): 1,000 of
    /// notifications whose step is pending (each read cancels it); then, of one queue of a type using
    /// none of follow-ups, quiet once read and digests, 1,000 each with the read trigger, without it, and
    /// without it again, in chunks of 100 taking turns (a neighbour's burst falls on all three alike).
    func measureReads(_ db: PGConnection, now: Date, reversed: Bool, into c: inout FollowUpCosts,
                      settings: Settings) throws {
        let pid = try db.query("select pg_backend_pid() as pid").first?["pid"].int ?? 0
        try db.execute("set synchronous_commit = off")
        defer { _ = try? db.execute("reset synchronous_commit") }
        let definition = try readTriggerDefinition(db)
        defer { _ = try? setReadTriggers(db, true, definition: definition) }
        func entries(_ kind: String, _ n: Int) throws -> [UUID] {
            _ = try enqueueFollowUpBench(db, kind: kind, at: now)
            _ = try pass(settings, drainOptions(batch: 1_000, now: now))
            // The chains' rows counted, as autovacuum would after such a burst: planned from the
            // statistics of the queue before its chains, a read's cancelling statement took 2 ms.
            try db.execute("analyze notification_queue")
            return try db.query("select id from inbox order by id limit \(n)").compactMap { $0["id"].uuid }
        }
        func read(_ ids: ArraySlice<UUID>) throws -> Double {
            let start = Self.backendCPU(pid)
            for id in ids { try db.execute("update inbox set is_read = true, read_at = now() where id = \(id)") }
            return Self.backendCPU(pid) - start
        }
        try setReadTriggers(db, true, definition: definition)
        let cancelling = try entries("bench_followed", 1_000)
        c.add("read cancel", try read(cancelling[...]) / Double(max(cancelling.count, 1)) * 1e6)
        let ways = [("read", true), ("read floor", false), ("read floor again", false)]
        let plain = try entries("system", 3_000), chunk = 100
        var cpu: [String: Double] = [:]
        for (i, start) in stride(from: 0, to: plain.count - chunk * ways.count + 1, by: chunk * ways.count).enumerated() {
            let order = (i + (reversed ? 1 : 0)) % 2 == 0 ? ways : ways.reversed()
            for (j, (way, trigger)) in order.enumerated() {
                try setReadTriggers(db, trigger, definition: definition)
                cpu[way, default: 0] += try read(plain[(start + j * chunk)..<(start + (j + 1) * chunk)])
            }
        }
        for (way, _) in ways { c.add(way, (cpu[way] ?? 0) / Double(plain.count / ways.count) * 1e6) }
    }
}
