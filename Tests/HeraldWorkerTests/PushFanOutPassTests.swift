import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// A push goes to every active token of its recipient, over APNs, FCM and Expo at once; a retry
/// re-sends only where it was not yet delivered, and a row delivered somewhere is sent, not failed.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct PushFanOutPassTests: ProviderPassSuite {

    // MARK: - Fan-out to three providers

    @Test func pushFansOutToAPNsFCMAndExpo() throws {
        try withProviderLab(.apns, .fcm, .expo) { lab in
            let now = Self.now()
            let user = try lab.f.profile()
            let apnsToken = Self.apnsToken()
            let fcmToken = "fcm-" + UUID().uuidString
            let expoToken = "ExponentPushToken[\(UUID().uuidString.prefix(22))]"
            let apnsId = try lab.f.token(user, apnsToken, provider: "apns")
            let fcmId = try lab.f.token(user, fcmToken, provider: "fcm")
            let expoId = try lab.f.token(user, expoToken, provider: "expo")
            let id = try lab.f.enqueue(to: user, channel: "push", kind: "system", at: now.addingTimeInterval(-30))

            let settings = lab.base.merging(try lab.settings(lab.apns)) { $1 }.merging(try lab.settings(lab.fcm)) { $1 }
                .merging(lab.settings(lab.expo)) { $1 }
            let (summary, code) = Self.pass(lab.url, settings, now: now)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(summary.sent == 1)

            let row = try lab.f.row(id)
            #expect(row["status"].string == "sent")
            let ds = try Self.deliveries(lab.db, id)
            #expect(ds.count == 3)
            #expect(Set(ds.compactMap { $0["provider"].string }) == ["apns", "fcm", "expo"])
            #expect(ds.allSatisfy { $0["outcome"].string == "delivered" })
            let byProvider = Dictionary(ds.map { ($0["provider"].string ?? "?", $0) }, uniquingKeysWith: { a, _ in a })
            #expect(byProvider["apns"]?["device_token_id"].uuid == apnsId)
            #expect(byProvider["fcm"]?["device_token_id"].uuid == fcmId)
            #expect(byProvider["expo"]?["device_token_id"].uuid == expoId)
            #expect(byProvider["apns"]?["destination"].string == apnsToken)

            // APNs: one request, over HTTP/2, to the token's path, with the row's id as apns-id.
            let apnsRequests = lab.apns.requests
            #expect(apnsRequests.count == 1)
            let a = try #require(apnsRequests.first)
            #expect(a.httpVersion == "2")
            #expect(a.path == "/3/device/" + apnsToken)
            #expect(a.header("apns-id") == id.uuidString.lowercased())
            #expect(a.header("apns-topic") == lab.apns.topic)
            #expect(byProvider["apns"]?["provider_message_id"].string == id.uuidString.lowercased())

            // FCM: one token exchange, one send to the token.
            #expect(lab.fcm.tokenExchanges == 1)
            let fcmSends = lab.fcm.requests.filter { $0.path.hasSuffix("/messages:send") }
            #expect(fcmSends.count == 1)
            #expect(fcmSends.first?.text.contains(fcmToken) == true)

            // Expo: one send; its ticket waits in push_receipts for the receipts phase.
            #expect(lab.expo.sendBatchSizes == [1])
            let tickets = lab.expo.issuedTickets
            #expect(tickets.count == 1)
            let receipts = try lab.db.query("select queue_id, provider, ticket_id, device_token_id, status from push_receipts")
            #expect(receipts.count == 1)
            let r = try #require(receipts.first)
            #expect(r["queue_id"].uuid == id)
            #expect(r["provider"].string == "expo")
            #expect(r["status"].string == "pending")
            #expect(r["device_token_id"].uuid == expoId)
            #expect(tickets[r["ticket_id"].string ?? ""] == expoToken)
            #expect(byProvider["expo"]?["provider_message_id"].string == r["ticket_id"].string)
        }
    }

    // MARK: - A retry re-sends only to the destinations not yet delivered

    @Test func fanOutRetrySendsOnlyToTheUndeliveredToken() throws {
        try withProviderLab(.apns) { lab in
            let now = Self.now()
            let user = try lab.f.profile()
            let good = Self.apnsToken()
            let busy = Self.apnsToken()
            try lab.f.token(user, good)
            let busyId = try lab.f.token(user, busy)
            lab.apns.script(busy, .error(503, "ServiceUnavailable", headers: [("retry-after", "30")]))
            let id = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let settings = lab.settings

            let (s1, c1) = Self.pass(lab.url, settings, now: now)
            #expect(c1 == .ok, "\(s1.error ?? "")")
            var row = try lab.f.row(id)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == false)
            #expect(row["attempts"].int == 1)
            let retryAt = try #require(row["run_after"].date)
            let delay = retryAt.timeIntervalSince(now)
            #expect(delay >= 29 && delay <= 35, "Retry-After 30 → run_after ≈ now + 30 s, got \(delay)")
            var ds = try Self.deliveries(lab.db, id)
            #expect(ds.count == 2)
            #expect(ds.filter { $0["outcome"].string == "delivered" }.map { $0["destination"].string } == [good])
            let retry = ds.first { $0["outcome"].string == "retry" }
            #expect(retry?["destination"].string == busy)
            #expect(retry?["device_token_id"].uuid == busyId)
            #expect(retry?["http_status"].int == 503)
            #expect(lab.apns.requests.count == 2)

            // Not due yet: nothing is sent.
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(5))
            #expect(lab.apns.requests.count == 2)

            // APNs recovers; the due pass sends to the busy token only.
            lab.apns.script(busy, .raw(FakeResponse(status: 200)))
            let (s2, c2) = Self.pass(lab.url, settings, now: retryAt.addingTimeInterval(1))
            #expect(c2 == .ok, "\(s2.error ?? "")")
            let requests = lab.apns.requests
            #expect(requests.count == 3)
            #expect(Self.paths(Array(requests.dropFirst(2))) == [busy])
            row = try lab.f.row(id)
            #expect(row["status"].string == "sent")
            #expect(row["attempts"].int == 2)
            ds = try Self.deliveries(lab.db, id)
            #expect(ds.count == 3)
            #expect(ds.filter { $0["outcome"].string == "delivered" }.compactMap { $0["destination"].string }.sorted()
                    == [good, busy].sorted())
            #expect(ds.last?["attempt"].int == 2)
        }
    }

    /// A row returned to the queue because one destination's provider was throttled for the pass, after
    /// another destination got it, is not sent there again: the delivered destination is remembered
    /// however the row comes back (here its attempt was once given back, so it came back as attempt 1).
    @Test func aReleasedRowIsNotSentAgainWhereItWasDelivered() throws {
        try withProviderLab(.apns, .fcm) { lab in
            let now = Self.now()
            // First in the queue: a row whose FCM answer throttles the whole project for a minute.
            let first = try lab.f.profile()
            let throttling = "fcm-" + UUID().uuidString
            try lab.f.token(first, throttling, provider: "fcm")
            lab.fcm.script(throttling, .quotaExceeded(.project, retryAfter: 60))
            _ = try lab.f.enqueue(to: first, channel: "push", at: now.addingTimeInterval(-20))
            // Then a row to an APNs token (delivered) and an FCM token (not sent: FCM is throttled).
            let user = try lab.f.profile()
            let apnsToken = Self.apnsToken(), fcmToken = "fcm-" + UUID().uuidString
            try lab.f.token(user, apnsToken)
            try lab.f.token(user, fcmToken, provider: "fcm")
            let id = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let settings = lab.base.merging(try lab.settings(lab.apns)) { $1 }.merging(try lab.settings(lab.fcm)) { $1 }

            let (s1, c1) = Self.pass(lab.url, settings, now: now, batchSize: 1, drain: true)
            #expect(c1 == .ok, "\(s1.error ?? "")")
            var row = try lab.f.row(id)
            #expect(row["status"].string == "pending")
            #expect(Self.paths(lab.apns.requests) == [apnsToken])

            // A minute later FCM takes requests again: the row goes to the FCM token only.
            lab.fcm.script(throttling, .raw(.json(200, #"{"name":"projects/herald-test/messages/0:1"}"#)))
            let (s2, c2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(120), drain: true)
            #expect(c2 == .ok, "\(s2.error ?? "")")
            row = try lab.f.row(id)
            #expect(row["status"].string == "sent")
            #expect(Self.paths(lab.apns.requests) == [apnsToken], "the APNs token got it in the first pass")
            let delivered = try Self.deliveries(lab.db, id).filter { $0["outcome"].string == "delivered" }
            #expect(delivered.compactMap { $0["destination"].string }.sorted() == [apnsToken, fcmToken].sorted())
        }
    }

    /// On the last attempt, a row that reached some of its destinations (now or earlier) is sent — the
    /// recipient got it — with the destinations that never answered in last_error, not failed.
    @Test func lastAttemptWithAnEarlierDeliveryIsSent() throws {
        try withProviderLab(.apns) { lab in
            let now = Self.now()
            let user = try lab.f.profile()
            let good = Self.apnsToken(), busy = Self.apnsToken()
            try lab.f.token(user, good)
            try lab.f.token(user, busy)
            lab.apns.script(busy, .error(500, "InternalServerError"))
            let id = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10), maxAttempts: 2)
            let settings = lab.settings

            _ = Self.pass(lab.url, settings, now: now)
            var row = try lab.f.row(id)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == false)
            let retryAt = try #require(row["run_after"].date)

            let (summary, _) = Self.pass(lab.url, settings, now: retryAt.addingTimeInterval(1))
            #expect(Self.paths(Array(lab.apns.requests.dropFirst(2))) == [busy])
            row = try lab.f.row(id)
            #expect(row["attempts"].int == 2)
            #expect(row["status"].string == "sent", "delivered to one device on attempt 1, yet \(row["status"].string ?? "")")
            #expect(row["sent_at"].date != nil)
            #expect((row["last_error"].string ?? "").contains("InternalServerError"))
            #expect(summary.sent == 1)

            // With a single attempt allowed, the same holds on the first.
            let other = try lab.f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(100), maxAttempts: 1)
            _ = Self.pass(lab.url, settings, now: retryAt.addingTimeInterval(120))
            #expect(try lab.f.row(other)["status"].string == "sent")

            // Nothing delivered at all on the last attempt: failed for good.
            let alone = try lab.f.profile()
            try lab.f.token(alone, busy + "00")
            lab.apns.script(busy + "00", .error(500, "InternalServerError"))
            let lost = try lab.f.enqueue(to: alone, channel: "push", at: now.addingTimeInterval(100), maxAttempts: 1)
            _ = Self.pass(lab.url, settings, now: retryAt.addingTimeInterval(130))
            row = try lab.f.row(lost)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == true)
            #expect((row["last_error"].string ?? "").contains("gave up after 1 attempts"))
        }
    }
}
