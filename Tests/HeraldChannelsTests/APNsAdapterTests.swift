import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// The APNs adapter through the real libcurl transport against FakeAPNs over TLS and HTTP/2.
@Suite(.serialized)
final class APNsAdapterTests {
    let certificates: TestCertificates
    let apns: FakeAPNs
    /// Released before the fake shuts down: an open HTTP/2 connection would hold its shutdown up.
    private var client: HTTPTransport?
    var transport: HTTPTransport { client! }
    let adapter: APNsAdapter

    init() throws {
        certificates = try TestCertificates.make()
        apns = try FakeAPNs(certificates: certificates)
        client = try HTTPTransport(options: .init(caFile: certificates.caFile))
        adapter = try APNsAdapter(keyPEM: apns.keyPEM, keyId: apns.keyId, teamId: apns.teamId, topic: apns.topic,
                                  environment: .sandbox, baseURL: apns.baseURL, timeout: 60)
    }

    deinit {
        client = nil
        apns.shutdown()
        certificates.remove()
    }

    func send(_ envelope: Envelope, with adapter: APNsAdapter? = nil) throws -> (ClassifiedResponse, Result<HTTPResponse, TransportError>) {
        let adapter = adapter ?? self.adapter
        let result = transport.perform(try adapter.request(for: envelope))
        return (adapter.classify(result, now: envelope.now), result)
    }

    var secrets: [String] { [apns.keyPEM] + apns.jwtsSeen }

    @Test func deliversOverHTTP2WithTheSpecifiedHeadersAndBody() throws {
        let id = UUID()
        let alert = UUID()
        let now = Date()
        let envelope = pushEnvelope(token: "a1b2c3d4", provider: .apns, now: now, severity: .critical, id: id,
                                    alertStateId: alert)
        let (classified, result) = try send(envelope)

        let response = try #require(result.success)
        #expect(response.httpVersion == 20)
        #expect(classified.outcome == .delivered(messageId: id.lowercased))
        #expect(classified.httpStatus == 200)

        let request = try #require(apns.requests.first)
        #expect(request.httpVersion == "2")
        #expect(request.method == "POST")
        #expect(request.path == "/3/device/a1b2c3d4")
        #expect(request.header("apns-topic") == apns.topic)
        #expect(request.header("apns-push-type") == "alert")
        #expect(request.header("apns-priority") == "10")
        #expect(request.header("apns-id") == id.lowercased)
        #expect(request.header("apns-collapse-id") == "alert-" + alert.lowercased)
        let expiration = Int(envelope.item.scheduledAt.timeIntervalSince1970) + 24 * 3600
        #expect(request.header("apns-expiration") == String(expiration))
        #expect(request.header("authorization")?.hasPrefix("bearer ") == true)

        let body = try jsonObject(request.body)
        let aps = try #require(body["aps"] as? [String: Any])
        let alertText = try #require(aps["alert"] as? [String: Any])
        #expect(alertText["title"] as? String == "Sleep pattern")
        #expect(alertText["body"] as? String == "Open the app for details.")
        #expect(aps["sound"] as? String == "default")
        #expect(aps["badge"] as? Int == 3)
        #expect(aps["category"] as? String == "ALERT_CATEGORY")
        #expect(aps["thread-id"] as? String == "pattern_alert")
        #expect(body["kind"] as? String == "pattern_alert")
        #expect(body["queue_id"] as? String == id.lowercased)
        #expect(body["level"] as? Int == 7)
        #expect(apns.distinctJWTs == 1)
    }

    /// Every push carries a collapse id, so a copy sent again replaces the first on the device: a row
    /// other than a pattern alert collapses under its own queue id.
    @Test func normalPriorityWithoutAlertHasPriority5AndItsOwnCollapseId() throws {
        let id = UUID()
        let envelope = pushEnvelope(token: "abcdef", provider: .apns, kind: .reminder, severity: nil,
                                    priority: .normal, id: id, alertStateId: nil)
        let request = try adapter.request(for: envelope)
        #expect(request.headers.first { $0.0 == "apns-priority" }?.1 == "5")
        #expect(request.headers.filter { $0.0 == "apns-collapse-id" }.map(\.1) == [id.lowercased])
        #expect(request.version == .http2)
        #expect(request.url == apns.baseURL + "/3/device/abcdef")
        let high = pushEnvelope(token: "abcdef", provider: .apns, kind: .reminder, severity: nil, priority: .high)
        #expect(try adapter.request(for: high).headers.first { $0.0 == "apns-priority" }?.1 == "10")
    }

    @Test func manyRequestsMultiplexOnFewConnectionsWithOneJWT() throws {
        let now = Date()
        let envelopes = (0..<200).map { pushEnvelope(token: String(format: "%064x", $0), provider: .apns, now: now) }
        let requests = try envelopes.map { try adapter.request(for: $0) }
        var outcomes: [Int: DeliveryOutcome] = [:]
        var versions = Set<Int>()
        transport.perform(requests) { index, result in
            outcomes[index] = adapter.classify(result, now: now).outcome
            if let r = result.success { versions.insert(r.httpVersion) }
        }
        #expect(outcomes.count == 200)
        for (index, outcome) in outcomes {
            #expect(outcome == .delivered(messageId: envelopes[index].item.id.lowercased))
        }
        #expect(versions == [20])
        #expect(apns.connectionCount <= 2, "\(apns.connectionCount) connections")
        #expect(apns.distinctJWTs == 1)
        #expect(adapter.tokens.mintedCount == 1)
        #expect(Set(apns.requests.compactMap { $0.header("authorization") }).count == 1)
    }

    @Test func jwtIsReusedThenReMintedAfter50Minutes() throws {
        let start = Date()
        for minutes in [0.0, 10, 30, 49] {
            let now = start.addingTimeInterval(minutes * 60)
            apns.setClock(now)
            #expect(try send(pushEnvelope(token: "aa", provider: .apns, now: now)).0.outcome.label == "delivered")
        }
        #expect(apns.distinctJWTs == 1)
        #expect(adapter.tokens.mintedCount == 1)

        let later = start.addingTimeInterval(51 * 60)
        apns.setClock(later)
        #expect(try send(pushEnvelope(token: "aa", provider: .apns, now: later)).0.outcome.label == "delivered")
        #expect(apns.distinctJWTs == 2)
        #expect(adapter.tokens.mintedCount == 2)

        // The new token is reused in turn.
        let after = later.addingTimeInterval(5 * 60)
        apns.setClock(after)
        _ = try send(pushEnvelope(token: "aa", provider: .apns, now: after))
        #expect(apns.distinctJWTs == 2)
        let jwts = apns.requests.compactMap { $0.header("authorization") }
        #expect(Set(jwts).count == 2)
        #expect(jwts.count == 6)
    }

    @Test func deadTokensAreDestinationInvalidWithTheReason() throws {
        apns.script("gone", .unregistered(timestamp: 1_700_000_000_000))
        apns.script("bad", .error(400, "BadDeviceToken"))
        apns.script("othertopic", .error(400, "DeviceTokenNotForTopic"))
        apns.script("expired", .error(410, "ExpiredToken"))
        for (token, reason, status) in [("gone", "Unregistered", 410), ("bad", "BadDeviceToken", 400),
                                        ("othertopic", "DeviceTokenNotForTopic", 400), ("expired", "ExpiredToken", 410)] {
            let (classified, _) = try send(pushEnvelope(token: token, provider: .apns))
            guard case .destinationInvalid(let code, let message) = classified.outcome else {
                Issue.record("\(token): expected destinationInvalid, got \(classified.outcome)")
                continue
            }
            #expect(code == reason)
            #expect(classified.httpStatus == status)
            #expect(message.contains(reason))
            expectNoSecrets(classified.outcome, secrets)
        }
        let (gone, _) = try send(pushEnvelope(token: "gone", provider: .apns))
        #expect(gone.outcome.message?.contains("2023-11-14") == true, "\(gone.outcome)")
    }

    @Test func throttlingAndOutagesRetryAfterRetryAfter() throws {
        apns.script("busy", .error(429, "TooManyRequests", headers: [("retry-after", "30")]))
        apns.script("down", .error(503, "ServiceUnavailable", headers: [("retry-after", "120")]))
        apns.script("broken", .error(500, "InternalServerError"))
        #expect(try send(pushEnvelope(token: "busy", provider: .apns)).0.outcome
                == .retry(after: 30, code: "TooManyRequests", message: "APNs 429 TooManyRequests: too many notifications to this device token"))
        let down = try send(pushEnvelope(token: "down", provider: .apns)).0
        #expect(down.outcome.label == "retry")
        if case .retry(let after, let code, _) = down.outcome {
            #expect(after == 120)
            #expect(code == "ServiceUnavailable")
        }
        // 429 TooManyRequests is about that device token only (providers.md §1.7); a 503 about the server.
        #expect(try send(pushEnvelope(token: "busy", provider: .apns)).0.throttle == .destination(wait: 30))
        #expect(down.throttle == .provider(wait: 120))
        apns.script("jwt", .error(429, "TooManyProviderTokenUpdates", headers: [("retry-after", "60")]))
        #expect(try send(pushEnvelope(token: "jwt", provider: .apns)).0.throttle == .provider(wait: 60))
        let broken = try send(pushEnvelope(token: "broken", provider: .apns)).0
        #expect(broken.throttle == nil)
        #expect(broken.outcome.label == "retry")
        if case .retry(let after, let code, _) = broken.outcome {
            #expect(after == APNsAdapter.internalErrorWait, "Apple: retry a 500 after 15 minutes")
            #expect(code == "InternalServerError")
        }
        expectNoSecrets(down.outcome, secrets)
    }

    /// ExpiredProviderToken about a JWT minted minutes ago (an answer to the one it replaced, or a clock
    /// that is off) does not mint yet another: a new JWT for each such answer would earn APNs's
    /// TooManyProviderTokenUpdates.
    @Test func anExpiredAnswerAboutAFreshJWTDoesNotMintAnother() throws {
        let cache = try APNsTokenCache(keyPEM: apns.keyPEM, keyId: apns.keyId, teamId: apns.teamId)
        let now = Date()
        let jwt = try cache.token(now: now)
        cache.invalidate(ifOlderThan: 20 * 60, now: now.addingTimeInterval(60))
        #expect(try cache.token(now: now.addingTimeInterval(61)) == jwt)
        #expect(cache.mintedCount == 1)
        cache.invalidate(ifOlderThan: 20 * 60, now: now.addingTimeInterval(21 * 60))
        #expect(try cache.token(now: now.addingTimeInterval(21 * 60)) != jwt)
        #expect(cache.mintedCount == 2)
    }

    @Test func expiredProviderTokenRetriesAndMintsANewJWT() throws {
        let now = Date()
        // A token minted two hours ago (as if the clock jumped): APNs says it expired.
        let stale = now.addingTimeInterval(-2 * 3600)
        // Answered now: the JWT is two hours old, so it is dropped.
        let first = adapter.classify(transport.perform(try adapter.request(for: pushEnvelope(token: "aa", provider: .apns, now: stale))),
                                     now: now)
        guard case .retry(_, let code, _) = first.outcome else {
            Issue.record("expected retry, got \(first.outcome)")
            return
        }
        #expect(code == "ExpiredProviderToken")
        #expect(first.httpStatus == 403)
        expectNoSecrets(first.outcome, secrets)

        // Next time a fresh JWT is minted even though `now` alone would not have asked for one.
        let (second, _) = try send(pushEnvelope(token: "aa", provider: .apns, now: stale.addingTimeInterval(60)))
        #expect(second.outcome.label == "retry")
        #expect(adapter.tokens.mintedCount == 2)
        let (third, _) = try send(pushEnvelope(token: "aa", provider: .apns, now: now))
        #expect(third.outcome.label == "delivered")
        let jwts = apns.requests.compactMap { $0.header("authorization") }
        #expect(Set(jwts).count == 3)
    }

    /// herald's own key, topic or environment: refused (the pass stops calling APNs, rows wait), with what to fix.
    @Test func configurationErrorsAreRefusalsWithWhatToFix() throws {
        let wrongTopic = try APNsAdapter(keyPEM: apns.keyPEM, keyId: apns.keyId, teamId: apns.teamId,
                                         topic: "com.example.other", baseURL: apns.baseURL)
        let (topic, _) = try send(pushEnvelope(token: "aa", provider: .apns), with: wrongTopic)
        guard case .refused(let code, let message) = topic.outcome else {
            Issue.record("expected refused, got \(topic.outcome)")
            return
        }
        #expect(code == "BadTopic")
        #expect(message.contains("APNS_TOPIC"))

        // Signed by another key: InvalidProviderToken.
        let other = try FakeAPNs(certificates: certificates)
        defer { other.shutdown() }
        let wrongKey = try APNsAdapter(keyPEM: other.keyPEM, keyId: apns.keyId, teamId: apns.teamId,
                                       topic: apns.topic, baseURL: apns.baseURL)
        let (key, _) = try send(pushEnvelope(token: "aa", provider: .apns), with: wrongKey)
        #expect(key.outcome.code == "InvalidProviderToken")
        #expect(key.outcome.isRefused)
        #expect(key.outcome.message?.contains("APNS_KEY_ID") == true)
        expectNoSecrets(key.outcome, secrets + [other.keyPEM])

        // Both spellings of the environment mismatch.
        apns.script("env1", .error(403, "BadEnvironmentKeyIdInToken"))
        apns.script("env2", .error(403, "BadEnvironmentKeyInToken"))
        for token in ["env1", "env2"] {
            let (env, _) = try send(pushEnvelope(token: token, provider: .apns))
            #expect(env.outcome.isRefused)
            #expect(env.outcome.message?.contains("APNS_ENV") == true)
        }
        apns.script("large", .error(413, "PayloadTooLarge"))
        #expect(try send(pushEnvelope(token: "large", provider: .apns)).0.outcome.code == "PayloadTooLarge")
    }

    @Test func timeoutRetries() throws {
        apns.script("slow", .delay(3))
        var quick = adapter
        quick.timeout = 0.5
        let (classified, _) = try send(pushEnvelope(token: "slow", provider: .apns), with: quick)
        #expect(classified.outcome == .retry(after: nil, code: "timeout", message: "apns: request timed out"))
    }

    @Test func connectionRefusedRetries() throws {
        let closed = try APNsAdapter(keyPEM: apns.keyPEM, keyId: apns.keyId, teamId: apns.teamId,
                                     topic: apns.topic, baseURL: try closedBaseURL())
        let (classified, _) = try send(pushEnvelope(token: "aa", provider: .apns), with: closed)
        #expect(classified.outcome == .retry(after: nil, code: "connection_refused", message: "apns: connection refused"))
    }

    @Test func malformedErrorBodiesAreReadable() throws {
        apns.script("html", .raw(.text(400, "<html>Bad Request</html>")))
        apns.script("proxy", .raw(.text(502, "upstream connect error")))
        apns.script("weird", .raw(.json(400, #"{"reason":"SomethingNew"}"#)))
        let (html, _) = try send(pushEnvelope(token: "html", provider: .apns))
        #expect(html.outcome == .permanent(code: "http_400",
                                           message: "APNs answered 400 without a JSON reason: <html>Bad Request</html>"))
        let (proxy, _) = try send(pushEnvelope(token: "proxy", provider: .apns))
        #expect(proxy.outcome.label == "retry")
        #expect(proxy.outcome.code == "http_502")
        let (weird, _) = try send(pushEnvelope(token: "weird", provider: .apns))
        #expect(weird.outcome == .permanent(code: "SomethingNew", message: "APNs answered 400 SomethingNew"))
    }

    @Test(arguments: ["en", "ar"])
    func longBodiesAreFittedUnder4KB(locale: String) throws {
        let sentence = locale == "ar" ? "نمط النوم لديك تغير خلال الأسبوع الماضي، افتح التطبيق للتفاصيل. "
                                       : "Your sleep pattern changed over the past week; open the app. "
        let long = String(repeating: sentence, count: 200)
        let envelope = pushEnvelope(token: "aa", provider: .apns, body: long)
        let (classified, _) = try send(envelope)
        #expect(classified.outcome.label == "delivered")
        let request = try #require(apns.requests.last)
        #expect(request.body.count <= 4096)
        #expect(request.body.count > 3900)
        let aps = try #require(try jsonObject(request.body)["aps"] as? [String: Any])
        let body = try #require((aps["alert"] as? [String: Any])?["body"] as? String)
        #expect(body.hasSuffix("…"))
        #expect(long.hasPrefix(String(body.dropLast())))
    }

    @Test func malformedKeysAndSettingsThrowClearErrors() throws {
        func message(_ body: () throws -> Void) -> String {
            do { try body(); return "" } catch { return "\(error)" }
        }
        let notPEM = message { _ = try APNsAdapter(keyPEM: "hello", keyId: "K", teamId: "T", topic: "t") }
        #expect(notPEM.contains("APNS_KEY_FILE"))
        // A truncated PEM (not a key): the markers are assembled so no file holds a private-key header.
        let marker = "PRIVATE" + " KEY-----"
        let broken = "-----BEGIN \(marker)\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END \(marker)\n"
        let bad = message { _ = try APNsAdapter(keyPEM: broken, keyId: "K", teamId: "T", topic: "t") }
        #expect(bad.contains("not a valid EC P-256 private key"))
        #expect(!bad.contains("MIGHAgEA"))
        #expect(message { _ = try APNsAdapter(keyPEM: apns.keyPEM, keyId: "", teamId: "T", topic: "t") }.contains("APNS_KEY_ID"))
        #expect(message { _ = try APNsAdapter(keyPEM: apns.keyPEM, keyId: "K", teamId: "T", topic: "") }.contains("APNS_TOPIC"))
        let production = try APNsAdapter(keyPEM: apns.keyPEM, keyId: "K", teamId: "T", topic: "t")
        #expect(production.baseURL == "https://api.push.apple.com")
        let sandbox = try APNsAdapter(keyPEM: apns.keyPEM, keyId: "K", teamId: "T", topic: "t", environment: .sandbox)
        #expect(sandbox.baseURL == "https://api.sandbox.push.apple.com")
    }

    @Test func fakeRefusesWhatAppleRefuses() throws {
        let base = try adapter.request(for: pushEnvelope(token: "aa", provider: .apns))
        func status(_ change: (inout HTTPRequest) -> Void) throws -> (Int, String) {
            var request = base
            change(&request)
            let response = try #require(transport.perform(request).success)
            return (response.status, response.text)
        }
        #expect(try status { $0.headers.removeAll { $0.0 == "authorization" } } == (403, #"{"reason":"MissingProviderToken"}"#))
        #expect(try status { $0.headers.removeAll { $0.0 == "apns-topic" } } == (400, #"{"reason":"MissingTopic"}"#))
        #expect(try status { $0.body = Array(repeating: UInt8(ascii: " "), count: 4097) } == (413, #"{"reason":"PayloadTooLarge"}"#))
        #expect(try status { $0.url = apns.baseURL + "/3/other/aa" } == (404, #"{"reason":"BadPath"}"#))
        #expect(try status { $0.version = .http1_1 }.0 == 505)
        #expect(try status { _ in } .0 == 200)
    }
}
