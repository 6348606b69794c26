import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// A token its provider calls dead (APNs Unregistered or BadDeviceToken, FCM UNREGISTERED) is
/// deactivated with the reason and never tried again, unless the app registered it again since.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct DeadTokenPassTests: ProviderPassSuite {

    // MARK: - Dead tokens are deactivated and never tried again

    @Test func deadTokensAreDeactivatedWithTheReason() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let fcm = try FakeFCM(certificates: lab.certificates)
        defer { fcm.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let user = try f.profile()
        let alive = Self.apnsToken()
        let unregistered = Self.apnsToken()
        let bad = Self.apnsToken()
        let gone = "fcm-gone-" + UUID().uuidString
        let aliveId = try f.token(user, alive)
        let unregisteredId = try f.token(user, unregistered)
        let badId = try f.token(user, bad)
        let goneId = try f.token(user, gone, provider: "fcm")
        apns.script(unregistered, .unregistered(timestamp: 1_700_000_000_000))
        apns.script(bad, .error(400, "BadDeviceToken"))
        fcm.script(gone, .fcmError(404, status: "NOT_FOUND", errorCode: "UNREGISTERED",
                                   message: "Requested entity was not found."))
        let first = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        let settings = lab.base.merging(try lab.apns(apns)) { $1 }.merging(try lab.fcm(fcm)) { $1 }

        let (s1, c1) = Self.pass(tdb.url, settings, now: now)
        #expect(c1 == .ok, "\(s1.error ?? "")")
        // One destination got it: the row is sent, the dead ones recorded as such.
        #expect(try f.row(first)["status"].string == "sent")
        let ds = try Self.deliveries(db, first)
        #expect(ds.count == 4)
        let outcome = Dictionary(ds.map { ($0["device_token_id"].uuid!, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(outcome[aliveId]?["outcome"].string == "delivered")
        #expect(outcome[unregisteredId]?["outcome"].string == "destination_invalid")
        #expect(outcome[unregisteredId]?["provider_error_code"].string == "Unregistered")
        #expect(outcome[badId]?["outcome"].string == "destination_invalid")
        #expect(outcome[badId]?["provider_error_code"].string == "BadDeviceToken")
        #expect(outcome[goneId]?["outcome"].string == "destination_invalid")
        #expect(outcome[goneId]?["provider_error_code"].string == "UNREGISTERED")

        #expect(try Self.token(db, aliveId)["is_active"].bool == true)
        for (tokenId, reason) in [(unregisteredId, "Unregistered"), (badId, "BadDeviceToken"), (goneId, "UNREGISTERED")] {
            let t = try Self.token(db, tokenId)
            #expect(t["is_active"].bool == false)
            #expect(t["deactivated_at"].date != nil)
            #expect((t["deactivated_reason"].string ?? "").contains(reason),
                    "reason for \(reason): \(t["deactivated_reason"].string ?? "nil")")
        }
        #expect(Self.paths(apns.requests).sorted() == [alive, unregistered, bad].sorted())
        let fcmSends = fcm.requests.filter { $0.path.hasSuffix("/messages:send") }
        #expect(fcmSends.count == 1)

        // A later row reaches only the live token: the dead ones are never tried again.
        let second = try f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(50))
        let (s2, c2) = Self.pass(tdb.url, settings, now: now.addingTimeInterval(60))
        #expect(c2 == .ok, "\(s2.error ?? "")")
        #expect(try f.row(second)["status"].string == "sent")
        #expect(Self.paths(Array(apns.requests.dropFirst(3))) == [alive])
        #expect(fcm.requests.filter { $0.path.hasSuffix("/messages:send") }.count == 1)
        let later = try Self.deliveries(db, second)
        #expect(later.count == 1)
        #expect(later.first?["device_token_id"].uuid == aliveId)

        // A retried row does not go back to a token that died on its first attempt.
        let mixed = try f.profile()
        let dying = Self.apnsToken(), busy = Self.apnsToken()
        let dyingId = try f.token(mixed, dying)
        try f.token(mixed, busy)
        apns.script(dying, .error(400, "BadDeviceToken"))
        apns.script(busy, .error(503, "ServiceUnavailable", headers: [("retry-after", "10")]))
        let retried = try f.enqueue(to: mixed, channel: "push", at: now.addingTimeInterval(65))
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(70))
        #expect(try f.row(retried)["status"].string == "failed")
        #expect(try f.row(retried)["permanent"].bool == false)
        #expect(try Self.token(db, dyingId)["is_active"].bool == false)
        apns.script(busy, .raw(FakeResponse(status: 200)))
        let mark = apns.requests.count
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(100))
        #expect(try f.row(retried)["status"].string == "sent")
        #expect(Self.paths(Array(apns.requests.dropFirst(mark))) == [busy])

        // A row for a recipient whose only tokens are dead has no destination at all.
        let lonely = try f.profile()
        let deadOnly = Self.apnsToken()
        try f.token(lonely, deadOnly)
        apns.script(deadOnly, .unregistered(timestamp: 1_700_000_000_000))
        let third = try f.enqueue(to: lonely, channel: "push", at: now.addingTimeInterval(110))
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(120))
        var row = try f.row(third)
        #expect(row["status"].string == "failed")
        #expect(row["permanent"].bool == true)
        let fourth = try f.enqueue(to: lonely, channel: "push", kind: "reminder", at: now.addingTimeInterval(170))
        let before = apns.requests.count
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(180))
        row = try f.row(fourth)
        #expect(row["status"].string == "skipped")
        #expect(row["skip_reason"].string == "no_destination")
        #expect(apns.requests.count == before)
    }

    /// APNs 410 says when it found the token invalid: a token registered again after that stays active,
    /// one registered before is deactivated.
    @Test func anAPNsTokenRegisteredAfterItsUnregisteredTimestampStaysActive() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let now = Self.now()
        let invalidAt = Int((now.timeIntervalSince1970 - 3600) * 1000)
        let user = try f.profile()
        let fresh = Self.apnsToken(), stale = Self.apnsToken()
        let freshId = try f.token(user, fresh), staleId = try f.token(user, stale)
        try db.execute("update device_tokens set last_used_at = now() - interval '30 minutes' where id = \(freshId)")
        try db.execute("update device_tokens set last_used_at = now() - interval '2 hours' where id = \(staleId)")
        for t in [fresh, stale] {
            apns.script(t, .raw(.json(410, #"{"reason":"Unregistered","timestamp":\#(invalidAt)}"#)))
        }
        _ = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        _ = Self.pass(tdb.url, lab.base.merging(try lab.apns(apns)) { $1 }, now: now)
        #expect(try Self.token(db, freshId)["is_active"].bool == true)
        #expect(try Self.token(db, staleId)["is_active"].bool == false)
    }
}
