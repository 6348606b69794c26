import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Real passes through a PgBouncer in transaction pooling mode: whichever server connection each
/// transaction lands on, no session state is relied on — every row is delivered exactly once and the
/// per-recipient rate limits hold across concurrent passes.
@Suite struct PoolerTests {
    @Test func concurrentPassesThroughPgBouncerInTransactionMode() throws {
        guard PgBouncer.binary != nil else {
            print("PoolerTests: skipped, pgbouncer is not installed (scripts/deps.sh installs it)")
            return
        }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let f = Fixtures(db: try tdb.connect())
        // One server connection for both passes: every transaction of one may follow one of the other's
        // on the same server session.
        let bouncer = try PgBouncer(database: tdb.url, poolSize: 1)
        defer { bouncer.stop() }
        let server = try FakeHTTPServer(threads: 2) { _ in FakeResponse(status: 200, delay: 0.005) }
        defer { server.shutdown() }

        // 400 recipients with one row each, and 40 with four rows of one kind: the hourly spacing of a
        // type lets one of those four go now, whichever pass claims them.
        var single: [UUID] = [], busy: [UUID] = []
        for _ in 0..<400 { single.append(try f.profile()) }
        for _ in 0..<40 { busy.append(try f.profile()) }
        try f.enqueueMany(400, to: single, channel: "webhook", at: seedInstant.addingTimeInterval(-60))
        try f.enqueueMany(160, to: busy, channel: "webhook", at: seedInstant.addingTimeInterval(-60))

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
        #expect(try f.count("select count(distinct pass_id)::int from notification_events where event in ('sent', 'deferred')") == 2,
                "both passes should have claimed rows")
    }
}
