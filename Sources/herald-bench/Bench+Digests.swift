import Foundation
import HeraldPostgres

/// Section 11: what a digest join costs per notification (sql/059), beside the plain enqueue it adds to,
/// and what a type that is not digested costs beside the enqueue as released before follow-ups, quiet
/// once read and digests. The figure is the CPU time of the server's backend that runs the inserts (its
/// `/proc/<pid>/schedstat`, in ns), per row: without the client's, the network's or the disk's time,
/// which none of this changes. Ways of enqueueing take turns, nine rounds, the median of each:
/// - an undigested type today, and as released (migration 051's type check and entries trigger, read
///   from the migration, with the queue's links as the foreign keys they were then), one row per
///   transaction and 20,000 rows in a statement;
/// - the released way a second time: how far two runs of the same work lie apart (the noise the
///   difference is read against);
/// - the released triggers without the keys: today's enqueue but for the marks the three features
///   added (what those cost, beside what the keys cost);
/// - a digested type (a fixed window of an hour, at most 100 items): rows one per transaction and
///   20,000 in a statement, over 200 people, so that most rows join a window another opened.
extension Bench {
    /// The type check and the entries trigger as migration 051 released them, word for word.
    func releasedEnqueueTriggers() throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("sql/051_functions_resolve_in_catalog.sql"), encoding: .utf8)
        return try ["herald_queue_type", "herald_queue_entries"].map { name in
            guard let start = text.range(of: "CREATE OR REPLACE FUNCTION public.\(name)()\n"),
                  let end = text.range(of: "\n$function$;\n", range: start.upperBound..<text.endIndex) else {
                throw BenchError("sql/051 has no \(name)")
            }
            return String(text[start.lowerBound..<end.upperBound])
        }.joined(separator: "\n")
    }

    /// The queue's links as foreign keys, as they were until migration 079 (on tables just emptied).
    static let linkKeys = noLinkKeys + """

        alter table public.push_receipts add constraint push_receipts_queue_id_fkey
          foreign key (queue_id) references public.notification_queue (id) on delete cascade;
        alter table public.inbox add constraint inbox_queue_id_fkey
          foreign key (queue_id) references public.notification_queue (id) on delete set null;
        """
    static let noLinkKeys = """
        alter table public.push_receipts drop constraint if exists push_receipts_queue_id_fkey;
        alter table public.inbox drop constraint if exists inbox_queue_id_fkey;
        """

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

    /// A way of enqueueing: its name, the triggers it runs and whether the queue's links are keys.
    struct EnqueueWay { let name: String, triggers: String, keys: Bool, kind: String }

    func digests() throws {
        print("11. digests: a digest join per notification, beside the plain enqueue (µs of the backend's CPU per row)")
        let url = try freshDatabase("herald_bench_digests")
        let db = try PGConnection(url)
        defer { db.close() }
        let pid = try db.query("select pg_backend_pid() as pid").first?["pid"].int ?? 0
        try db.execute("set synchronous_commit = off")
        let today = try ["public.herald_queue_type()", "public.herald_queue_entries()"].map {
            try db.query("select pg_get_functiondef(\($0)::regprocedure) as d").first?["d"].string ?? ""
        }.joined(separator: ";\n")
        let released = try releasedEnqueueTriggers()
        try db.execute("""
            insert into user_profiles (user_id, timezone)
            select md5('digest' || g)::uuid, 'Europe/London' from generate_series(0, 199) g
            """)
        try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 3600, 100)")
        let singles = 4_000, bulk = 20_000
        var cost = DigestCost(), windows = 0
        func cpu(_ n: Int, _ work: () throws -> Void) throws -> Double {
            let start = Self.backendCPU(pid)
            try work()
            return (Self.backendCPU(pid) - start) / Double(n) * 1e6
        }
        let ways = [EnqueueWay(name: "plain", triggers: today, keys: false, kind: "system"),
                    EnqueueWay(name: "released", triggers: released, keys: true, kind: "system"),
                    EnqueueWay(name: "digested", triggers: today, keys: false, kind: "message"),
                    EnqueueWay(name: "released again", triggers: released, keys: true, kind: "system"),
                    EnqueueWay(name: "unmarked", triggers: released, keys: false, kind: "system")]
        func clear(_ way: EnqueueWay) throws {
            try db.execute("truncate notification_queue, inbox, push_receipts, notification_digests, notification_digest_items cascade")
            try db.executeScript(way.keys ? Self.linkKeys : Self.noLinkKeys)
        }
        for round in 0..<9 {
            for way in round % 2 == 0 ? ways : ways.reversed() {
                try db.executeScript(way.triggers)
                try clear(way)
                cost.single[way.name, default: []].append(try cpu(singles) { try digestRows(db, singles, kind: way.kind) })
                try clear(way)
                cost.bulk[way.name, default: []].append(try cpu(bulk) { try db.execute("""
                    insert into notification_queue (recipient_user_id, channel, kind, payload, scheduled_at, run_after)
                    select md5('digest' || g % 200)::uuid, 'push', \(way.kind), jsonb_build_object('title', 'Hello ' || g),
                           now() + g * interval '1 ms', now() + g * interval '1 ms'
                      from generate_series(1, \(bulk)) g
                    """) })
                if way.name == "digested" {
                    windows = try db.query("select count(*)::int as n from notification_digests").first?["n"].int ?? 0
                }
            }
        }
        try db.executeScript(today)
        try clear(ways[0])
        digestLines(cost, bulk: bulk, windows: windows)
    }

    func digestLines(_ cost: DigestCost, bulk: Int, windows: Int) {
        func f(_ v: Double?) -> String { String(format: "%.1f µs/row", v ?? .nan) }
        let m = { (d: [String: [Double]], k: String) in DigestCost.median(d, k) ?? .nan }
        func verdict(_ d: [String: [Double]]) -> String {
            "(" + WithinNoise(way: d["plain"] ?? [], floor: d["released"] ?? [], again: d["released again"] ?? []).text + ")"
        }
        // What the marks cost on their own: today's enqueue beside the released triggers without the keys.
        func marks(_ d: [String: [Double]]) -> String {
            let marks = WithinNoise.extra(way: d["plain"] ?? [], floor: d["unmarked"] ?? [])
            let keys = WithinNoise.extra(way: d["released"] ?? [], floor: d["unmarked"] ?? [])
            return String(format: "(%+.1f%%; the keys dropped by migration 079: %+.1f%%)", marks * 100, keys * 100)
        }
        Bench.line("undigested type, a row per tx", f(m(cost.single, "plain")), "as released before them",
                   f(m(cost.single, "released")), verdict(cost.single))
        Bench.line("  its marks alone", f(m(cost.single, "plain")), "the released triggers, no keys",
                   f(m(cost.single, "unmarked")), marks(cost.single))
        Bench.line("undigested type, \(bulk) in a stmt", f(m(cost.bulk, "plain")), "as released before them",
                   f(m(cost.bulk, "released")), verdict(cost.bulk))
        Bench.line("  its marks alone", f(m(cost.bulk, "plain")), "the released triggers, no keys",
                   f(m(cost.bulk, "unmarked")), marks(cost.bulk))
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
