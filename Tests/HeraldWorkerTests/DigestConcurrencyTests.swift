import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Four passes and a follower at once, while rows join on eight connections: each window is sent once,
/// with exactly the rows it holds, and every row is in exactly one digest.
@Suite struct DigestConcurrencyTests {
    typealias Pass = ProviderPass

    /// The pushes Expo was asked for, by notification id: how many times, and the count each said.
    static func pushes(_ expo: FakeExpo) throws -> [String: [Int]] {
        var by: [String: [Int]] = [:]
        for m in try DigestPassTests.messages(expo) {
            guard let id = m["data"]?["notification_id"]?.stringValue else { continue }
            by[id, default: []].append(m["data"]?["digest_count"]?.intValue ?? -1)
        }
        return by
    }

    /// Rows written concurrently before the window's end, then four passes and a follower at once
    /// at its end: one window, one digest row, one push saying 40.
    @Test func concurrentRowsMakeOneDigestThatFourPassesAndAFollowerSendOnce() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try DigestPassTests.person(db)
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 600, 100)")
            try db.execute("update notification_types set daily_cap = 1000, min_spacing_seconds = null, per_minute_cap = 1000")
            let start = Date().addingTimeInterval(-3600)
            let url = tdb.url
            inParallel(8) { n in
                guard let c = try? PGConnection(url, applicationName: "herald-tests") else { return }
                defer { c.close() }
                for i in 0..<5 { try? DigestTests.item(c, user, at: start.addingTimeInterval(Double(i)), key: "w\(n)-\(i)") }
            }
            #expect(try DigestTests.windows(db, user).map(\.count) == [40])

            let env = p.settings.merging(["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "debug"]) { $1 }
            let follower = try FollowerProcess(env: env, deadline: 120)
            let settings = p.settings
            inParallel(4) { _ in _ = Pass.pass(url, settings, now: Pass.now(), drain: true) }
            #expect(try Self.waitUntilSent(db, user), "\(follower.logText)")
            kill(follower.process.processIdentifier, SIGTERM)
            _ = follower.finish(seconds: 15)
            let pushes = try Self.pushes(p.expo)
            #expect(pushes.count == 1 && pushes.values.first == [40], "\(pushes)")
        }
    }

    /// Rows join on eight connections while four passes and a follower send the digests that are due
    /// (each window full at five rows): every row is in one digest, each digest went once, and the
    /// count it said is the count its window holds (no row joined a digest a pass had taken).
    @Test func rowsJoiningWhilePassesSendAreEachInOneDigestSentOnce() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try DigestPassTests.person(db)
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 600, 5)")
            try db.execute("update notification_types set daily_cap = 1000, min_spacing_seconds = null, per_minute_cap = 1000")
            let start = Date().addingTimeInterval(-3600)
            let env = p.settings.merging(["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "debug"]) { $1 }
            let follower = try FollowerProcess(env: env, deadline: 120)
            let url = tdb.url
            let settings = p.settings
            inParallel(12) { n in
                if n < 4 {
                    for _ in 0..<3 { _ = Pass.pass(url, settings, now: Pass.now(), drain: true) }
                    return
                }
                guard let c = try? PGConnection(url, applicationName: "herald-tests") else { return }
                defer { c.close() }
                for i in 0..<8 { try? DigestTests.item(c, user, at: start.addingTimeInterval(Double(i)), key: "w\(n)-\(i)") }
            }
            #expect(try Self.waitUntilSent(db, user), "\(follower.logText)")
            kill(follower.process.processIdentifier, SIGTERM)
            _ = follower.finish(seconds: 15)

            let f = Fixtures(db: db)
            #expect(try f.count("select count(*) from notification_digest_items") == 64)
            #expect(try f.count("select count(distinct item_id) from notification_digest_items") == 64)
            #expect(try f.count("select coalesce(sum(item_count), 0)::int from notification_digests") == 64)
            #expect(try f.count("select count(*) from notification_digests where closed_at is null") <= 1)
            let held = Dictionary(uniqueKeysWithValues: try db.query("""
                select queue_id, item_count from notification_digests where user_id = \(user)
                """).compactMap { r in r["queue_id"].uuid.map { ($0.uuidString.lowercased(), r["item_count"].int ?? 0) } })
            let pushes = try Self.pushes(p.expo)
            #expect(Set(pushes.keys) == Set(held.keys), "every digest sent")
            for (id, counts) in pushes {
                #expect(counts == [held[id] ?? -1], "digest \(id) sent once with the count its window holds")
            }
        }
    }

    /// Waits (at most 60 s) until every digest row of `user` is sent.
    static func waitUntilSent(_ db: PGConnection, _ user: UUID) throws -> Bool {
        let end = Date().addingTimeInterval(60)
        while Date() < end {
            let waiting = try Fixtures(db: db).count("""
                select count(*) from notification_digests d join notification_queue q on q.id = d.queue_id
                 where d.user_id = \(user) and q.status <> 'sent'
                """)
            if waiting == 0 { return true }
            usleep(50_000)
        }
        return false
    }
}
