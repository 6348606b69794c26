import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A backend's own notification, sent with `send_notification` while a follower runs, reaches the
/// Expo fake (HTTP/2 over TLS) without waiting for a pass: woken by the insert's notification where
/// LISTEN works, and by its poll through PgBouncer in transaction mode. No latency is timed here (that
/// is `make bench`'s): each test says what alone could have sent the push.
@Suite struct FollowSendTests {
    /// A person with one Expo token.
    static func person(_ db: PGConnection) throws -> UUID {
        let user = UUID()
        try db.execute("insert into user_profiles (user_id, locale, notify_push) values (\(user), 'en', true)")
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider)
            values (\(user), \("ExponentPushToken[\(UUID().uuidString.prefix(22))]"), 'android', 'expo')
            """)
        return user
    }

    /// Waits until the Expo fake has been asked to deliver notification `id`; its message, or nil
    /// after `seconds`.
    static func expoMessage(_ expo: FakeExpo, id: String, seconds: Double = 30) throws -> JSONValue? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            for request in expo.sendRequests {
                if case .array(let list) = try JSONValue.parse(Data(request.body)),
                   let message = list.first(where: { $0["data"]?["notification_id"]?.stringValue == id }) {
                    return message
                }
            }
            usleep(10_000)
        }
        return nil
    }

    /// With a follower that polls once a day, the send's own notification is what wakes it: the push
    /// reaches Expo with the sender's type and id while the follower runs, and the follower counts it.
    @Test func aSendReachesExpoWhileAFollowerListens() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Self.person(db)
            let env = p.settings.merging(["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "debug"]) { $1 }
                .merging(FollowTests.pollOnceADay) { $1 }
            let follower = try FollowerProcess(env: env, deadline: 120)
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            let id = try SendPushTests.send(db, SendNotificationTests.request(user, [:]))
            let message = try #require(try Self.expoMessage(p.expo, id: id), "\(follower.logText)")
            #expect(follower.process.isRunning, "sent by the follower, before its deadline")
            #expect(message["data"]?["notification_type"]?.stringValue == "assignment")
            #expect(message["priority"]?.stringValue == "high")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(summary["follow"]?["mode"]?.stringValue == "listen")
            #expect((summary["follow"]?["notified"]?.intValue ?? 0) >= 1)
            #expect(summary["sent"]?.intValue == 1)
            #expect(try Fixtures(db: db).count("select count(*)::int from notification_queue where status = 'sent'") == 1)
        }
    }

    /// A follower decides each round with the types `notification_types` holds then: a type an app
    /// adds with one insert while the follower runs is delivered at its next round, not failed as
    /// unknown.
    @Test func aTypeAddedWhileAFollowerRunsIsDeliveredAtItsNextRound() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Self.person(db)
            let env = p.settings.merging(["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "debug"]) { $1 }
            let follower = try FollowerProcess(env: env, deadline: 120)
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            try db.execute("insert into notification_types (type) values ('appointment')")
            let id = try SendPushTests.send(db, SendNotificationTests.request(user, ["notification_type": "appointment"]))
            let message = try #require(try Self.expoMessage(p.expo, id: id), "\(follower.logText)")
            #expect(message["data"]?["notification_type"]?.stringValue == "appointment")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(summary["sent"]?.intValue == 1)
            #expect(try Fixtures(db: db).row(try #require(UUID(uuidString: id)))["status"].string == "sent")
        }
    }

    /// Through PgBouncer in transaction mode no notification can reach the follower: it says it polls
    /// (every 500 ms, the default), and the send still reaches Expo while it runs.
    @Test(.enabled(if: PgBouncer.binary != nil, "needs pgbouncer (scripts/deps.sh installs it)"))
    func aSendReachesExpoThroughPgBouncerByPolling() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let bouncer = try PgBouncer(database: tdb.url, poolSize: 2)
            defer { bouncer.stop() }
            let user = try Self.person(db)
            let env = p.settings.merging(["DATABASE_URL": bouncer.url(tdb.url), "HERALD_LOG_LEVEL": "debug"]) { $1 }
            let follower = try FollowerProcess(env: env, deadline: 120)
            #expect(follower.waitForLog(#""msg":"following the queue""#), "\(follower.logText)")
            #expect(follower.logText.contains(#""mode":"poll""#), "\(follower.logText)")

            let id = try SendPushTests.send(db, SendNotificationTests.request(user, [:]))
            #expect(try Self.expoMessage(p.expo, id: id) != nil, "\(follower.logText)")
            #expect(follower.process.isRunning, "sent by the follower, before its deadline")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(summary["follow"]?["mode"]?.stringValue == "poll")
            #expect(summary["sent"]?.intValue == 1)
        }
    }
}
