import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// End-to-end passes against a real PostgreSQL and the fake providers over real TLS: APNs (HTTP/2, ES256
/// provider tokens), FCM (OAuth token exchange), Expo (tickets and receipts), Twilio, SendGrid and SMTP
/// (STARTTLS and AUTH). Each test configures the worker only through settings, as an operator would.
@Suite struct ProviderPassTests {

    // MARK: - Harness

    /// The certificates and temporary files of one test; `cleanup()` removes them.
    final class Lab: @unchecked Sendable {
        let certificates: TestCertificates
        private var files: [String] = []
        private let lock = NSLock()

        init() throws { certificates = try TestCertificates.make() }

        /// Writes `text` to a new temporary file (mode 0600) and returns its path.
        func file(_ text: String, name: String = "secret") throws -> String {
            let path = FileManager.default.temporaryDirectory
                .appendingPathComponent("herald-provtests-\(name)-\(UUID().uuidString)").path
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                                 attributes: [.posixPermissions: 0o600]) else {
                throw ConfigError("could not write \(path)")
            }
            lock.withLock { files.append(path) }
            return path
        }

        func cleanup() {
            for f in lock.withLock({ files }) { try? FileManager.default.removeItem(atPath: f) }
            certificates.remove()
        }

        var base: [String: String] { ["HERALD_CA_FILE": certificates.caFile] }

        func apns(_ fake: FakeAPNs) throws -> [String: String] {
            ["APNS_KEY_FILE": try file(fake.keyPEM, name: "apns.p8"), "APNS_KEY_ID": fake.keyId,
             "APNS_TEAM_ID": fake.teamId, "APNS_TOPIC": fake.topic, "APNS_URL": fake.baseURL]
        }

        func fcm(_ fake: FakeFCM) throws -> [String: String] {
            ["FCM_SERVICE_ACCOUNT_FILE": try file(fake.serviceAccountJSON, name: "fcm.json"), "FCM_URL": fake.baseURL]
        }

        func expo(_ fake: FakeExpo, accessToken: String? = nil) -> [String: String] {
            var s = ["HERALD_EXPO": "on", "EXPO_URL": fake.baseURL]
            if let accessToken { s["EXPO_ACCESS_TOKEN"] = accessToken }
            return s
        }
    }

    /// One pass in-process, as `herald run` would do it, with the rate limits out of the way (these tests
    /// count sends, not pacing) and no weather fetches.
    static func pass(_ url: String, _ settings: [String: String], now: Date, batchSize: Int = 50,
                     drain: Bool = false, phases: [Phase] = Phase.allCases,
                     logger: Logger? = nil) -> (Summary, ExitCode) {
        var options = PassOptions()
        options.now = now
        options.batchSize = batchSize
        options.maxBatches = drain ? nil : 1
        options.drain = drain
        options.phases = phases
        options.weatherURL = nil
        do {
            let db = try PGConnection(url, applicationName: "herald-tests")
            defer { db.close() }
            try db.execute("update notification_types set daily_cap = 1000, min_spacing_seconds = null, per_minute_cap = 1000")
        } catch {
            Issue.record("could not lift the rate limits: \(error)")
        }
        var s = settings
        s["DATABASE_URL"] = url
        var log = logger ?? Logger(label: "herald-provider-test")
        if logger == nil { log.logLevel = .critical }
        return Runner(settings: Settings(s), options: options, logger: log).run()
    }

    /// Now, to the second: the fakes check provider tokens against the real clock.
    static func now() -> Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }

    /// An APNs-style device token: 64 hex digits.
    static func apnsToken() -> String {
        (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
    }

    static func deliveries(_ db: PGConnection, _ id: UUID) throws -> [PGRow] {
        Array(try db.query("""
            select provider, destination, device_token_id, outcome, http_status, provider_error_code,
                   provider_message_id, error, attempt
              from notification_deliveries where queue_id = \(id) order by id
            """))
    }

    static func token(_ db: PGConnection, _ id: UUID) throws -> PGRow {
        try db.query("select is_active, deactivated_reason, deactivated_at from device_tokens where id = \(id)").first!
    }

    static func paths(_ requests: [FakeRequest], prefix: String = "/3/device/") -> [String] {
        requests.map(\.path).filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    // MARK: - 1. Fan-out to three providers

    @Test func pushFansOutToAPNsFCMAndExpo() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let fcm = try FakeFCM(certificates: lab.certificates)
        defer { fcm.shutdown() }
        let expo = try FakeExpo(tls: lab.certificates)
        defer { expo.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let user = try f.profile()
        let apnsToken = Self.apnsToken()
        let fcmToken = "fcm-" + UUID().uuidString
        let expoToken = "ExponentPushToken[\(UUID().uuidString.prefix(22))]"
        let apnsId = try f.token(user, apnsToken, provider: "apns")
        let fcmId = try f.token(user, fcmToken, provider: "fcm")
        let expoId = try f.token(user, expoToken, provider: "expo")
        let id = try f.enqueue(to: user, channel: "push", kind: "system", at: now.addingTimeInterval(-30))

        let settings = lab.base.merging(try lab.apns(apns)) { $1 }.merging(try lab.fcm(fcm)) { $1 }
            .merging(lab.expo(expo)) { $1 }
        let (summary, code) = Self.pass(tdb.url, settings, now: now)
        #expect(code == .ok, "\(summary.error ?? "")")
        #expect(summary.sent == 1)

        let row = try f.row(id)
        #expect(row["status"].string == "sent")
        let ds = try Self.deliveries(db, id)
        #expect(ds.count == 3)
        #expect(Set(ds.compactMap { $0["provider"].string }) == ["apns", "fcm", "expo"])
        #expect(ds.allSatisfy { $0["outcome"].string == "delivered" })
        let byProvider = Dictionary(ds.map { ($0["provider"].string ?? "?", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byProvider["apns"]?["device_token_id"].uuid == apnsId)
        #expect(byProvider["fcm"]?["device_token_id"].uuid == fcmId)
        #expect(byProvider["expo"]?["device_token_id"].uuid == expoId)
        #expect(byProvider["apns"]?["destination"].string == apnsToken)

        // APNs: one request, over HTTP/2, to the token's path, with the row's id as apns-id.
        let apnsRequests = apns.requests
        #expect(apnsRequests.count == 1)
        let a = try #require(apnsRequests.first)
        #expect(a.httpVersion == "2")
        #expect(a.path == "/3/device/" + apnsToken)
        #expect(a.header("apns-id") == id.uuidString.lowercased())
        #expect(a.header("apns-topic") == apns.topic)
        #expect(byProvider["apns"]?["provider_message_id"].string == id.uuidString.lowercased())

        // FCM: one token exchange, one send to the token.
        #expect(fcm.tokenExchanges == 1)
        let fcmSends = fcm.requests.filter { $0.path.hasSuffix("/messages:send") }
        #expect(fcmSends.count == 1)
        #expect(fcmSends.first?.text.contains(fcmToken) == true)

        // Expo: one send; its ticket waits in push_receipts for the receipts phase.
        #expect(expo.sendBatchSizes == [1])
        let tickets = expo.issuedTickets
        #expect(tickets.count == 1)
        let receipts = try db.query("select queue_id, provider, ticket_id, device_token_id, status from push_receipts")
        #expect(receipts.count == 1)
        let r = try #require(receipts.first)
        #expect(r["queue_id"].uuid == id)
        #expect(r["provider"].string == "expo")
        #expect(r["status"].string == "pending")
        #expect(r["device_token_id"].uuid == expoId)
        #expect(tickets[r["ticket_id"].string ?? ""] == expoToken)
        #expect(byProvider["expo"]?["provider_message_id"].string == r["ticket_id"].string)
    }

    // MARK: - 2. A retry re-sends only to the destinations not yet delivered

    @Test func fanOutRetrySendsOnlyToTheUndeliveredToken() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let user = try f.profile()
        let good = Self.apnsToken()
        let busy = Self.apnsToken()
        try f.token(user, good)
        let busyId = try f.token(user, busy)
        apns.script(busy, .error(503, "ServiceUnavailable", headers: [("retry-after", "30")]))
        let id = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        let settings = lab.base.merging(try lab.apns(apns)) { $1 }

        let (s1, c1) = Self.pass(tdb.url, settings, now: now)
        #expect(c1 == .ok, "\(s1.error ?? "")")
        var row = try f.row(id)
        #expect(row["status"].string == "failed")
        #expect(row["permanent"].bool == false)
        #expect(row["attempts"].int == 1)
        let retryAt = try #require(row["run_after"].date)
        let delay = retryAt.timeIntervalSince(now)
        #expect(delay >= 29 && delay <= 35, "Retry-After 30 → run_after ≈ now + 30 s, got \(delay)")
        var ds = try Self.deliveries(db, id)
        #expect(ds.count == 2)
        #expect(ds.filter { $0["outcome"].string == "delivered" }.map { $0["destination"].string } == [good])
        let retry = ds.first { $0["outcome"].string == "retry" }
        #expect(retry?["destination"].string == busy)
        #expect(retry?["device_token_id"].uuid == busyId)
        #expect(retry?["http_status"].int == 503)
        #expect(apns.requests.count == 2)

        // Not due yet: nothing is sent.
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(5))
        #expect(apns.requests.count == 2)

        // APNs recovers; the due pass sends to the busy token only.
        apns.script(busy, .raw(FakeResponse(status: 200)))
        let (s2, c2) = Self.pass(tdb.url, settings, now: retryAt.addingTimeInterval(1))
        #expect(c2 == .ok, "\(s2.error ?? "")")
        let requests = apns.requests
        #expect(requests.count == 3)
        #expect(Self.paths(Array(requests.dropFirst(2))) == [busy])
        row = try f.row(id)
        #expect(row["status"].string == "sent")
        #expect(row["attempts"].int == 2)
        ds = try Self.deliveries(db, id)
        #expect(ds.count == 3)
        #expect(ds.filter { $0["outcome"].string == "delivered" }.compactMap { $0["destination"].string }.sorted()
                == [good, busy].sorted())
        #expect(ds.last?["attempt"].int == 2)
    }

    /// A row returned to the queue because one destination's provider was throttled for the pass, after
    /// another destination got it, is not sent there again: the delivered destination is remembered
    /// however the row comes back (here its attempt was once given back, so it came back as attempt 1).
    @Test func aReleasedRowIsNotSentAgainWhereItWasDelivered() throws {
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
        // First in the queue: a row whose FCM answer throttles the whole project for a minute.
        let first = try f.profile()
        let throttling = "fcm-" + UUID().uuidString
        try f.token(first, throttling, provider: "fcm")
        fcm.script(throttling, .quotaExceeded(.project, retryAfter: 60))
        _ = try f.enqueue(to: first, channel: "push", at: now.addingTimeInterval(-20))
        // Then a row to an APNs token (delivered) and an FCM token (not sent: FCM is throttled).
        let user = try f.profile()
        let apnsToken = Self.apnsToken(), fcmToken = "fcm-" + UUID().uuidString
        try f.token(user, apnsToken)
        try f.token(user, fcmToken, provider: "fcm")
        let id = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        let settings = lab.base.merging(try lab.apns(apns)) { $1 }.merging(try lab.fcm(fcm)) { $1 }

        let (s1, c1) = Self.pass(tdb.url, settings, now: now, batchSize: 1, drain: true)
        #expect(c1 == .ok, "\(s1.error ?? "")")
        var row = try f.row(id)
        #expect(row["status"].string == "pending")
        #expect(Self.paths(apns.requests) == [apnsToken])

        // A minute later FCM takes requests again: the row goes to the FCM token only.
        fcm.script(throttling, .raw(.json(200, #"{"name":"projects/herald-test/messages/0:1"}"#)))
        let (s2, c2) = Self.pass(tdb.url, settings, now: now.addingTimeInterval(120), drain: true)
        #expect(c2 == .ok, "\(s2.error ?? "")")
        row = try f.row(id)
        #expect(row["status"].string == "sent")
        #expect(Self.paths(apns.requests) == [apnsToken], "the APNs token got it in the first pass")
        let delivered = try Self.deliveries(db, id).filter { $0["outcome"].string == "delivered" }
        #expect(delivered.compactMap { $0["destination"].string }.sorted() == [apnsToken, fcmToken].sorted())
    }

    /// On the last attempt, a row that reached some of its destinations (now or earlier) is sent — the
    /// recipient got it — with the destinations that never answered in last_error, not failed.
    @Test func lastAttemptWithAnEarlierDeliveryIsSent() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let user = try f.profile()
        let good = Self.apnsToken(), busy = Self.apnsToken()
        try f.token(user, good)
        try f.token(user, busy)
        apns.script(busy, .error(500, "InternalServerError"))
        let id = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10), maxAttempts: 2)
        let settings = lab.base.merging(try lab.apns(apns)) { $1 }

        _ = Self.pass(tdb.url, settings, now: now)
        var row = try f.row(id)
        #expect(row["status"].string == "failed")
        #expect(row["permanent"].bool == false)
        let retryAt = try #require(row["run_after"].date)

        let (summary, _) = Self.pass(tdb.url, settings, now: retryAt.addingTimeInterval(1))
        #expect(Self.paths(Array(apns.requests.dropFirst(2))) == [busy])
        row = try f.row(id)
        #expect(row["attempts"].int == 2)
        #expect(row["status"].string == "sent", "delivered to one device on attempt 1, yet \(row["status"].string ?? "")")
        #expect(row["sent_at"].date != nil)
        #expect((row["last_error"].string ?? "").contains("InternalServerError"))
        #expect(summary.sent == 1)

        // With a single attempt allowed, the same holds on the first.
        let other = try f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(100), maxAttempts: 1)
        _ = Self.pass(tdb.url, settings, now: retryAt.addingTimeInterval(120))
        #expect(try f.row(other)["status"].string == "sent")

        // Nothing delivered at all on the last attempt: failed for good.
        let alone = try f.profile()
        try f.token(alone, busy + "00")
        apns.script(busy + "00", .error(500, "InternalServerError"))
        let lost = try f.enqueue(to: alone, channel: "push", at: now.addingTimeInterval(100), maxAttempts: 1)
        _ = Self.pass(tdb.url, settings, now: retryAt.addingTimeInterval(130))
        row = try f.row(lost)
        #expect(row["status"].string == "failed")
        #expect(row["permanent"].bool == true)
        #expect((row["last_error"].string ?? "").contains("gave up after 1 attempts"))
    }

    // MARK: - 3. Dead tokens are deactivated and never tried again

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

    // MARK: - 4. Twilio 21610 turns SMS off for the recipient

    @Test func twilioUnsubscribedTurnsSMSOff() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let sid = "AC" + String(repeating: "0123456789abcdef", count: 2)
        let authToken = "twilio-auth-" + UUID().uuidString
        let twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: authToken)
        defer { twilio.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let phone = "+15555550142"
        let okPhone = "+15555550143"
        let user = try f.profile(phone: phone, sms: true)
        let other = try f.profile(phone: okPhone, sms: true)
        twilio.fail(to: phone, code: 21610, message: "Attempt to send to unsubscribed recipient")
        let id = try f.enqueue(to: user, channel: "sms", at: now.addingTimeInterval(-10))
        let okId = try f.enqueue(to: other, channel: "sms", at: now.addingTimeInterval(-10))
        var settings = lab.base
        settings["TWILIO_ACCOUNT_SID"] = sid
        settings["TWILIO_AUTH_TOKEN"] = authToken
        settings["TWILIO_FROM"] = "+15005550006"
        settings["TWILIO_URL"] = twilio.baseURL

        let (s1, c1) = Self.pass(tdb.url, settings, now: now)
        #expect(c1 == .ok, "\(s1.error ?? "")")
        let row = try f.row(id)
        #expect(row["status"].string == "failed")
        #expect(row["permanent"].bool == true)
        #expect((row["last_error"].string ?? "").contains("21610"))
        #expect(try f.row(okId)["status"].string == "sent")
        #expect(twilio.accepted.map { $0["To"] } == [okPhone])

        let d = try #require(try Self.deliveries(db, id).first)
        #expect(d["provider"].string == "twilio")
        #expect(d["outcome"].string == "destination_invalid")
        #expect(d["provider_error_code"].string == "21610")

        let p = try #require(try db.query("""
            select notify_sms, notify_sms_disabled_reason from user_profiles where user_id = \(user)
            """).first)
        #expect(p["notify_sms"].bool == false)
        #expect((p["notify_sms_disabled_reason"].string ?? "").contains("21610"))
        let q = try #require(try db.query("select notify_sms from user_profiles where user_id = \(other)").first)
        #expect(q["notify_sms"].bool == true)

        // The next SMS to that recipient is not sent: the channel is off.
        let later = try f.enqueue(to: user, channel: "sms", kind: "reminder", at: now.addingTimeInterval(50))
        let requestsBefore = twilio.server.requests.count
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(60))
        let l = try f.row(later)
        #expect(l["status"].string == "skipped")
        #expect(l["skip_reason"].string == "channel_disabled")
        #expect(twilio.server.requests.count == requestsBefore)
    }

    // MARK: - 5. Expo receipts

    /// A receipt comes up to a day after the push: a token the app registered again in between (its
    /// `last_used_at` after the ticket) is a fresh registration and stays active.
    @Test func aLateReceiptLeavesATokenRegisteredAgainActive() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let accessToken = "expo-access-" + UUID().uuidString
        let expo = try FakeExpo(tls: lab.certificates, accessToken: accessToken)
        defer { expo.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let now = Self.now()
        let user = try f.profile()
        let again = "ExponentPushToken[again-\(UUID().uuidString.prefix(8))]"
        let againId = try f.token(user, again, provider: "expo")
        expo.failReceipt(token: again, error: "DeviceNotRegistered")
        let id = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        let settings = lab.base.merging(lab.expo(expo, accessToken: accessToken)) { $1 }
        _ = Self.pass(tdb.url, settings, now: now)
        #expect(try f.row(id)["status"].string == "sent")
        // The app registers the token again after the push (the registration RPC sets last_used_at).
        try db.execute("update device_tokens set last_used_at = now() + interval '1 minute' where id = \(againId)")
        let (s, _) = Self.pass(tdb.url, settings, now: now.addingTimeInterval(20 * 60), phases: [.receipts])
        #expect(s.generated["receipts_checked"] == 1)
        #expect((s.generated["tokens_deactivated"] ?? 0) == 0)
        #expect(try Self.token(db, againId)["is_active"].bool == true)
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

    @Test func expoReceiptsDeactivateUnregisteredTokens() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let accessToken = "expo-access-" + UUID().uuidString
        let expo = try FakeExpo(tls: lab.certificates, accessToken: accessToken)
        defer { expo.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let user = try f.profile()
        let gone = "ExponentPushToken[gone-\(UUID().uuidString.prefix(8))]"
        let fine = "ExponentPushToken[fine-\(UUID().uuidString.prefix(8))]"
        let goneId = try f.token(user, gone, provider: "expo")
        let fineId = try f.token(user, fine, provider: "expo")
        expo.failReceipt(token: gone, error: "DeviceNotRegistered")
        // A token Expo refuses in the ticket itself is deactivated at once; it has no receipt to wait for.
        let refused = "ExponentPushToken[refused-\(UUID().uuidString.prefix(8))]"
        let refusedId = try f.token(user, refused, provider: "expo")
        expo.failTicket(token: refused, error: "DeviceNotRegistered")
        let id = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        let settings = lab.base.merging(lab.expo(expo, accessToken: accessToken)) { $1 }

        let (s1, c1) = Self.pass(tdb.url, settings, now: now)
        #expect(c1 == .ok, "\(s1.error ?? "")")
        #expect(try f.row(id)["status"].string == "sent")
        #expect(expo.sendBatchSizes == [3], "every token in one Expo request")
        #expect(try f.count("select count(*)::int from push_receipts where status = 'pending'") == 2)
        let r = try Self.token(db, refusedId)
        #expect(r["is_active"].bool == false)
        #expect((r["deactivated_reason"].string ?? "").contains("DeviceNotRegistered"))

        // Too early (< 15 min): receipts are not asked for.
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(5 * 60), phases: [.receipts])
        #expect(expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.isEmpty)

        let (s2, c2) = Self.pass(tdb.url, settings, now: now.addingTimeInterval(20 * 60), phases: [.receipts])
        #expect(c2 == .ok, "\(s2.error ?? "")")
        #expect(s2.generated["receipts_checked"] == 2)
        #expect(s2.generated["tokens_deactivated"] == 1)
        #expect(expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.count == 1)

        let receipts = try db.query("select device_token_id, status, error_code, checked_at from push_receipts")
        let byToken = Dictionary(receipts.map { ($0["device_token_id"].uuid!, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byToken[goneId]?["status"].string == "error")
        #expect(byToken[goneId]?["error_code"].string == "DeviceNotRegistered")
        #expect(byToken[fineId]?["status"].string == "ok")
        #expect(receipts.allSatisfy { $0["checked_at"].date != nil })

        let g = try Self.token(db, goneId)
        #expect(g["is_active"].bool == false)
        #expect((g["deactivated_reason"].string ?? "").contains("DeviceNotRegistered"))
        #expect(try Self.token(db, fineId)["is_active"].bool == true)

        // Checked receipts are not asked for again; the dead token gets nothing more.
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(40 * 60), phases: [.receipts])
        #expect(expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.count == 1)
        let second = try f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(40 * 60))
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(41 * 60))
        #expect(try f.row(second)["status"].string == "sent")
        #expect(expo.sendBatchSizes == [3, 1])
        #expect(expo.sendRequests.last?.text.contains(gone) == false)
    }

    /// Tickets age on the pass's clock (`--now`), like every other decision: a replay at a past instant
    /// asks for receipts 15 minutes after its own sends, and closes tickets whose receipt never came a
    /// day after them.
    @Test func expoTicketsAgeOnThePassClock() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let expo = try FakeExpo(tls: lab.certificates)
        defer { expo.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = seedInstant   // months before the real clock
        let user = try f.profile()
        let token = "ExponentPushToken[\(UUID().uuidString.prefix(12))]"
        try f.token(user, token, provider: "expo")
        let first = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        let settings = lab.base.merging(lab.expo(expo)) { $1 }
        #expect(Self.pass(tdb.url, settings, now: now).1 == .ok)
        #expect(try f.row(first)["status"].string == "sent")

        func receiptRequests() -> Int { expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.count }
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(5 * 60), phases: [.receipts])
        #expect(receiptRequests() == 0, "asked for a receipt 5 minutes after the send")
        let (s, _) = Self.pass(tdb.url, settings, now: now.addingTimeInterval(20 * 60), phases: [.receipts])
        #expect(s.generated["receipts_checked"] == 1)
        #expect(receiptRequests() == 1)
        #expect(try f.count("select count(*)::int from push_receipts where status = 'ok'") == 1)

        // A receipt that never comes is closed a day after the ticket, not a day after the real clock.
        expo.setReceiptsReady(false)
        let second = try f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(3600))
        #expect(Self.pass(tdb.url, settings, now: now.addingTimeInterval(3600)).1 == .ok)
        #expect(try f.row(second)["status"].string == "sent")
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(2 * 3600), phases: [.receipts])
        #expect(try f.count("select count(*)::int from push_receipts where status = 'pending'") == 1)
        _ = Self.pass(tdb.url, settings, now: now.addingTimeInterval(26 * 3600), phases: [.receipts])
        let expired = try db.query("select status, error_code from push_receipts where queue_id = \(second)").first
        #expect(expired?["status"].string == "error")
        #expect(expired?["error_code"].string == "receipt_expired")
    }

    /// An Expo message that cannot be built (its token alone is over 4,096 bytes; a payload's deep link
    /// that long is dropped by the renderer) fails alone, with a readable error; the other rows of its
    /// batch go out in one request.
    @Test func anExpoMessageThatCannotBeBuiltFailsAloneAndTheRestAreSent() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let expo = try FakeExpo(tls: lab.certificates)
        defer { expo.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        var ids: [UUID] = []
        for i in 0..<3 {
            let user = try f.profile()
            let token = i == 1 ? "ExponentPushToken[" + String(repeating: "x", count: 5_000) + "]"
                : "ExponentPushToken[\(UUID().uuidString.prefix(12))]"
            try f.token(user, token, provider: "expo")
            ids.append(try f.enqueue(to: user, channel: "push", payload: #"{"title":"Hello","body":"World"}"#,
                                     at: now.addingTimeInterval(Double(-30 + i))))
        }
        let (summary, code) = Self.pass(tdb.url, lab.base.merging(lab.expo(expo)) { $1 }, now: now)
        #expect(code == .ok, "\(summary.error ?? "")")
        #expect(expo.sendBatchSizes == [2])
        #expect(try f.row(ids[0])["status"].string == "sent")
        #expect(try f.row(ids[2])["status"].string == "sent")
        let bad = try f.row(ids[1])
        #expect(bad["status"].string == "failed")
        #expect(bad["permanent"].bool == true)
        let error = bad["last_error"].string ?? ""
        #expect(error.contains("4096 bytes") && error.contains("token"), "\(error)")
        #expect(!error.contains("xxxxxxxx"))
    }

    // MARK: - 6. A provider that asks to slow down is not called again in the pass

    @Test func throttledProviderIsNotCalledAgainThisPass() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        var ids: [UUID] = []
        var tokens: [String] = []
        for i in 0..<4 {
            let user = try f.profile()
            let token = Self.apnsToken()
            try f.token(user, token)
            tokens.append(token)
            // Distinct run_after: the first row is claimed first.
            ids.append(try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(Double(-300 + i * 10))))
        }
        // A 503 is about the server (a 429 TooManyRequests would be about that token only).
        apns.script(tokens[0], .error(503, "ServiceUnavailable", headers: [("retry-after", "120")]))

        let (summary, code) = Self.pass(tdb.url, lab.base.merging(try lab.apns(apns)) { $1 }, now: now,
                                        batchSize: 1, drain: true)
        #expect(code == .ok, "\(summary.error ?? "")")
        #expect(summary.batches == 4, "every row claimed, one a batch")
        #expect(apns.requests.count == 1, "APNs called again after its 503")
        #expect(Self.paths(apns.requests) == [tokens[0]])

        for (i, id) in ids.enumerated() {
            let row = try f.row(id)
            // The row APNs answered used an attempt; those never sent went back with theirs refunded.
            #expect(row["status"].string == (i == 0 ? "failed" : "pending"), "row \(i)")
            #expect(row["permanent"].bool == false, "row \(i)")
            #expect(row["attempts"].int == (i == 0 ? 1 : 0), "row \(i)")
            let after = try #require(row["run_after"].date).timeIntervalSince(now)
            #expect(after >= 119 && after <= 130, "row \(i) retries after \(after) s")
        }
        let released = try db.query("""
            select count(*)::int as n from notification_events where event = 'released' and reason = 'throttled'
            """).first?["n"].int
        #expect(released == 3)
        #expect(summary.released == 3)
    }

    // MARK: - 7. Configuration errors stop the pass before any row is touched

    @Test func configurationErrorsNameTheVariableAndTouchNothing() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let now = Self.now()
        let user = try f.profile(email: "ana@example.com", emailOn: true)
        try f.token(user, Self.apnsToken())
        let push = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
        let mail = try f.enqueue(to: user, channel: "email", at: now.addingTimeInterval(-10))

        let keyFile = try lab.file(apns.keyPEM, name: "apns.p8")
        let sendgridKey = "SG.secret-" + UUID().uuidString
        let smtpPassword = "smtp-pw-" + UUID().uuidString
        let cases: [(String, [String: String], [String])] = [
            ("APNS_KEY_ID alone", ["APNS_KEY_ID": apns.keyId], ["APNS_KEY_FILE", "APNS_TEAM_ID", "APNS_TOPIC"]),
            ("APNs without a topic", ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": apns.keyId, "APNS_TEAM_ID": apns.teamId],
             ["APNS_TOPIC"]),
            ("unreadable APNS_KEY_FILE", ["APNS_KEY_FILE": "/nonexistent/herald/AuthKey.p8", "APNS_KEY_ID": apns.keyId,
                                          "APNS_TEAM_ID": apns.teamId, "APNS_TOPIC": apns.topic],
             ["APNS_KEY_FILE"]),
            ("service account missing a field",
             ["FCM_SERVICE_ACCOUNT_FILE": try lab.file(#"{"type":"service_account","project_id":"p"}"#, name: "fcm.json")],
             ["FCM_SERVICE_ACCOUNT_FILE", "client_email"]),
            ("service account not JSON",
             ["FCM_SERVICE_ACCOUNT_FILE": try lab.file("this is not json", name: "fcm.json")],
             ["FCM_SERVICE_ACCOUNT_FILE"]),
            ("SENDGRID_API_KEY without EMAIL_FROM", ["SENDGRID_API_KEY": sendgridKey], ["EMAIL_FROM"]),
            // SendGrid and SMTP together are a failover order now (FailoverTests); naming an unknown one is not.
            ("an unknown email provider", ["SENDGRID_API_KEY": sendgridKey,
                                           "SMTP_URL": "smtp://herald:\(smtpPassword)@localhost:2525",
                                           "EMAIL_FROM": "noreply@example.com", "HERALD_EMAIL_PROVIDERS": "sendgrid,mailgun"],
             ["HERALD_EMAIL_PROVIDERS"]),
        ]
        for (name, settings, mentions) in cases {
            let (summary, code) = Self.pass(tdb.url, lab.base.merging(settings) { $1 }, now: now)
            #expect(code == .configuration, "\(name): exit \(code)")
            #expect(summary.ok == false, "\(name)")
            let error = summary.error ?? ""
            #expect(mentions.contains { error.contains($0) }, "\(name): \(error)")
            #expect(!error.contains(sendgridKey) && !error.contains(smtpPassword), "\(name) quotes a secret: \(error)")
        }
        // The malformed service account names the variable as well as the field.
        let (s, _) = Self.pass(tdb.url, lab.base.merging(cases[3].1) { $1 }, now: now)
        #expect((s.error ?? "").contains("FCM_SERVICE_ACCOUNT_FILE"), "\(s.error ?? "")")
        #expect((s.error ?? "").contains("client_email"), "\(s.error ?? "")")

        // Nothing was touched: no pass recorded, rows pending and never claimed, no request sent.
        for id in [push, mail] {
            let row = try f.row(id)
            #expect(row["status"].string == "pending")
            #expect(row["attempts"].int == 0)
            #expect(row["locked_by"].string == nil)
        }
        #expect(try f.count("select count(*)::int from herald_passes") == 0)
        #expect(try f.count("select count(*)::int from notification_trail where event <> 'enqueued'") == 0)
        #expect(try f.count("select count(*)::int from notification_deliveries") == 0)
        #expect(apns.requests.isEmpty)
    }

    // MARK: - 8. Email through SMTP and SendGrid

    @Test func emailThroughSMTPWithSTARTTLSAndAuth() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let password = "s3cret-" + UUID().uuidString.prefix(8)
        let smtp = try FakeSMTPServer(tls: lab.certificates, user: "herald", password: String(password),
                                      recipientReplies: ["gone@example.com": "550 5.1.1 No such user"])
        defer { smtp.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let ana = try f.profile(email: "ana@example.com", emailOn: true)
        let goneUser = try f.profile(email: "gone@example.com", emailOn: true)
        let sent = try f.enqueue(to: ana, channel: "email", payload: #"{"title":"Weekly summary","body":"All good this week"}"#,
                                 at: now.addingTimeInterval(-10))
        let refused = try f.enqueue(to: goneUser, channel: "email", at: now.addingTimeInterval(-10))
        var settings = lab.base
        settings["SMTP_URL"] = "smtp://herald:\(password)@localhost:\(smtp.port)"
        settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

        let (summary, code) = Self.pass(tdb.url, settings, now: now)
        #expect(code == .ok, "\(summary.error ?? "")")
        #expect(try f.row(sent)["status"].string == "sent")
        let mails = smtp.mails
        #expect(mails.count == 1)
        let m = try #require(mails.first)
        #expect(m.tls, "the message went over STARTTLS")
        #expect(m.authenticatedUser == "herald")
        #expect(m.from == "noreply@example.com")
        #expect(m.recipients == ["ana@example.com"])
        #expect(m.header("Subject") == "Weekly summary")
        #expect(m.header("X-Herald-Notification-Id") == sent.uuidString.lowercased())
        #expect(m.body.contains("All good this week"))
        let d = try #require(try Self.deliveries(db, sent).first)
        #expect(d["provider"].string == "smtp")
        #expect(d["outcome"].string == "delivered")

        // 550 on RCPT: the address is dead, email is turned off for that recipient.
        let r = try f.row(refused)
        #expect(r["status"].string == "failed")
        #expect(r["permanent"].bool == true)
        let rd = try #require(try Self.deliveries(db, refused).first)
        #expect(rd["outcome"].string == "destination_invalid")
        #expect(rd["provider_error_code"].string == "550")
        let p = try #require(try db.query("""
            select notify_email, notify_email_disabled_reason from user_profiles where user_id = \(goneUser)
            """).first)
        #expect(p["notify_email"].bool == false)
        #expect((p["notify_email_disabled_reason"].string ?? "").contains("550"))
        let a = try #require(try db.query("select notify_email from user_profiles where user_id = \(ana)").first)
        #expect(a["notify_email"].bool == true)
        // The password never lands in the database.
        #expect(try f.count("""
            select count(*)::int from notification_deliveries where error like \("%" + password + "%")
            """) == 0)
    }

    @Test func emailThroughSendGrid() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apiKey = "SG.test-" + UUID().uuidString
        let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: apiKey)
        defer { sendgrid.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let ana = try f.profile(email: "ana@example.com", emailOn: true)
        let id = try f.enqueue(to: ana, channel: "email", payload: #"{"title":"Weekly summary","body":"All good this week"}"#,
                               at: now.addingTimeInterval(-10))
        var settings = lab.base
        settings["SENDGRID_API_KEY"] = apiKey
        settings["SENDGRID_URL"] = sendgrid.baseURL
        settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

        let (summary, code) = Self.pass(tdb.url, settings, now: now)
        #expect(code == .ok, "\(summary.error ?? "")")
        let row = try db.query("select status, provider_message_id from notification_queue where id = \(id)").first
        #expect(row?["status"].string == "sent")
        let mails = sendgrid.sent
        #expect(mails.count == 1)
        let m = try #require(mails.first)
        #expect(m.to == ["ana@example.com"])
        #expect(m.fromEmail == "noreply@example.com")
        #expect(m.subject == "Weekly summary")
        #expect(m.text.contains("All good this week"))
        #expect(row?["provider_message_id"].string == m.messageId)
        let d = try #require(try Self.deliveries(db, id).first)
        #expect(d["provider"].string == "sendgrid")
        #expect(d["outcome"].string == "delivered")
    }

    // MARK: - 9. Nothing private reaches the log

    @Test func logsCarryNoTokensNumbersKeysOrBodies() throws {
        let lab = try Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        let fcm = try FakeFCM(certificates: lab.certificates)
        defer { fcm.shutdown() }
        let expoAccess = "expo-access-" + UUID().uuidString
        let expo = try FakeExpo(tls: lab.certificates, accessToken: expoAccess)
        defer { expo.shutdown() }
        let sid = "AC" + String(repeating: "fedcba9876543210", count: 2)
        let twilioAuth = "twilio-auth-" + UUID().uuidString
        let twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: twilioAuth)
        defer { twilio.shutdown() }
        let sendgridKey = "SG.log-test-" + UUID().uuidString
        let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: sendgridKey)
        defer { sendgrid.shutdown() }
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)

        let now = Self.now()
        let body = "Private body text \(UUID().uuidString)"
        let title = "Private title \(UUID().uuidString.prefix(8))"
        let payload = #"{"title":"\#(title)","body":"\#(body)"}"#
        let phoneDead = "+15555550177"
        let phoneBad = "+15555550178"
        let phoneBusy = "+15555550179"
        let email = "private.person@example.com"
        let bounced = "bounced.person@example.com"
        var secrets: [String] = [body, title, phoneDead, phoneBad, phoneBusy, email, bounced, expoAccess, twilioAuth,
                                 sendgridKey, fcm.privateKeyPEM, apns.keyPEM]

        // Push: every provider answers an error (dead, throttled, server error, unauthorized).
        let pushUser = try f.profile(email: email, phone: phoneDead, emailOn: true, sms: true)
        let apnsDead = Self.apnsToken(), apnsThrottle = Self.apnsToken(), apnsBroken = Self.apnsToken()
        let fcmDead = "fcm-private-" + UUID().uuidString, fcmBusy = "fcm-busy-" + UUID().uuidString
        let expoDead = "ExponentPushToken[private-\(UUID().uuidString.prefix(8))]"
        let expoFine = "ExponentPushToken[fine-\(UUID().uuidString.prefix(8))]"
        for t in [apnsDead, apnsThrottle, apnsBroken] { try f.token(pushUser, t) }
        for t in [fcmDead, fcmBusy] { try f.token(pushUser, t, provider: "fcm") }
        for t in [expoDead, expoFine] { try f.token(pushUser, t, provider: "expo") }
        secrets += [apnsDead, apnsThrottle, apnsBroken, fcmDead, fcmBusy, expoDead, expoFine]
        apns.script(apnsDead, .unregistered(timestamp: 1_700_000_000_000))
        apns.script(apnsThrottle, .error(429, "TooManyRequests", headers: [("retry-after", "60")]))
        apns.script(apnsBroken, .raw(.text(500, "internal error for \(apnsBroken)")))
        fcm.script(fcmDead, .fcmError(404, status: "NOT_FOUND", errorCode: "UNREGISTERED",
                                      message: "Requested entity \(fcmDead) was not found."))
        fcm.script(fcmBusy, .fcmError(503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE",
                                      message: "unavailable for \(fcmBusy)", headers: [("retry-after", "60")]))
        expo.failTicket(token: expoDead, error: "DeviceNotRegistered")
        try f.enqueue(to: pushUser, channel: "push", payload: payload, at: now.addingTimeInterval(-10))

        // SMS: unsubscribed, invalid number (Twilio quotes it), and a server error.
        let badUser = try f.profile(phone: phoneBad, sms: true)
        let busyUser = try f.profile(phone: phoneBusy, sms: true)
        twilio.fail(to: phoneDead, code: 21610, message: "Attempt to send to unsubscribed recipient \(phoneDead)")
        twilio.fail(to: phoneBad, code: 21211, message: "The 'To' number \(phoneBad) is not a valid phone number.")
        twilio.fail(to: phoneBusy, code: 30001, message: "Queue overflow for \(phoneBusy)", status: 503)
        for u in [pushUser, badUser, busyUser] {
            try f.enqueue(to: u, channel: "sms", payload: payload, at: now.addingTimeInterval(-10))
        }

        // Email: one refused address, one accepted.
        let bounceUser = try f.profile(email: bounced, emailOn: true)
        sendgrid.fail(email: bounced, status: 400, message: "Does not contain a valid address: \(bounced)",
                      field: "personalizations.0.to.0.email")
        try f.enqueue(to: bounceUser, channel: "email", payload: payload, at: now.addingTimeInterval(-10))
        try f.enqueue(to: pushUser, channel: "email", payload: payload, at: now.addingTimeInterval(-10))

        var settings = lab.base.merging(try lab.apns(apns)) { $1 }.merging(try lab.fcm(fcm)) { $1 }
            .merging(lab.expo(expo, accessToken: expoAccess)) { $1 }
        settings["TWILIO_ACCOUNT_SID"] = sid
        settings["TWILIO_AUTH_TOKEN"] = twilioAuth
        settings["TWILIO_FROM"] = "+15005550006"
        settings["TWILIO_URL"] = twilio.baseURL
        settings["SENDGRID_API_KEY"] = sendgridKey
        settings["SENDGRID_URL"] = sendgrid.baseURL
        settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

        let logPath = try lab.file("", name: "log")
        let handle = try #require(FileHandle(forWritingAtPath: logPath))
        let stream = LogStream(handle)
        let logger = Logger(label: "herald") { JSONLogHandler(label: $0, level: .info, stream: stream) }

        let (summary, code) = Self.pass(tdb.url, settings, now: now, logger: logger)
        // A second pass: the FCM token endpoint fails, and Expo refuses the access token.
        fcm.scriptTokenEndpoint(.json(400, #"{"error":"invalid_grant","error_description":"bad assertion"}"#))
        expo.enqueue(.json(401, #"{"errors":[{"code":"UNAUTHORIZED","message":"bad token \#(expoAccess)"}]}"#))
        let again = try f.enqueue(to: pushUser, channel: "push", kind: "reminder", payload: payload,
                                  at: now.addingTimeInterval(110))
        let (summary2, code2) = Self.pass(tdb.url, settings, now: now.addingTimeInterval(120), logger: logger)
        try handle.close()
        #expect(code == .ok, "\(summary.error ?? "")")
        #expect(code2 == .degraded, "Expo refused herald's access token: \(summary2.error ?? "")")
        #expect(summary2.phaseErrors["deliver"]?.contains(expoAccess) == false)
        #expect(summary.failed >= 3, "the providers' errors were recorded: \(summary.failed) failed")
        #expect(try f.row(again)["status"].string == "failed")

        let log = try String(contentsOfFile: logPath, encoding: .utf8)
        #expect(log.contains("pass finished"), "the log was captured")
        #expect(log.contains("slow down"), "the throttle warning was logged")
        for secret in secrets {
            #expect(!log.contains(secret), "the log contains \(secret.prefix(40))")
        }
        // Each line is one JSON object.
        for line in log.split(separator: "\n") {
            #expect((try? JSONValue.parse(String(line))) != nil, "not JSON: \(line)")
        }
    }
}
