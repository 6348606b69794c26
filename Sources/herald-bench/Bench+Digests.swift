import Foundation
import HeraldPostgres

/// Section 11: what a digest join costs per notification (sql/059), beside the plain enqueue it adds to,
/// and what the digest machinery costs a type that is not digested. The figure is the CPU time of the
/// server's backend that runs the inserts (its `/proc/<pid>/schedstat`, in ns), per row: the cost the
/// machinery adds, without the client's, the network's or the disk's time, which it does not change.
/// Ways of enqueueing take turns, nine rounds, the median of each:
/// - an undigested type with the machinery (the type check's marks, and the entries' trigger testing
///   the mark before it joins) and without it (the type check as it was before digests, the entries'
///   trigger without the join), one row per transaction and 20,000 rows in a statement;
/// - the way without the machinery a second time: how far two runs of the same work lie apart (the
///   noise the undigested difference is read against);
/// - a digested type (a fixed window of an hour, at most 100 items): rows one per transaction and
///   20,000 in a statement, over 200 people, so that most rows join a window another opened.
extension Bench {
    /// The type check as it was before digests (sql/051's form of sql/035's).
    static let typeCheckBeforeDigests = """
        create or replace function public.herald_queue_type() returns trigger
        language plpgsql
        set search_path = pg_catalog, pg_temp
        as $$
        declare
          type_priority text;
        begin
          select t.priority into type_priority from public.notification_types t where t.type = new.kind;
          if not found then
            raise exception 'unknown notification type "%"', left(new.kind, 64) using errcode = '23503';
          end if;
          if new.priority is null then
            new.priority := type_priority;
          end if;
          return new;
        end
        $$
        """

    /// The entries' trigger function `definition` without its digest join: the block from the test of
    /// `herald.digests_to_join` to its `end if;`.
    static func withoutJoin(_ definition: String) throws -> String {
        guard let start = definition.range(of: "if current_setting('herald.digests_to_join', true) = 'on' then"),
              let end = definition.range(of: "end if;", range: start.upperBound..<definition.endIndex) else {
            throw BenchError("the entries' trigger has no digest join to take out")
        }
        return definition.replacingCharacters(in: start.lowerBound..<end.upperBound, with: "")
    }

    /// Each way's rounds, in µs of the backend's CPU per row; a way's figure is its median round.
    struct DigestCost {
        var single: [String: [Double]] = [:], bulk: [String: [Double]] = [:]
        static func median(_ d: [String: [Double]], _ key: String) -> Double? {
            guard let rounds = d[key]?.sorted(), !rounds.isEmpty else { return nil }
            return rounds[rounds.count / 2]
        }
    }

    /// The CPU time, in seconds, the server process `pid` has run.
    static func backendCPU(_ pid: Int) -> Double {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/schedstat", encoding: .utf8)) ?? ""
        return Double(text.split(separator: " ").first.flatMap { Int($0) } ?? 0) / 1e9
    }

    func digests() throws {
        print("11. digests: a digest join per notification, beside the plain enqueue (µs of the backend's CPU per row)")
        let url = try freshDatabase("herald_bench_digests")
        let db = try PGConnection(url)
        defer { db.close() }
        let pid = try db.query("select pg_backend_pid() as pid").first?["pid"].int ?? 0
        try db.execute("set synchronous_commit = off")
        let definition = { (fn: String) in
            try db.query("select pg_get_functiondef(\(fn)::regprocedure) as d").first?["d"].string ?? ""
        }
        let withMachinery = try definition("public.herald_queue_type()") + ";\n" + definition("public.herald_queue_entries()")
        let withoutMachinery = Self.typeCheckBeforeDigests + ";\n" + (try Self.withoutJoin(definition("public.herald_queue_entries()")))
        try db.execute("""
            insert into user_profiles (user_id, timezone)
            select md5('digest' || g)::uuid, 'Europe/London' from generate_series(0, 199) g
            """)
        try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 3600, 100)")
        let singles = 4_000, bulk = 20_000
        var cost = DigestCost(), windows = 0
        func machinery(_ on: Bool) throws {
            try db.executeScript(on ? withMachinery : withoutMachinery)
        }
        func cpu(_ n: Int, _ work: () throws -> Void) throws -> Double {
            let start = Self.backendCPU(pid)
            try work()
            return (Self.backendCPU(pid) - start) / Double(n) * 1e6
        }
        let ways: [(String, Bool, String)] = [("plain", true, "system"), ("bare", false, "system"),
                                              ("digested", true, "message"), ("bare again", false, "system")]
        for round in 0..<9 {
            for (name, on, kind) in round % 2 == 0 ? ways : ways.reversed() {
                try machinery(on)
                try db.execute("truncate notification_queue, notification_digests, notification_digest_items cascade")
                cost.single[name, default: []].append(try cpu(singles) { try digestRows(db, singles, kind: kind) })
                try db.execute("truncate notification_queue, notification_digests, notification_digest_items cascade")
                cost.bulk[name, default: []].append(try cpu(bulk) { try db.execute("""
                    insert into notification_queue (recipient_user_id, channel, kind, payload, scheduled_at, run_after)
                    select md5('digest' || g % 200)::uuid, 'push', \(kind), jsonb_build_object('title', 'Hello ' || g),
                           now() + g * interval '1 ms', now() + g * interval '1 ms'
                      from generate_series(1, \(bulk)) g
                    """) })
                if name == "digested" {
                    windows = try db.query("select count(*)::int as n from notification_digests").first?["n"].int ?? 0
                }
            }
        }
        try machinery(true)
        digestLines(cost, bulk: bulk, windows: windows)
    }

    func digestLines(_ cost: DigestCost, bulk: Int, windows: Int) {
        func f(_ v: Double?) -> String { String(format: "%.1f µs/row", v ?? .nan) }
        let m = { (d: [String: [Double]], k: String) in DigestCost.median(d, k) ?? .nan }
        func verdict(_ d: [String: [Double]]) -> String {
            "(" + WithinNoise(way: d["plain"] ?? [], floor: d["bare"] ?? [], again: d["bare again"] ?? []).text + ")"
        }
        Bench.line("undigested type, a row per tx", f(m(cost.single, "plain")), "without digests",
                   f(m(cost.single, "bare")), verdict(cost.single))
        Bench.line("undigested type, \(bulk) in a stmt", f(m(cost.bulk, "plain")), "without digests",
                   f(m(cost.bulk, "bare")), verdict(cost.bulk))
        Bench.line("digested type, a row per tx", f(m(cost.single, "digested")), "plain enqueue", f(m(cost.single, "plain")),
                   String(format: "(the join: %+.1f µs/row)", m(cost.single, "digested") - m(cost.single, "plain")))
        Bench.line("digested type, \(bulk) in a stmt", f(m(cost.bulk, "digested")), "plain enqueue", f(m(cost.bulk, "plain")),
                   String(format: "(the join: %+.1f µs/row; %d windows)", m(cost.bulk, "digested") - m(cost.bulk, "plain"), windows))
        print("")
    }

    /// `n` rows of `kind` to 200 people, each a transaction of its own.
    func digestRows(_ db: PGConnection, _ n: Int, kind: String) throws {
        for i in 0..<n {
            try db.execute("""
                insert into notification_queue (recipient_user_id, channel, kind, payload)
                values (md5('digest' || \(i % 200))::uuid, 'push', \(kind), '{"title":"Hello"}'::jsonb)
                """)
        }
    }
}
