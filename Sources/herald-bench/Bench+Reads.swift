import Foundation
import HeraldCore
import HeraldPostgres
import HeraldWorker

/// Section 10's reads: what the app's read (`mark_notifications_read`) costs a notification whose type
/// uses none of follow-ups, quiet once read and digests, beside the read as released before them, and
/// beside today's read without its test for the entries that do more (what the test itself costs).
extension Bench {
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

    /// Today's read (`mark_notifications_read` as the database has it, from its `definition`) without
    /// what tells the entries that do more from the others: the second aggregate over the update's
    /// answer, and the block that tests it and calls what those entries do.
    static func readUntested(_ definition: String) throws -> String {
        let name = "FUNCTION public.mark_notifications_read(", aggregate = ", array_agg(id) filter (where read_effects) into ids, effectful"
        guard definition.contains(name), definition.contains(aggregate),
              let start = definition.range(of: "  -- What reading does beyond marking"),
              let end = definition.range(of: "end if;\n", range: start.upperBound..<definition.endIndex) else {
            throw BenchError("the app's read has no test of its entries to take out")
        }
        return definition.replacingCharacters(in: start.lowerBound..<end.upperBound, with: "")
            .replacingOccurrences(of: aggregate, with: " into ids")
            .replacingOccurrences(of: name, with: "FUNCTION public.herald_bench_read_untested(")
    }

    /// The ways a plain read is measured, each a function of the same argument, in the order they start.
    static let readWays = [("read", "mark_notifications_read"), ("read floor", "herald_bench_read_floor"),
                           ("read untested", "herald_bench_read_untested"), ("read floor again", "herald_bench_read_floor")]

    /// Reads one per transaction, as the app marks them (`mark_notifications_read` as the signed-in
    /// person), commits not waited for, in µs of the server backend's CPU per read (the disk's and the
    /// client's time are the same for each): 1,000 of notifications whose step is pending (each read
    /// cancels it); then, of one queue of a type using none of follow-ups, quiet once read and digests,
    /// 1,200 each through the app's read, through the read as released before them
    /// (`herald_bench_read_floor`), through today's read without its test (`herald_bench_read_untested`)
    /// and through the released read again, in chunks of 20 taking turns (a neighbour's burst falls on
    /// all four alike).
    func measureReads(_ db: PGConnection, now: Date, reversed: Bool, into c: inout FollowUpCosts,
                      settings: Settings) throws {
        let pid = try db.query("select pg_backend_pid() as pid").first?["pid"].int ?? 0
        try db.execute("set synchronous_commit = off")
        defer { _ = try? db.execute("reset synchronous_commit") }
        try db.execute(Self.readFloor)
        let today = try db.query("select pg_get_functiondef('public.mark_notifications_read(uuid[])'::regprocedure) as d")
        try db.executeScript(try Self.readUntested(today.first?["d"].string ?? ""))
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
        let ways = Self.readWays
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
