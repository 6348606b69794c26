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
///   - reads, in µs of the server backend's CPU (`Bench+Reads.swift`): one that cancels a pending
///     step; one of a type using none of follow-ups, quiet once read and digests, beside the read as
///     released before them (twice: the noise) and beside today's read without its test of the entries
///     that do more, these four in chunks taking turns.
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
        /// `way` against `floor`, read against the floor run twice (`again`).
        func verdict(_ way: String, _ floor: String, _ again: String) -> WithinNoise {
            WithinNoise(way: rounds[way] ?? [], floor: rounds[floor] ?? [], again: rounds[again] ?? [])
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
                c.add(way, try cpuPerRow(url, settings, now: now))
            }
            try setFollowUpTriggers(db, true)
            _ = try enqueueFollowUpBench(db, kind: "bench_followed", at: now)
            c.add("send followed", try cpuPerRow(url, settings, now: now))
            c.add("steps", try cpuPerRow(url, settings, now: now.addingTimeInterval(660)))
            try measureRecordUpdate(db, now: now, reversed: round % 2 == 1, into: &c)
            try measureReads(db, now: now, reversed: round % 2 == 1, into: &c, settings: settings)
        }
        followUpLines(c)
    }

    /// The one thing a send of a plain type does for follow-ups: the queue's update from pending to
    /// sent, as the record makes it, tests the follow-up trigger's WHEN clause on each row. 5,000 rows a
    /// statement, in µs of the backend's CPU a row, with the trigger and without it (twice: the noise),
    /// five blocks taking turns, the rows made pending again and the table vacuumed outside the
    /// measured statements. (A whole pass's CPU moves between runs by more than the clause costs.)
    func measureRecordUpdate(_ db: PGConnection, now: Date, reversed: Bool, into c: inout FollowUpCosts) throws {
        let pid = try db.query("select pg_backend_pid() as pid").first?["pid"].int ?? 0
        _ = try enqueueFollowUpBench(db, kind: "system", at: now)
        let ways = [("record", true), ("record floor", false), ("record floor again", false)]
        for block in 0..<5 {
            for (way, on) in (block % 2 == 0) != reversed ? ways : ways.reversed() {
                try setFollowUpTriggers(db, on)
                try db.execute("update notification_queue set status = 'pending', sent_at = null where status = 'sent'")
                try db.execute("vacuum notification_queue")
                let start = Self.backendCPU(pid)
                try db.execute("""
                    update notification_queue set status = 'sent', sent_at = \(now), locked_until = null, locked_by = null
                     where status = 'pending'
                    """)
                c.add(way, (Self.backendCPU(pid) - start) / 5_000 * 1e6)
            }
        }
        try setFollowUpTriggers(db, true)
    }

    /// A pass's CPU per notification it sent, µs: this process's and the server's client backends'
    /// (the wall time of a pass of 5,000 moves with the machine's neighbours by more than a trigger's
    /// test costs).
    func cpuPerRow(_ url: String, _ settings: Settings, now: Date) throws -> Double {
        let cpu = try CPUMeter(url)
        let (s, _) = try pass(settings, drainOptions(batch: 1_000, now: now))
        let account = cpu.per(s.sent)
        return account.client + account.backends
    }

    func followUpLines(_ c: FollowUpCosts) {
        func f(_ way: String, _ digits: Int = 1) -> String { String(format: "%.\(digits)f µs", c.median(way)) }
        func delta(_ way: String, _ base: String) -> Double { c.median(way) - c.median(base) }
        Bench.line("enqueue, a type with a policy", f("enqueue followed", 2), "without a policy", f("enqueue plain", 2),
                   String(format: "(%+.0f%%)", (c.median("enqueue followed") / c.median("enqueue plain") - 1) * 100))
        let send = c.verdict("send", "send floor", "send floor again")
        Bench.line("send, a type without a policy (CPU)", f("send"), "follow-up triggers off", f("send floor"),
                   String(format: "(%+.1f%%; the floor run twice: ±%.1f%%: a pass's CPU, run to run)",
                          send.extra * 100, send.band * 100))
        Bench.line("its record's update of the queue", f("record", 3), "follow-up triggers off", f("record floor", 3),
                   recordVerdict(c))
        Bench.line("send, a type with a policy (CPU)", f("send followed"), "without a policy", f("send"),
                   String(format: "(%+.1f µs: its chain enqueued)", delta("send followed", "send")))
        Bench.line("a step at its time (CPU)", f("steps"), "a plain send", f("send"),
                   String(format: "(%+.1f µs: the claim's check)", delta("steps", "send")))
        Bench.line("a read cancelling its step (CPU)", f("read cancel"), "a read without a chain", f("read"),
                   String(format: "(%+.1f µs)", delta("read cancel", "read")))
        Bench.line("a read, a type using none (CPU)", f("read"), "the read as before them", f("read floor"),
                   "(" + c.verdict("read", "read floor", "read floor again").text + ")")
        Bench.line("the read's test of its entries (CPU)", f("read"), "today's read without it", f("read untested"),
                   String(format: "(%+.1f µs: what tells the entries that do more)", delta("read", "read untested")))
        print("")
    }

    /// What the follow-up trigger adds to the record's update, µs a row (with its own noise band), and
    /// as a share of a plain send's CPU: within noise when that share is no more than the band of the
    /// send's own figure (`WithinNoise`), which cannot tell a smaller cost from none.
    func recordVerdict(_ c: FollowUpCosts) -> String {
        let own = c.verdict("record", "record floor", "record floor again")
        let extra = own.extra * c.median("record floor")  // the paired rounds' mean, in µs
        let share = extra / c.median("send"), send = c.verdict("send", "send floor", "send floor again")
        return String(format: "(%+.3f µs a row, %+.1f%% ±%.1f%%: %+.2f%% of a send, whose figure resolves ±%.1f%%; aim: within noise: %@)",
                      extra, own.extra * 100, own.band * 100, share * 100, send.band * 100, share <= send.band ? "met" : "not met")
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
    }
}
