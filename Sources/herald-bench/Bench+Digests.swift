import Foundation
import HeraldPostgres

/// Section 11: what a digest join costs per notification (sql/059), beside the plain enqueue it adds to,
/// and what the digest machinery costs a type that is not digested. Four ways of enqueueing, taking
/// turns, five rounds, the best of each:
/// - an undigested type with the machinery (the type check's look at `notification_type_digests` and
///   the statement trigger that looks for digested rows) and without it (the trigger disabled and the
///   type check as it was before digests), one row per transaction and 20,000 rows in a statement;
/// - a digested type (a fixed window of an hour, at most 100 items): 2,000 rows one per transaction
///   and 20,000 in a statement, over 200 people, so that most rows join a window another opened.
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

    struct DigestCost {
        var single: [String: Double] = [:], bulk: [String: Double] = [:]
        static func keep(_ d: inout [String: Double], _ key: String, _ value: Double) {
            d[key] = min(d[key] ?? .infinity, value)
        }
    }

    func digests() throws {
        print("11. digests: a digest join per notification, beside the plain enqueue (µs/row)")
        let url = try freshDatabase("herald_bench_digests")
        let db = try PGConnection(url)
        defer { db.close() }
        let withMachinery = try db.query("select pg_get_functiondef('public.herald_queue_type()'::regprocedure) as d")
            .first?["d"].string ?? ""
        try db.execute("""
            insert into user_profiles (user_id, timezone)
            select md5('digest' || g)::uuid, 'Europe/London' from generate_series(0, 199) g
            """)
        try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 3600, 100)")
        let singles = 2_000, bulk = 20_000
        var cost = DigestCost()
        func machinery(_ on: Bool) throws {
            try db.execute("alter table notification_queue \(unescaped: on ? "enable" : "disable") trigger herald_queue_digests")
            try db.executeScript(on ? withMachinery : Self.typeCheckBeforeDigests)
        }
        let ways: [(String, Bool, String)] = [("plain", true, "system"), ("bare", false, "system"), ("digested", true, "message")]
        for round in 0..<5 {
            for (name, on, kind) in round % 2 == 0 ? ways : ways.reversed() {
                try machinery(on)
                try db.execute("truncate notification_queue, notification_digests, notification_digest_items cascade")
                DigestCost.keep(&cost.single, name, try Bench.seconds { try digestRows(db, singles, kind: kind) } / Double(singles) * 1e6)
                try db.execute("truncate notification_queue, notification_digests, notification_digest_items cascade")
                DigestCost.keep(&cost.bulk, name, try Bench.seconds { try db.execute("""
                    insert into notification_queue (recipient_user_id, channel, kind, payload, scheduled_at, run_after)
                    select md5('digest' || g % 200)::uuid, 'push', \(kind), jsonb_build_object('title', 'Hello ' || g),
                           now() + g * interval '1 ms', now() + g * interval '1 ms'
                      from generate_series(1, \(bulk)) g
                    """) } / Double(bulk) * 1e6)
            }
        }
        try machinery(true)
        let windows = try db.query("select count(*)::int as n from notification_digests").first?["n"].int ?? 0
        func f(_ v: Double?) -> String { String(format: "%.1f µs/row", v ?? .nan) }
        func pct(_ a: Double?, _ b: Double?) -> String { String(format: "%+.0f%%", ((a ?? .nan) / (b ?? .nan) - 1) * 100) }
        Bench.line("undigested type, a row per tx", f(cost.single["plain"]), "without digests", f(cost.single["bare"]),
                   "(\(pct(cost.single["plain"], cost.single["bare"])); aim: within noise)")
        Bench.line("undigested type, \(bulk) in a stmt", f(cost.bulk["plain"]), "without digests", f(cost.bulk["bare"]),
                   "(\(pct(cost.bulk["plain"], cost.bulk["bare"])); aim: within noise)")
        Bench.line("digested type, a row per tx", f(cost.single["digested"]), "plain enqueue", f(cost.single["plain"]),
                   String(format: "(the join: %+.1f µs/row)", (cost.single["digested"] ?? 0) - (cost.single["plain"] ?? 0)))
        Bench.line("digested type, \(bulk) in a stmt", f(cost.bulk["digested"]), "plain enqueue", f(cost.bulk["plain"]),
                   String(format: "(the join: %+.1f µs/row; %d windows)", (cost.bulk["digested"] ?? 0) - (cost.bulk["plain"] ?? 0), windows))
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
