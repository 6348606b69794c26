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
        try withProviderLab(.apns, .fcm) { lab in
            let now = Self.now()
            let user = try lab.f.profile()
            let alive = Self.apnsToken()
            let unregistered = Self.apnsToken()
            let bad = Self.apnsToken()
            let gone = "fcm-gone-" + UUID().uuidString
            let aliveId = try lab.f.token(user, alive)
            let unregisteredId = try lab.f.token(user, unregistered)
            let badId = try lab.f.token(user, bad)
            let goneId = try lab.f.token(user, gone, provider: "fcm")
            lab.apns.script(unregistered, .unregistered(timestamp: 1_700_000_000_000))
            lab.apns.script(bad, .error(400, "BadDeviceToken"))
            lab.fcm.script(gone, .fcmError(404, status: "NOT_FOUND", errorCode: "UNREGISTERED",
                                       message: "Requested entity was not found."))
            let first = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let settings = lab.base.merging(try lab.settings(lab.apns)) { $1 }.merging(try lab.settings(lab.fcm)) { $1 }

            let (s1, c1) = Self.pass(lab.url, settings, now: now)
            #expect(c1 == .ok, "\(s1.error ?? "")")
            // One destination got it: the row is sent, the dead ones recorded as such.
            #expect(try lab.f.row(first)["status"].string == "sent")
            let ds = try Self.deliveries(lab.db, first)
            #expect(ds.count == 4)
            let outcome = Dictionary(ds.map { ($0["device_token_id"].uuid!, $0) }, uniquingKeysWith: { a, _ in a })
            #expect(outcome[aliveId]?["outcome"].string == "delivered")
            #expect(outcome[unregisteredId]?["outcome"].string == "destination_invalid")
            #expect(outcome[unregisteredId]?["provider_error_code"].string == "Unregistered")
            #expect(outcome[badId]?["outcome"].string == "destination_invalid")
            #expect(outcome[badId]?["provider_error_code"].string == "BadDeviceToken")
            #expect(outcome[goneId]?["outcome"].string == "destination_invalid")
            #expect(outcome[goneId]?["provider_error_code"].string == "UNREGISTERED")

            #expect(try Self.token(lab.db, aliveId)["is_active"].bool == true)
            for (tokenId, reason) in [(unregisteredId, "Unregistered"), (badId, "BadDeviceToken"), (goneId, "UNREGISTERED")] {
                let t = try Self.token(lab.db, tokenId)
                #expect(t["is_active"].bool == false)
                #expect(t["deactivated_at"].date != nil)
                #expect((t["deactivated_reason"].string ?? "").contains(reason),
                        "reason for \(reason): \(t["deactivated_reason"].string ?? "nil")")
            }
            #expect(Self.paths(lab.apns.requests).sorted() == [alive, unregistered, bad].sorted())
            let fcmSends = lab.fcm.requests.filter { $0.path.hasSuffix("/messages:send") }
            #expect(fcmSends.count == 1)

            // A later row reaches only the live token: the dead ones are never tried again.
            let second = try lab.f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(50))
            let (s2, c2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(60))
            #expect(c2 == .ok, "\(s2.error ?? "")")
            #expect(try lab.f.row(second)["status"].string == "sent")
            #expect(Self.paths(Array(lab.apns.requests.dropFirst(3))) == [alive])
            #expect(lab.fcm.requests.filter { $0.path.hasSuffix("/messages:send") }.count == 1)
            let later = try Self.deliveries(lab.db, second)
            #expect(later.count == 1)
            #expect(later.first?["device_token_id"].uuid == aliveId)

            // A retried row does not go back to a token that died on its first attempt.
            let mixed = try lab.f.profile()
            let dying = Self.apnsToken(), busy = Self.apnsToken()
            let dyingId = try lab.f.token(mixed, dying)
            try lab.f.token(mixed, busy)
            lab.apns.script(dying, .error(400, "BadDeviceToken"))
            lab.apns.script(busy, .error(503, "ServiceUnavailable", headers: [("retry-after", "10")]))
            let retried = try lab.f.enqueue(to: mixed, channel: "push", at: now.addingTimeInterval(65))
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(70))
            #expect(try lab.f.row(retried)["status"].string == "failed")
            #expect(try lab.f.row(retried)["permanent"].bool == false)
            #expect(try Self.token(lab.db, dyingId)["is_active"].bool == false)
            lab.apns.script(busy, .raw(FakeResponse(status: 200)))
            let mark = lab.apns.requests.count
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(100))
            #expect(try lab.f.row(retried)["status"].string == "sent")
            #expect(Self.paths(Array(lab.apns.requests.dropFirst(mark))) == [busy])

            // A row for a recipient whose only tokens are dead has no destination at all.
            let lonely = try lab.f.profile()
            let deadOnly = Self.apnsToken()
            try lab.f.token(lonely, deadOnly)
            lab.apns.script(deadOnly, .unregistered(timestamp: 1_700_000_000_000))
            let third = try lab.f.enqueue(to: lonely, channel: "push", at: now.addingTimeInterval(110))
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(120))
            var row = try lab.f.row(third)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == true)
            let fourth = try lab.f.enqueue(to: lonely, channel: "push", kind: "reminder", at: now.addingTimeInterval(170))
            let before = lab.apns.requests.count
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(180))
            row = try lab.f.row(fourth)
            #expect(row["status"].string == "skipped")
            #expect(row["skip_reason"].string == "no_destination")
            #expect(lab.apns.requests.count == before)
        }
    }

    /// APNs 410 says when it found the token invalid: a token registered again after that stays active,
    /// one registered before is deactivated.
    @Test func anAPNsTokenRegisteredAfterItsUnregisteredTimestampStaysActive() throws {
        try withProviderLab(.apns) { lab in
            let now = Self.now()
            let invalidAt = Int((now.timeIntervalSince1970 - 3600) * 1000)
            let user = try lab.f.profile()
            let fresh = Self.apnsToken(), stale = Self.apnsToken()
            let freshId = try lab.f.token(user, fresh), staleId = try lab.f.token(user, stale)
            try lab.db.execute("update device_tokens set last_used_at = now() - interval '30 minutes' where id = \(freshId)")
            try lab.db.execute("update device_tokens set last_used_at = now() - interval '2 hours' where id = \(staleId)")
            for t in [fresh, stale] {
                lab.apns.script(t, .raw(.json(410, #"{"reason":"Unregistered","timestamp":\#(invalidAt)}"#)))
            }
            _ = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            _ = Self.pass(lab.url, lab.settings, now: now)
            #expect(try Self.token(lab.db, freshId)["is_active"].bool == true)
            #expect(try Self.token(lab.db, staleId)["is_active"].bool == false)
        }
    }
}
