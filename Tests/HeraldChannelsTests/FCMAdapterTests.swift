import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// The FCM adapter through the real libcurl transport against FakeFCM (OAuth token endpoint and
/// messages:send) over TLS.
@Suite(.serialized)
final class FCMAdapterTests {
    let certificates: TestCertificates
    let fcm: FakeFCM
    /// Released before the fake shuts down: an open HTTP/2 connection would hold its shutdown up.
    private var client: HTTPTransport?
    var transport: HTTPTransport { client! }
    let adapter: FCMAdapter

    init() throws {
        certificates = try TestCertificates.make()
        fcm = try FakeFCM(certificates: certificates)
        client = try HTTPTransport(options: .init(caFile: certificates.caFile))
        adapter = try FCMAdapter(serviceAccountJSON: fcm.serviceAccountJSON, baseURL: fcm.baseURL, timeout: 5)
    }

    deinit {
        client = nil
        fcm.shutdown()
        certificates.remove()
    }

    func send(_ envelope: Envelope) throws -> ClassifiedResponse {
        try adapter.prepare(now: envelope.now, transport: transport)
        return adapter.classify(transport.perform(try adapter.request(for: envelope)), now: envelope.now)
    }

    var secrets: [String] {
        var s = [fcm.privateKeyPEM] + fcm.issuedTokens
        // The assertions sent to the token endpoint.
        for request in fcm.requests where request.path == "/token" {
            if let a = request.text.split(separator: "&").first(where: { $0.hasPrefix("assertion=") }) {
                s.append(String(a.dropFirst("assertion=".count)))
            }
        }
        return s
    }

    @Test func exchangesATokenThenSends() throws {
        let id = UUID()
        let alert = UUID()
        let envelope = pushEnvelope(token: "fcm-token-1", provider: .fcm, severity: .critical, id: id, alertStateId: alert)
        let classified = try send(envelope)
        #expect(classified.outcome == .delivered(messageId: "projects/herald-test/messages/0:1"))
        #expect(classified.httpStatus == 200)
        #expect(fcm.tokenExchanges == 1)

        let exchange = try #require(fcm.requests.first)
        #expect(exchange.path == "/token")
        #expect(exchange.header("content-type") == "application/x-www-form-urlencoded")
        #expect(exchange.text.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="))

        let request = try #require(fcm.requests.last)
        #expect(request.path == "/v1/projects/herald-test/messages:send")
        #expect(request.header("authorization") == "Bearer " + fcm.issuedTokens[0])
        let message = try #require(try jsonObject(request.body)["message"] as? [String: Any])
        #expect(message["token"] as? String == "fcm-token-1")
        let notification = try #require(message["notification"] as? [String: Any])
        #expect(notification["title"] as? String == "Sleep pattern")
        #expect(notification["body"] as? String == "Open the app for details.")
        let data = try #require(message["data"] as? [String: String])
        #expect(data["level"] == "7")
        #expect(data["queue_id"] == id.lowercased)
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["priority"] as? String == "HIGH")
        #expect(android["collapse_key"] as? String == "alert-" + alert.lowercased)
        let apns = try #require(message["apns"] as? [String: Any])
        #expect((apns["headers"] as? [String: String])?["apns-priority"] == "10")
        #expect((apns["headers"] as? [String: String])?["apns-collapse-id"] == "alert-" + alert.lowercased)
        let aps = try #require((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["badge"] as? Int == 3)
        #expect(aps["sound"] as? String == "default")
    }

    /// A row other than a pattern alert collapses under its own queue id, on Android and iOS alike.
    @Test func normalPriorityAndNonStringDataAreStringified() throws {
        let id = UUID()
        let envelope = pushEnvelope(token: "t", provider: .fcm, kind: .reminder, severity: nil, id: id, alertStateId: nil,
                                    data: ["n": 1.5, "flag": true, "obj": ["a": 1], "skip": nil, "from": "x",
                                           "google.x": "y"])
        #expect(try send(envelope).outcome.label == "delivered")
        let last = try #require(fcm.requests.last)
        let message = try #require(try jsonObject(last.body)["message"] as? [String: Any])
        #expect(message["data"] as? [String: String] == ["n": "1.5", "flag": "true", "obj": #"{"a":1}"#])
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["priority"] as? String == "NORMAL")
        #expect(android["collapse_key"] as? String == id.lowercased)
        let apns = try #require(message["apns"] as? [String: Any])
        #expect((apns["headers"] as? [String: String])?["apns-collapse-id"] == id.lowercased)
    }

    @Test func tokenIsCachedAndRefreshedNearExpiry() throws {
        let start = Date()
        for minutes in [0.0, 20, 54] {
            let now = start.addingTimeInterval(minutes * 60)
            fcm.setClock(now)
            #expect(try send(pushEnvelope(token: "t", provider: .fcm, now: now)).outcome.label == "delivered")
        }
        #expect(fcm.tokenExchanges == 1)
        #expect(adapter.account.exchangeCount == 1)

        // 3599 s tokens: within five minutes of expiry a new one is fetched before sending.
        let late = start.addingTimeInterval(56 * 60)
        fcm.setClock(late)
        #expect(try send(pushEnvelope(token: "t", provider: .fcm, now: late)).outcome.label == "delivered")
        #expect(fcm.tokenExchanges == 2)
        let sends = fcm.requests.filter { $0.path.hasSuffix("messages:send") }
        #expect(sends.last?.header("authorization") == "Bearer " + fcm.issuedTokens[1])
        #expect(Set(sends.compactMap { $0.header("authorization") }).count == 2)
    }

    @Test func unregisteredAndSenderMismatchAreDestinationInvalid() throws {
        fcm.script("gone", .fcmError(404, status: "NOT_FOUND", errorCode: "UNREGISTERED",
                                     message: "Requested entity was not found."))
        fcm.script("other", .fcmError(403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH",
                                      message: "SenderId mismatch"))
        let gone = try send(pushEnvelope(token: "gone", provider: .fcm))
        guard case .destinationInvalid(let code, let message) = gone.outcome else {
            Issue.record("expected destinationInvalid, got \(gone.outcome)")
            return
        }
        #expect(code == "UNREGISTERED")
        #expect(message.contains("Requested entity was not found."))
        #expect(gone.httpStatus == 404)
        let other = try send(pushEnvelope(token: "other", provider: .fcm))
        #expect(other.outcome.label == "destination_invalid")
        #expect(other.outcome.code == "SENDER_ID_MISMATCH")
        expectNoSecrets(gone.outcome, secrets)
        expectNoSecrets(other.outcome, secrets)
    }

    @Test func invalidArgumentIsPermanent() throws {
        fcm.script("malformed", .fcmError(400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                                          message: "The registration token is not a valid FCM registration token"))
        let classified = try send(pushEnvelope(token: "malformed", provider: .fcm))
        #expect(classified.outcome == .permanent(code: "INVALID_ARGUMENT",
            message: "FCM 400 INVALID_ARGUMENT: The registration token is not a valid FCM registration token"))
        fcm.script("auth", .fcmError(401, status: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR",
                                     message: "Auth error from APNS or Web Push Service"))
        let auth = try send(pushEnvelope(token: "auth", provider: .fcm))
        #expect(auth.outcome.label == "permanent")
        #expect(auth.outcome.code == "THIRD_PARTY_AUTH_ERROR")
        #expect(auth.outcome.message?.contains("Firebase console") == true)
        #expect(adapter.account.accessToken != nil, "a third-party auth error keeps the OAuth token")
    }

    @Test func quotaExceededRetriesAfterAtLeastAMinute() throws {
        fcm.script("hot", .fcmError(429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED",
                                    message: "Quota exceeded for quota metric 'Send requests'", headers: [("retry-after", "5")]))
        fcm.script("hotter", .fcmError(429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED",
                                       message: "Quota exceeded", headers: [("retry-after", "300")]))
        guard case .retry(let after, let code, _) = try send(pushEnvelope(token: "hot", provider: .fcm)).outcome else {
            Issue.record("expected retry")
            return
        }
        #expect(code == "QUOTA_EXCEEDED")
        #expect(after == 60)
        guard case .retry(let later, _, _) = try send(pushEnvelope(token: "hotter", provider: .fcm)).outcome else {
            Issue.record("expected retry")
            return
        }
        #expect(later == 300)
    }

    @Test func quotaScopeFollowsTheQuotaFailure() throws {
        fcm.script("device", .quotaExceeded(.device, retryAfter: 90))
        fcm.script("project", .quotaExceeded(.project, retryAfter: 90))
        fcm.script("topic", .quotaExceeded(.topic))
        // A project quota as seen in the wild (firebase-admin-go#719): no FcmError, no QuotaFailure.
        fcm.script("bare", .raw(.json(429, #"{"error":{"code":429,"message":"Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com'","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","domain":"googleapis.com","metadata":{"quota_limit":"SendsPerMinutePerProject"}}]}}"#)))
        let device = try send(pushEnvelope(token: "device", provider: .fcm))
        #expect(device.outcome.label == "retry" && device.outcome.code == "QUOTA_EXCEEDED")
        #expect(device.throttle == .destination(wait: 90), "one device's rate: only that token waits")
        #expect(try send(pushEnvelope(token: "project", provider: .fcm)).throttle == .provider(wait: 90))
        #expect(try send(pushEnvelope(token: "topic", provider: .fcm)).throttle == .provider(wait: 60))
        let bare = try send(pushEnvelope(token: "bare", provider: .fcm))
        #expect(bare.outcome.retryAfter == 60)
        #expect(bare.throttle == .provider(wait: 60))
    }

    @Test func unavailableHonoursRetryAfter() throws {
        fcm.script("down", .fcmError(503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE",
                                     message: "The service is currently unavailable.", headers: [("retry-after", "17")]))
        fcm.script("oops", .fcmError(500, status: "INTERNAL", errorCode: "INTERNAL", message: "Internal error encountered."))
        let down = try send(pushEnvelope(token: "down", provider: .fcm))
        #expect(down.outcome == .retry(after: 17, code: "UNAVAILABLE", message: "FCM 503 UNAVAILABLE: The service is currently unavailable."))
        #expect(down.throttle == .provider(wait: 17))
        let oops = try send(pushEnvelope(token: "oops", provider: .fcm))
        #expect(oops.outcome == .retry(after: nil, code: "INTERNAL", message: "FCM 500 INTERNAL: Internal error encountered."))
    }

    @Test func unauthenticatedDropsTheTokenAndRetries() throws {
        #expect(try send(pushEnvelope(token: "t", provider: .fcm)).outcome.label == "delivered")
        fcm.revokeAccessTokens()
        let envelope = pushEnvelope(token: "t", provider: .fcm)
        let refused = adapter.classify(transport.perform(try adapter.request(for: envelope)), now: envelope.now)
        guard case .retry(_, let code, let message) = refused.outcome else {
            Issue.record("expected retry, got \(refused.outcome)")
            return
        }
        #expect(code == "UNAUTHENTICATED")
        #expect(refused.httpStatus == 401)
        #expect(adapter.account.accessToken == nil)
        expectNoSecrets(refused.outcome, secrets)
        #expect(!message.contains("ya29."))
        #expect(throws: AdapterError.self) { try adapter.request(for: envelope) }

        // The next prepare fetches a new token and the send goes through.
        #expect(try send(envelope).outcome.label == "delivered")
        #expect(fcm.tokenExchanges == 2)
    }

    /// An FCM answer that echoes the OAuth access token does not carry it into last_error, nor the token
    /// a 401 just dropped (answers to requests sent with it may still arrive).
    @Test func answersEchoingTheAccessTokenAreRedacted() throws {
        #expect(try send(pushEnvelope(token: "t", provider: .fcm)).outcome.label == "delivered")
        let token = try #require(adapter.account.accessToken)
        func echo(_ status: Int) -> Result<HTTPResponse, TransportError> {
            .success(HTTPResponse(status: status, headers: [], body: Array(#"""
                {"error":{"code":\#(status),"message":"Request had invalid authentication credentials: Bearer \#(token)","status":"INVALID_ARGUMENT"}}
                """#.utf8)))
        }
        expectNoSecrets(adapter.classify(echo(400), now: Date()).outcome, [token])
        expectNoSecrets(adapter.classify(.success(HTTPResponse(status: 502, headers: [], body: Array("bearer \(token)".utf8))),
                                         now: Date()).outcome, [token])
        let refused = adapter.classify(.success(HTTPResponse(status: 401, headers: [], body: Array(#"""
            {"error":{"code":401,"message":"Bearer \#(token) expired","status":"UNAUTHENTICATED"}}
            """#.utf8))), now: Date())
        #expect(adapter.account.accessToken == nil)
        expectNoSecrets(refused.outcome, [token])
        expectNoSecrets(adapter.classify(echo(400), now: Date()).outcome, [token])
    }

    @Test func malformedErrorBodyIsReadable() throws {
        fcm.script("html", .raw(.text(502, "<html>Bad Gateway</html>")))
        fcm.script("text", .raw(.text(400, "nope")))
        let html = try send(pushEnvelope(token: "html", provider: .fcm))
        #expect(html.outcome == .retry(after: nil, code: "http_502", message: "FCM answered 502 without a google.rpc error: <html>Bad Gateway</html>"))
        #expect(try send(pushEnvelope(token: "text", provider: .fcm)).outcome.label == "permanent")
    }

    @Test(arguments: ["en", "ar"])
    func longBodiesAreFittedUnder4KB(locale: String) throws {
        let sentence = locale == "ar" ? "نمط النوم لديك تغير خلال الأسبوع الماضي، افتح التطبيق للتفاصيل. "
                                       : "Your sleep pattern changed over the past week; open the app. "
        let long = String(repeating: sentence, count: 200)
        #expect(try send(pushEnvelope(token: "t", provider: .fcm, body: long)).outcome.label == "delivered")
        let request = try #require(fcm.requests.last)
        #expect(request.body.count <= 4096)
        #expect(request.body.count > 3900)
        let message = try #require(try jsonObject(request.body)["message"] as? [String: Any])
        let body = try #require((message["notification"] as? [String: Any])?["body"] as? String)
        #expect(body.hasSuffix("…"))
        #expect(long.hasPrefix(String(body.dropLast())))
    }

    @Test func badServiceAccountJSONNamesTheField() throws {
        func message(_ json: String) -> String {
            do { _ = try FCMAdapter(serviceAccountJSON: json); return "" } catch { return "\(error)" }
        }
        let full = try #require(try JSONSerialization.jsonObject(with: Data(fcm.serviceAccountJSON.utf8)) as? [String: Any])
        func without(_ field: String, replacing value: Any? = nil) throws -> String {
            var copy = full
            copy[field] = value
            return String(decoding: try JSONSerialization.data(withJSONObject: copy), as: UTF8.self)
        }
        #expect(message("not json").contains("not a JSON object"))
        for field in ["project_id", "client_email", "private_key", "token_uri"] {
            let text = message(try without(field))
            #expect(text.contains("\"\(field)\""), "\(field): \(text)")
        }
        // A truncated PEM (not a key): the markers are assembled so no file holds a private-key header.
        let marker = "PRIVATE" + " KEY-----"
        let badKey = "-----BEGIN \(marker)\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\n-----END \(marker)\n"
        let keyMessage = message(try without("private_key", replacing: badKey))
        #expect(keyMessage.contains("\"private_key\" is not a valid RSA private key"))
        #expect(!keyMessage.contains("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"))
        #expect(message(try without("token_uri", replacing: "not a url")).contains("\"token_uri\""))
        #expect(message(try without("project_id", replacing: 42)).contains("\"project_id\""))
    }

    @Test func failedExchangeThrowsWithoutSecrets() throws {
        // A key the fake does not know: the real signature check fails with invalid_grant.
        let other = try FakeFCM(certificates: certificates)
        defer { other.shutdown() }
        var account = try #require(try JSONSerialization.jsonObject(with: Data(fcm.serviceAccountJSON.utf8)) as? [String: Any])
        account["private_key"] = other.privateKeyPEM
        let json = String(decoding: try JSONSerialization.data(withJSONObject: account), as: UTF8.self)
        let wrong = try FCMAdapter(serviceAccountJSON: json, baseURL: fcm.baseURL)
        var text = ""
        do { try wrong.prepare(now: Date(), transport: transport) } catch { text = "\(error)" }
        #expect(text == "FCM token exchange failed (400): invalid_grant: Invalid JWT Signature.")
        #expect(wrong.account.accessToken == nil)
        let assertion = fcm.requests.last?.text ?? ""
        #expect(!assertion.isEmpty)
        #expect(!text.contains("eyJ"))
        expectNoSecrets(.permanent(code: nil, message: text), [other.privateKeyPEM, fcm.privateKeyPEM])

        // The provider's own words for other failures; a transport failure names the endpoint only.
        fcm.scriptTokenEndpoint(.json(400, #"{"error":"invalid_scope","error_description":"Invalid OAuth scope."}"#))
        do { try adapter.prepare(now: Date(), transport: transport); Issue.record("expected a throw") }
        catch { #expect("\(error)" == "FCM token exchange failed (400): invalid_scope: Invalid OAuth scope.") }
        // An access token that cannot go into a header (a line break, a control character) is refused,
        // not cached to fail every request for its lifetime.
        for bad in [#"ya29.abc\r\nX-Injected: 1"#, #"ya29 abc"#, #"ya29.\u0000"#] {
            fcm.scriptTokenEndpoint(.json(200, #"{"access_token":"\#(bad)","expires_in":86400,"token_type":"Bearer"}"#))
            do { try adapter.prepare(now: Date().addingTimeInterval(7200), transport: transport); Issue.record("expected a throw for \(bad)") }
            catch { #expect("\(error)".contains("cannot go into a header")) }
        }
        fcm.scriptTokenEndpoint(nil)

        var closedAccount = account
        closedAccount["private_key"] = fcm.privateKeyPEM
        closedAccount["token_uri"] = try closedBaseURL() + "/token"
        let closed = try FCMAdapter(serviceAccountJSON: String(decoding: try JSONSerialization.data(withJSONObject: closedAccount), as: UTF8.self))
        do { try closed.prepare(now: Date(), transport: transport); Issue.record("expected a throw") }
        catch { #expect("\(error)".contains("connection refused")) }
    }
}
