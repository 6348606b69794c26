import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Logging
import Testing

/// A pass whose database connection ends connects again (`Reconnector`) and goes on, within
/// HERALD_RECONNECT_SECONDS. With real servers and a failover: DatabaseFailoverTests.
@Suite struct ReconnectTests {
    static func delivery(_ store: QueueStore, reconnectSeconds: Double) throws -> DeliveryPass {
        var log = Logger(label: "herald-reconnect-test")
        log.logLevel = .critical
        var options = PassOptions()
        options.maxBatches = nil
        options.drain = true
        let delivery = DeliveryPass(store: store, routes: try ChannelRoutes.load(Settings([:])), transport: try HTTPTransport(),
                                    options: options, clock: PassClock(now: nil), logger: log,
                                    outbox: try Outbox(path: nil, logger: log), summary: Summary(passId: store.passId))
        delivery.reconnector = Reconnector(seconds: reconnectSeconds, logger: log)
        return delivery
    }

    /// The pass's session ends after a claim that committed but whose rows were never sent (its answer
    /// lost with the connection, or the connection ended before the sends): once connected again, the
    /// drain gives those rows back at once, with a `released` event and no attempt charged, and sends
    /// them, rather than leaving them leased for the lease's ten minutes.
    @Test func rowsClaimedAndNeverSentGoBackAtOnceWhenTheConnectionEnds() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            for _ in 0..<3 { try f.enqueue(to: try f.profile(), channel: "in_app", at: Date().addingTimeInterval(-1)) }
            let conn = try Runner.connect(tdb.url, applicationName: "herald reconnect-test")
            let store = QueueStore(db: conn, passId: "reconnect-\(UUID().uuidString)")
            #expect(try store.claim(limit: 10, now: Date(), channels: [.inApp], leaseSeconds: 600, excluding: []).rows.count == 3)
            let pid = try #require(try conn.query("select pg_backend_pid() as pid")[0]["pid"].int)
            #expect(try db.query("select pg_terminate_backend(\(pid)) as ok")[0]["ok"].bool == true)

            let delivery = try Self.delivery(store, reconnectSeconds: 5)
            try delivery.drainDue()
            #expect(delivery.summary.sent == 3)
            #expect(delivery.reconnector?.reconnects == 1)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent' and attempts = 1") == 3)
            #expect(try f.count("""
                select count(*)::int from notification_events where event = 'released' and reason = 'database_connection_ended'
                   and pass_id = \(store.passId)
                """) == 3)
        }
    }

    /// HERALD_RECONNECT_SECONDS=0: the first connection that ends is the pass's end, as before.
    @Test func withNoReconnectTimeAnEndedConnectionEndsTheDrain() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let conn = try Runner.connect(tdb.url, applicationName: "herald reconnect-test")
            let pid = try #require(try conn.query("select pg_backend_pid() as pid")[0]["pid"].int)
            #expect(try db.query("select pg_terminate_backend(\(pid)) as ok")[0]["ok"].bool == true)
            let delivery = try Self.delivery(QueueStore(db: conn, passId: "reconnect-\(UUID().uuidString)"), reconnectSeconds: 0)
            #expect { try delivery.drainDue() } throws: { ($0 as? PGError)?.isConnectionFailure == true }
            #expect(delivery.reconnector?.reconnects == 0)
        }
    }

    /// HERALD_RECONNECT_SECONDS: 30 by default, from 0 (never) to 600; anything else exits 1 naming it.
    @Test func theReconnectTimeIsCheckedBeforeAnyRowIsTouched() throws {
        func load(_ values: [String: String]) throws -> PassOptions {
            try PassConfig.load(Settings(values.merging(["HERALD_CHANNEL_IN_APP": "log"]) { a, _ in a }),
                                options: PassOptions()).options
        }
        #expect(try load([:]).reconnectSeconds == 30)
        #expect(try load(["HERALD_RECONNECT_SECONDS": "0"]).reconnectSeconds == 0)
        #expect(try load(["HERALD_RECONNECT_SECONDS": "600"]).reconnectSeconds == 600)
        for bad in ["-1", "601", "soon"] {
            #expect { try load(["HERALD_RECONNECT_SECONDS": bad]) } throws: { "\($0)".contains("HERALD_RECONNECT_SECONDS") }
        }
    }
}
