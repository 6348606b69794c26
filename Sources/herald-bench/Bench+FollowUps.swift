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
                c.add(way, try cpuPerRow(url, settings, now: now))
            }
            try setFollowUpTriggers(db, true)
            _ = try enqueueFollowUpBench(db, kind: "bench_followed", at: now)
            c.add("send followed", try cpuPerRow(url, settings, now: now))
            c.add("steps", try cpuPerRow(url, settings, now: now.addingTimeInterval(660)))
            try measureReads(db, now: now, reversed: round % 2 == 1, into: &c, settings: settings)
        }
        followUpLines(c)
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
        Bench.line("send, a type without a policy (CPU)", f("send"), "follow-up triggers off", f("send floor"),
                   c.verdict("send", "send floor", "send floor again"))
        Bench.line("send, a type with a policy (CPU)", f("send followed"), "without a policy", f("send"),
                   String(format: "(%+.1f µs: its chain enqueued)", delta("send followed", "send")))
        Bench.line("a step at its time (CPU)", f("steps"), "a plain send", f("send"),
                   String(format: "(%+.1f µs: the claim's check)", delta("steps", "send")))
        Bench.line("a read cancelling its step (CPU)", f("read cancel"), "a read without a chain", f("read"),
                   String(format: "(%+.1f µs)", delta("read cancel", "read")))
        Bench.line("a read, a type using none (CPU)", f("read"), "the read as before them", f("read floor"),
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
    }

    /// The app's read as it was released before follow-ups, quiet once read and digests (migration 051's
    /// `mark_notifications_read`, word for word but its name): it marks the entries and answers, and
    /// calls nothing else. A read of a plain type is measured against it.
    static let readFloor: SQL = """
        CREATE OR REPLACE FUNCTION public.herald_bench_read_floor(notification_ids uuid[]) RETURNS jsonb
            LANGUAGE plpgsql SECURITY DEFINER
            SET search_path TO 'pg_catalog', 'pg_temp'
            AS $$
        declare
          caller uuid := auth.uid();
          at timestamptz := now();
          ids uuid[];
        begin
          if caller is null then
            perform public.herald_raise('unauthorized', 'no caller: sign in first');
          end if;
          if notification_ids is null then
            perform public.herald_raise('validation_error', 'notification_ids is required');
          end if;
          if cardinality(notification_ids) > 1000 then
            perform public.herald_raise('validation_error', format('notification_ids names %s notifications; at most 1000 a call',
                                                            cardinality(notification_ids)));
          end if;
          with named as (
            select public.herald_entry_of(caller, n) as id from unnest(notification_ids) n
          ), updated as (
            update public.inbox i set is_read = true, read_at = at
             where i.id in (select id from named) and i.user_id = caller and not i.is_read
            returning i.id
          )
          select coalesce(array_agg(id), '{}') into ids from updated;
          return jsonb_build_object('updated_count', cardinality(ids), 'notification_ids', to_jsonb(ids),
                                    'read_at', /* public.herald_ms(at) */ ((extract(epoch from (at)::timestamp with time zone) * 1000)::bigint));
        end
        $$;
        """

    /// Reads one per transaction, as the app marks them (`mark_notifications_read` as the signed-in
    /// person), commits not waited for, in µs of the server backend's CPU per read (the disk's and the
    /// client's time are the same for each): 1,000 of notifications whose step is pending (each read
    /// cancels it); then, of one queue of a type using none of follow-ups, quiet once read and digests,
    /// 1,600 each through the app's read, through the read as it was before them
    /// (`herald_bench_read_floor`), and through that again, in chunks of 20 taking turns (a
    /// neighbour's burst falls on all three alike).
    func measureReads(_ db: PGConnection, now: Date, reversed: Bool, into c: inout FollowUpCosts,
                      settings: Settings) throws {
        let pid = try db.query("select pg_backend_pid() as pid").first?["pid"].int ?? 0
        try db.execute("set synchronous_commit = off")
        defer { _ = try? db.execute("reset synchronous_commit") }
        try db.execute(Self.readFloor)
        func entries(_ kind: String, _ n: Int) throws -> [(id: UUID, user: UUID)] {
            _ = try enqueueFollowUpBench(db, kind: kind, at: now)
            _ = try pass(settings, drainOptions(batch: 1_000, now: now))
            // The chains' rows counted, as autovacuum would after such a burst: planned from the
            // statistics of the queue before its chains, a read's cancelling statement took 2 ms.
            try db.execute("analyze notification_queue")
            return try db.query("select id, user_id from inbox order by id limit \(n)").compactMap { row in
                guard let id = row["id"].uuid, let user = row["user_id"].uuid else { return nil }
                return (id, user)
            }
        }
        func read(_ entries: ArraySlice<(id: UUID, user: UUID)>, through rpc: String) throws -> Double {
            let start = Self.backendCPU(pid)
            for entry in entries {
                try db.transaction { db in
                    let claims = JSONValue.object(["sub": .string(entry.user.uuidString.lowercased()), "role": "authenticated"]).jsonText
                    _ = try db.query("select set_config('request.jwt.claims', \(claims), true)")
                    _ = try db.query("select \(unescaped: rpc)(\([entry.id])::uuid[])")
                }
            }
            return Self.backendCPU(pid) - start
        }
        let cancelling = try entries("bench_followed", 1_000)
        c.add("read cancel", try read(cancelling[...], through: "mark_notifications_read") / Double(max(cancelling.count, 1)) * 1e6)
        let ways = [("read", "mark_notifications_read"), ("read floor", "herald_bench_read_floor"),
                    ("read floor again", "herald_bench_read_floor")]
        let plain = try entries("system", 4_800), chunk = 20
        // Each function's first call in the session compiles it and plans its statements: made before
        // the measured reads, with an empty list.
        if let someone = plain.first?.user {
            for (_, rpc) in ways {
                try db.transaction { db in
                    let claims = JSONValue.object(["sub": .string(someone.uuidString.lowercased())]).jsonText
                    _ = try db.query("select set_config('request.jwt.claims', \(claims), true)")
                    _ = try db.query("select \(unescaped: rpc)('{}'::uuid[])")
                }
            }
        }
        var cpu: [String: Double] = [:]
        for (i, start) in stride(from: 0, to: plain.count - chunk * ways.count + 1, by: chunk * ways.count).enumerated() {
            let order = (i + (reversed ? 1 : 0)) % 2 == 0 ? ways : ways.reversed()
            for (j, (way, rpc)) in order.enumerated() {
                cpu[way, default: 0] += try read(plain[(start + j * chunk)..<(start + (j + 1) * chunk)], through: rpc)
            }
        }
        for (way, _) in ways { c.add(way, (cpu[way] ?? 0) / Double(plain.count / ways.count) * 1e6) }
    }
}
