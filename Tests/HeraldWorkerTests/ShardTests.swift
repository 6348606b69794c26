import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// The queue in hash partitions by recipient (sql/017) and passes pinned to one (`--shard K/N`).
@Suite struct ShardTests {
    /// Partitions a test database's queue into `n`.
    static func partition(_ f: Fixtures, _ n: Int) throws {
        _ = try f.db.transaction { try $0.query("select herald_partition_queue(\(n))") }
    }

    /// Migration 026: new rows' ids are UUID version 7, ordered by their creation time, on the plain
    /// queue and on its partitions; an id given explicitly is kept.
    @Test func newRowsGetTimeOrderedIdsAndGivenIdsAreKept() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile()
            func idsInCreationOrder() throws -> [UUID] {
                var ids: [UUID] = []
                for _ in 0..<3 {
                    ids.append(try f.enqueue(to: user, at: seedInstant))
                    usleep(2_000)   // another millisecond: the ids' time part must grow
                }
                return ids
            }
            func checkV7(_ ids: [UUID]) {
                for id in ids {
                    let text = id.uuidString.lowercased()
                    #expect(Array(text)[14] == "7", "version of \(text)")
                    #expect("89ab".contains(Array(text)[19]), "variant of \(text)")
                    // The first 48 bits are Unix milliseconds of about now.
                    let ms = Int(text.prefix(8) + text.dropFirst(9).prefix(4), radix: 16) ?? 0
                    #expect(abs(Double(ms) / 1000 - Date().timeIntervalSince1970) < 600, "time of \(text)")
                }
                #expect(ids.map { $0.uuidString.lowercased() } == ids.map { $0.uuidString.lowercased() }.sorted())
            }
            checkV7(try idsInCreationOrder())
            let given = UUID()
            try f.db.execute("""
                insert into notification_queue (id, recipient_user_id, channel, kind, payload)
                values (\(given), \(user), 'in_app', 'system', '{"title":"t","body":"b"}')
                """)
            #expect(try f.count("select count(*)::int from notification_queue where id = \(given)") == 1)

            try Self.partition(f, 4)
            checkV7(try idsInCreationOrder())
            try Self.partition(f, 1)
            checkV7(try idsInCreationOrder())
        }
    }

    @Test func partitioningKeepsRowsRestrictionsAndWhatDeletesDid() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            // 64 recipients: every partition gets some but once in 10^7 runs.
            var users: [UUID] = []
            for _ in 0..<64 { users.append(try f.profile()) }
            try f.enqueueMany(200, to: users, channel: "in_app", at: seedInstant)
            let first = try #require(try f.db.query("select id, recipient_user_id from notification_queue limit 1").first)
            let id = try #require(first["id"].uuid), owner = try #require(first["recipient_user_id"].uuid)
            try f.db.execute("insert into push_receipts (queue_id, ticket_id) values (\(id), 'ticket-1')")

            // Room on each page for a claim's new row versions (migration 027), kept through both rebuilds.
            func fillfactors() throws -> [String] {
                try f.db.query("""
                    select c.relname::text || ':' || coalesce(o.option_value, 'none') as v from pg_class c
                      left join pg_options_to_table(c.reloptions) o on o.option_name = 'fillfactor'
                     where c.relname ~ '^notification_queue(_p[0-9]+)?$' and c.relkind = 'r'
                     order by c.relname
                    """).compactMap { $0["v"].string }
            }
            #expect(try fillfactors() == ["notification_queue:45"])

            try Self.partition(f, 4)
            #expect(try f.count("select herald_queue_partitions()") == 4)
            #expect(try fillfactors() == (0..<4).map { "notification_queue_p\($0):45" })
            // Migration 027 run on a queue partitioned before it: each partition takes the setting.
            for k in 0..<4 { try f.db.execute("alter table notification_queue_p\(unescaped: "\(k)") set (fillfactor = 70)") }
            try f.db.executeScript(String(contentsOf: TestDatabase.migrationsDirectory
                .appendingPathComponent("027_queue_fillfactor.sql"), encoding: .utf8))
            #expect(try fillfactors() == (0..<4).map { "notification_queue_p\($0):45" })
            #expect(try f.count("select count(*)::int from notification_queue") == 200)
            #expect(try f.count("""
                select count(*)::int from pg_inherits where inhparent = 'notification_queue'::regclass
                """) == 4)
            // Each row lives in the partition of its recipient's hash, and every partition got some.
            for k in 0..<4 {
                #expect(try f.count("""
                    select count(*)::int from notification_queue_p\(unescaped: "\(k)")
                     where not satisfies_hash_partition('notification_queue'::regclass, 4, \(k), recipient_user_id)
                    """) == 0)
                #expect(try f.count("select count(*)::int from notification_queue_p\(unescaped: "\(k)")") > 0)
            }
            // Row-level security on the parent and every partition (SecurityTests checks every table).
            #expect(try f.count("""
                select count(*)::int from pg_class where relname like 'notification_queue%' and relkind in ('r', 'p')
                   and relnamespace = 'public'::regnamespace and not relrowsecurity
                """) == 0)
            // The indexes came along, on every partition.
            let parentIndexes = try f.count("select count(*)::int from pg_indexes where tablename = 'notification_queue'")
            #expect(parentIndexes >= 9)
            #expect(try f.count("select count(*)::int from pg_indexes where tablename = 'notification_queue_p3'") == parentIndexes)
            // Dedupe keys are unique per recipient.
            try f.db.execute("update notification_queue set dedupe_key = 'same' where id = \(id)")
            #expect(throws: PGError.self) {
                try f.db.execute("""
                    insert into notification_queue (recipient_user_id, channel, dedupe_key) values (\(owner), 'in_app', 'same')
                    """)
            }
            // A row enqueued ahead is scheduled at its run_after (migration 030's trigger came along).
            let ahead = try #require(try f.db.query("""
                insert into notification_queue (recipient_user_id, channel, run_after) values (\(owner), 'in_app', now() + interval '1 day')
                returning scheduled_at = run_after as same
                """).first)
            #expect(ahead["same"].bool == true)
            // What the delete trigger does (QueueLinksTests): the receipt goes, the inbox entry stays unlinked.
            try f.db.execute("delete from notification_queue where id = \(id)")
            #expect(try f.count("select count(*)::int from push_receipts") == 0)
            #expect(try f.count("select count(*)::int from inbox where queue_id is null") == 1)

            // Back to one table: the rows, and the delete trigger.
            try Self.partition(f, 1)
            #expect(try f.count("select herald_queue_partitions()") == 1)
            #expect(try fillfactors() == ["notification_queue:45"])
            #expect(try f.count("select count(*)::int from notification_queue") == 200)
            #expect(try f.count("""
                select count(*)::int from pg_trigger where tgrelid = 'notification_queue'::regclass and tgname = 'herald_queue_deleted'
                """) == 1)
            #expect(try f.count("select count(*)::int from pg_class where relname = 'notification_queue_p0'") == 0)
        }
    }

    @Test func migrateBuildsThePartitionsAndRunRefusesAMismatchedShard() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let env = ["DATABASE_URL": tdb.url]
            // A plain queue: a pinned pass is refused.
            let refused = try HeraldBinary.start(["run", "--shard", "0/4", "--quiet"], env: env)
            refused.waitUntilExit()
            #expect(refused.terminationStatus == ExitCode.configuration.rawValue)

            let migrate = try HeraldBinary.start(["migrate", "--queue-partitions", "4", "--quiet"], env: env)
            migrate.waitUntilExit()
            #expect(migrate.terminationStatus == 0)
            #expect(try f.count("select herald_queue_partitions()") == 4)
            let status = try Status.report(f.db, now: seedInstant)
            #expect(status["queue_partitions"]?.intValue == 4)
            #expect(Status.text(status).contains("queue partitions: 4"))

            for bad in ["0/3", "4/4"] {
                let p = try HeraldBinary.start(["run", "--shard", bad, "--quiet"], env: env)
                p.waitUntilExit()
                #expect(p.terminationStatus != 0, "--shard \(bad) against 4 partitions")
            }
            let ok = try HeraldBinary.start(["run", "--shard", "3/4", "--quiet", "--only", "deliver"], env: env)
            ok.waitUntilExit()
            #expect(ok.terminationStatus == 0)
        }
    }

    /// A shard the queue's partitions do not match is a configuration error (exit 1); a statement that
    /// fails while the pass reads the partitions is a database error (exit 2), as any other.
    @Test func aFailingPartitionCheckIsADatabaseErrorNotAConfigurationOne() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let shard = try #require(Shard("0/4"))
            let mismatch = Worker(url: tdb.url).run(now: seedInstant) { $0.shard = shard }
            #expect(mismatch.1 == .configuration)

            try f.db.execute("""
                create or replace function herald_queue_partitions() returns int language plpgsql stable
                as $$ begin raise exception 'partitions unreadable'; end $$
                """)
            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant) { $0.shard = shard }
            #expect(code == .database)
            #expect(summary.error?.contains("partitions unreadable") == true, "\(summary.error ?? "")")
            #expect(try f.row(id)["status"].string == "pending")
        }
    }

    /// A pinned pass's claims, context reads and records touch its partition only: the other
    /// partitions' scan and write counters do not move.
    @Test func aPinnedPassTouchesOnePartition() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            var users: [UUID] = []
            for _ in 0..<40 { users.append(try f.profile()) }
            try f.enqueueMany(120, to: users, channel: "in_app", at: seedInstant.addingTimeInterval(-60))
            let pinned = try #require(Shard("1/4"))
            // On a connection of its own, closed, whose statistics (the copy's inserts) are then awaited, so
            // no late report of this test's own work moves a counter below.
            let due: Int
            do {
                let other = try tdb.connect()
                try Self.partition(Fixtures(db: other), 4)
                due = try Fixtures(db: other).count("select count(*)::int from notification_queue_p1")
                other.close()
            }
            #expect(try f.waitFor("""
                select sum(n_tup_ins)::int from pg_stat_user_tables where relname like 'notification_queue_p%'
                """, atLeast: 120))

            func touches() throws -> [String: Int] {
                _ = try f.db.query("select pg_stat_clear_snapshot()")
                var out: [String: Int] = [:]
                for row in try f.db.query("""
                    select relname, (coalesce(seq_scan, 0) + coalesce(idx_scan, 0) + n_tup_ins + n_tup_upd + n_tup_del)::int as n
                      from pg_stat_user_tables where relname like 'notification_queue_p%'
                    """) {
                    out[row["relname"].string ?? "?"] = row["n"].int ?? 0
                }
                return out
            }
            try tdb.setRateLimits()
            let before = try touches()
            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant, batchSize: 25, drain: true) { o in
                o.shard = pinned
                o.phases = [.deliver]
            }
            #expect(code == .ok)
            #expect(summary.sent == due)
            // The pass's connection is closed: its statistics are in.
            var after = try touches()
            for _ in 0..<50 where after["notification_queue_p1"] == before["notification_queue_p1"] {
                usleep(100_000)
                after = try touches()
            }
            #expect(after["notification_queue_p1", default: 0] > before["notification_queue_p1", default: 0])
            for k in [0, 2, 3] {
                #expect(after["notification_queue_p\(k)"] == before["notification_queue_p\(k)"], "partition \(k) was touched")
            }
            #expect(try f.count("select count(*)::int from notification_queue_p1 where status <> 'sent'") == 0)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == due)
        }
    }

    /// One pinned pass per partition and two unpinned passes, as real processes at once on four
    /// partitions: every row delivered exactly once, and each pinned pass claimed in its partition only.
    @Test func pinnedAndUnpinnedPassesDeliverEveryRowExactlyOnce() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer(threads: 2) { _ in FakeResponse(status: 200, delay: 0.002) }
            defer { server.shutdown() }
            // One row per recipient: no rate limit holds any back.
            var users: [UUID] = []
            for _ in 0..<800 { users.append(try f.profile()) }
            try f.enqueueMany(800, to: users, channel: "webhook", at: seedInstant.addingTimeInterval(-60))
            try Self.partition(f, 4)

            let env = ["DATABASE_URL": tdb.url, "WEBHOOK_URL": server.baseURL + "/hooks",
                       "WEBHOOK_SECRET": WebhookDeliveryTests.secret]
            let base = ["run", "--now", ISO8601.string(seedInstant), "--drain", "--batch-size", "20", "--quiet",
                        "--only", "deliver"]
            let shards: [String?] = ["0/4", "1/4", "2/4", "3/4", nil, nil]
            var passes: [(String?, Process, Pipe)] = []
            for shard in shards {
                let out = Pipe()
                let p = try HeraldBinary.start(base + (shard.map { ["--shard", $0] } ?? []), env: env, stdout: out)
                passes.append((shard, p, out))
            }
            var passIds: [(String?, String)] = []
            for (shard, p, out) in passes {
                let data = out.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                #expect(p.terminationStatus == 0, "pass \(shard ?? "unpinned") exited \(p.terminationStatus)")
                let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                passIds.append((shard, json?["pass_id"] as? String ?? "?"))
            }

            let ids = server.requests.compactMap { r in r.headers.first { $0.0 == "webhook-id" }?.1 }
            #expect(ids.count == 800)
            #expect(Set(ids).count == ids.count, "a row was delivered twice")
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 800)
            #expect(try f.count("select count(*)::int from notification_deliveries") == 800)
            for (shard, passId) in passIds {
                guard let shard, let k = Shard(shard)?.index else { continue }
                #expect(try f.count("""
                    select count(*)::int from notification_trail e
                     where e.pass_id = \(passId) and e.event in ('sent', 'deferred', 'skipped', 'failed', 'released')
                       and not exists (select 1 from notification_queue_p\(unescaped: "\(k)") q where q.id = e.queue_id)
                    """) == 0, "pass \(shard) claimed outside its partition")
            }
        }
    }
}
