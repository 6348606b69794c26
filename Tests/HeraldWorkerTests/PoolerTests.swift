import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// Real passes through a PgBouncer in transaction pooling mode: whichever server connection each
/// transaction lands on, no session state is relied on — every row is delivered exactly once and the
/// per-recipient rate limits hold across concurrent passes. Without PgBouncer the suite is reported
/// as skipped.
@Suite(.enabled(if: PgBouncer.binary != nil, "needs pgbouncer (scripts/deps.sh installs it)"))
struct PoolerTests {
    @Test func concurrentPassesThroughPgBouncerInTransactionMode() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            // One server connection for both passes: every transaction of one may follow one of the other's
            // on the same server session.
            let bouncer = try PgBouncer(database: tdb.url, poolSize: 1)
            defer { bouncer.stop() }
            let server = try FakeHTTPServer(threads: 2) { _ in FakeResponse(status: 200, delay: 0.005) }
            defer { server.shutdown() }

            // 400 recipients with one row each, and 40 with four reminders: the hourly spacing of a type
            // lets one of those four go now, whichever pass claims them.
            var single: [UUID] = [], busy: [UUID] = []
            for _ in 0..<400 { single.append(try f.profile()) }
            for _ in 0..<40 { busy.append(try f.profile()) }
            try f.enqueueMany(400, to: single, channel: "webhook", at: seedInstant.addingTimeInterval(-60))
            try f.enqueueMany(160, to: busy, channel: "webhook", kind: "reminder", at: seedInstant.addingTimeInterval(-60))

            let env = ["DATABASE_URL": bouncer.url(tdb.url), "WEBHOOK_URL": server.baseURL + "/hooks",
                       "WEBHOOK_SECRET": WebhookDeliveryTests.secret]
            let args = ["run", "--now", ISO8601.string(seedInstant), "--drain", "--batch-size", "25", "--quiet"]
            let passes = try (0..<2).map { _ in try HeraldBinary.start(args, env: env) }
            for p in passes { p.waitUntilExit() }
            #expect(passes.allSatisfy { $0.terminationStatus == 0 }, "pgbouncer log: \(bouncer.log.suffix(2000))")

            let ids = server.requests.compactMap { r in r.headers.first { $0.0 == "webhook-id" }?.1 }
            #expect(ids.count == 440)
            #expect(Set(ids).count == ids.count, "a row was delivered twice")
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 440)
            #expect(try f.count("""
                select count(*)::int from (select recipient_user_id from notification_queue where status = 'sent'
                                            group by 1 having count(*) > 1) x
                """) == 0, "a recipient got two notifications of one kind within the hour")
            #expect(try f.count("""
                select count(*)::int from notification_queue where status = 'pending' and run_after > \(seedInstant)
                """) == 120)
            #expect(try f.count("select count(distinct pass_id)::int from notification_trail where event in ('sent', 'deferred')") == 2,
                    "both passes should have claimed rows")
        }
    }

    /// A follower through PgBouncer in transaction mode: its LISTEN connection would be tied to no
    /// server session between transactions, so no notification can reach it; it finds that out (its
    /// probe does not come back), says so in its log, polls, and still delivers what comes due.
    @Test func aFollowerThroughPgBouncerPollsAndDelivers() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let bouncer = try PgBouncer(database: tdb.url, poolSize: 2)
            defer { bouncer.stop() }
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<5 { recipients.append(try f.profile()) }
            let follower = try FollowerProcess(
                env: FollowerProcess.env(bouncer.url(tdb.url), receiver: server, ["HERALD_FOLLOW_POLL_MS": "100"]), deadline: 120)
            #expect(follower.waitForLog(#""msg":"following the queue""#), "\(follower.logText)")
            #expect(follower.logText.contains(#""mode":"poll""#), "\(follower.logText)")

            try f.enqueueMany(5, to: recipients, channel: "webhook", at: Date())
            #expect(try f.waitFor("select count(*)::int from notification_queue where status = 'sent'", atLeast: 5))
            #expect(follower.process.isRunning, "sent by the follower, before its deadline")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(follower.process.terminationStatus == 3, "\(follower.logText) pgbouncer log: \(bouncer.log.suffix(2000))")
            #expect(summary["follow"]?["mode"]?.stringValue == "poll")
            #expect(summary["follow"]?["notified"]?.intValue == 0)
            #expect(summary["sent"]?.intValue == 5)
            #expect(server.requests.count == 5)
        }
    }

    /// A streamed query through PgBouncer in transaction mode, with the pass's timeouts: it is one
    /// transaction, so the server connection it lands on is its own until the end; a closure that
    /// throws cancels it (PgBouncer passes the cancel on), and the next transaction, on whichever
    /// server connection, works. The patterns phase reads its metrics this way on a second
    /// connection, both through one server connection.
    @Test func streamsAndThePatternsPhaseThroughPgBouncer() throws {
        try withTestDatabase { tdb in
            let bouncer = try PgBouncer(database: tdb.url, poolSize: 1)
            defer { bouncer.stop() }
            let conn = try PGConnection(bouncer.url(tdb.url))
            try conn.setTimeouts(statement: 30_000, lock: 10_000, idleInTransaction: 60_000)
            #expect(try conn.stream("select g from generate_series(1, \(50_000)) g") { _ in } == 50_000)
            struct Stop: Error {}
            var rows = 0
            #expect(throws: Stop.self) {
                try conn.stream("select generate_series(1, 2000000000) as g") { _ in
                    rows += 1
                    if rows == 100 { throw Stop() }
                }
            }
            #expect(try conn.query("select 1 + \(1) as v")[0]["v"].int == 2, "pgbouncer log: \(bouncer.log.suffix(2000))")
            let other = try PGConnection(bouncer.url(tdb.url))
            #expect(try other.query("select 3 as v")[0]["v"].int == 3)

            // The patterns phase, its metrics read ahead on a second connection through the same pooler.
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            for i in 0..<9 {
                let member = UUID(), admin = UUID(), family = UUID()
                try f.profile(member, timezone: "UTC", push: false, inApp: false)
                try f.profile(admin, timezone: "UTC", push: true, inApp: true, championEmail: false)
                try db.execute("""
                    insert into family_members (family_id, user_id, role) values (\(family), \(member), 'member'), (\(family), \(admin), 'admin')
                    """)
                try db.execute("""
                    insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes)
                    select \(member), '2026-01-20'::date - g, case when g < \(3 + i) then 150 else 440 + (g % 5) * 5 end
                      from generate_series(0, 40) g
                    """)
            }
            // Chunks of 2 users: the first read alone, the other four chunks in one read ahead.
            let (summary, code) = Worker(url: bouncer.url(tdb.url)).run(now: instant("2026-01-21T12:00:00Z")) {
                $0.phases = [.patterns]
                $0.patternChunk = 2
            }
            #expect(code == .ok, "\(summary.error ?? "") pgbouncer log: \(bouncer.log.suffix(2000))")
            #expect(summary.generated[.patternsUsers] == 9)
            #expect(try f.count("select count(*)::int from pattern_alert_state") == 9)
            #expect(try f.count("select count(*)::int from notification_queue where kind = 'pattern_alert'") == 18)
        }
    }
}
