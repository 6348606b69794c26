import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// Provider answers that used to trap or to put unstorable text into `last_error`.
@Suite struct HostileAnswerTests {
    static let now = Date(timeIntervalSince1970: 1_769_310_000)

    static func response(_ status: Int, _ body: String = "", headers: [(String, String)] = []) -> Result<HTTPResponse, TransportError> {
        .success(HTTPResponse(status: status, headers: headers, body: Array(body.utf8)))
    }

    @Test func apnsUnregisteredWithATimestampOfAnySize() throws {
        let apns = try APNsAdapter(keyPEM: TestKeys.apnsKeyPEM(), keyId: "ABC123DEFG", teamId: "DEF123GHIJ",
                                   topic: "com.example.herald", baseURL: "https://127.0.0.1:9")
        for ts in ["1e300", "-1e300", "1e20", "\"nan\"", "\"inf\"", "-1", "9223372036854775807"] {
            let c = apns.classify(Self.response(410, #"{"reason":"Unregistered","timestamp":\#(ts)}"#), now: Self.now)
            #expect(c.outcome.label == "destination_invalid")
            #expect(c.outcome.message?.contains("since") == false, "\(ts): \(c.outcome.message ?? "")")
        }
        let c = apns.classify(Self.response(410, #"{"reason":"Unregistered","timestamp":1769310000000}"#), now: Self.now)
        #expect(c.outcome.message?.contains("(since 2026-01-25T03:00:00.000000Z)") == true)
    }

    /// An APNs answer that echoes the provider token (JWT) does not carry it into last_error, nor one
    /// dropped after ExpiredProviderToken while other answers were still on their way.
    @Test func apnsAnswersEchoingTheJWTAreRedacted() throws {
        let apns = try APNsAdapter(keyPEM: TestKeys.apnsKeyPEM(), keyId: "ABC123DEFG", teamId: "DEF123GHIJ",
                                   topic: "com.example.herald", baseURL: "https://127.0.0.1:9")
        let request = try apns.request(for: pushEnvelope(token: "aa", provider: .apns, now: Self.now))
        let jwt = try #require(request.header("authorization")?.components(separatedBy: " ").last)
        let echoes = [Self.response(400, #"{"reason":"Bad \#(jwt)"}"#), Self.response(502, "bearer \(jwt)")]
        for echo in echoes { expectNoSecrets(apns.classify(echo, now: Self.now).outcome, [jwt]) }
        #expect(apns.classify(Self.response(403, #"{"reason":"ExpiredProviderToken"}"#), now: Self.now).outcome.label == "retry")
        for echo in echoes { expectNoSecrets(apns.classify(echo, now: Self.now).outcome, [jwt]) }
    }

    /// APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC read from a file or a Kubernetes secret often end in a
    /// newline: it must not reach the JWT's kid and iss, nor apns-topic.
    @Test func apnsSettingsLoseTheirTrailingNewline() throws {
        let apns = try APNsAdapter(keyPEM: TestKeys.apnsKeyPEM(), keyId: "ABC123DEFG\n", teamId: "\tDEF123GHIJ\r\n",
                                   topic: "com.example.herald\n", baseURL: "https://127.0.0.1:9")
        #expect(apns.tokens.keyId == "ABC123DEFG")
        #expect(apns.tokens.teamId == "DEF123GHIJ")
        #expect(apns.topic == "com.example.herald")
        let jwt = try apns.tokens.token(now: Self.now)
        let parts = jwt.split(separator: ".").map { String($0) }
        func decoded(_ part: String) -> String {
            var b64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while b64.count % 4 != 0 { b64 += "=" }
            return String(decoding: Data(base64Encoded: b64) ?? Data(), as: UTF8.self)
        }
        #expect(decoded(parts[0]).contains(#""kid":"ABC123DEFG""#), "\(decoded(parts[0]))")
        #expect(decoded(parts[1]).contains(#""iss":"DEF123GHIJ""#), "\(decoded(parts[1]))")
    }

    @Test func sendGridRateLimitResetOfAnySize() throws {
        let sg = try SendGridAdapter(apiKey: "SG.key", from: "herald@example.com", baseURL: "https://127.0.0.1:9")
        func after(_ reset: String, retryAfter: String? = nil) -> Double? {
            var headers = [("x-ratelimit-reset", reset)]
            if let retryAfter { headers.append(("retry-after", retryAfter)) }
            guard case .retry(let a, _, _) = sg.classify(Self.response(429, headers: headers), now: Self.now).outcome else { return -1 }
            return a
        }
        #expect(after("1e300") == Backoff.retryAfterCap)
        #expect(after(String(Int(Self.now.timeIntervalSince1970) + 90)) == 90)
        for garbage in ["inf", "nan", "-1", "-inf", "soon"] {
            #expect(after(garbage) == nil, "\(garbage)")
            #expect(after(garbage, retryAfter: "30") == 30, "\(garbage) falls back to Retry-After")
        }
        #expect(after("x", retryAfter: "99999999999999999999") == Backoff.retryAfterCap)
    }

    @Test func twilioAndWhatsAppCodesOfAnySize() throws {
        let twilio = try TwilioAdapter(accountSid: "AC1", authToken: "tok-secret", from: "+15005550006",
                                       messagingServiceSid: nil, baseURL: "https://127.0.0.1:9")
        let c = twilio.classify(Self.response(400, #"{"code":1e300,"message":"huge"}"#), now: Self.now)
        #expect(c.outcome == .permanent(code: "http_400", message: #"twilio answered 400: {"code":1e300,"message":"huge"}"#))
        let wa = try WhatsAppAdapter(token: "wa-secret", phoneNumberId: "123", baseURL: "https://127.0.0.1:9")
        let w = wa.classify(Self.response(500, #"{"error":{"code":-1e300,"message":"x"}}"#), now: Self.now)
        #expect(w.outcome.label == "retry")
    }

    @Test func bodiesWithNulAndInvalidUTF8BecomeReadableMessages() throws {
        let body: [UInt8] = Array("oops\u{0}\r\nline\u{1B}[1m".utf8) + [0xFF, 0xFE] + Array("\u{85}end\r".utf8)
        let sg = try SendGridAdapter(apiKey: "SG.key", from: "herald@example.com", baseURL: "https://127.0.0.1:9")
        let c = sg.classify(.success(HTTPResponse(status: 400, body: body)), now: Self.now)
        #expect(c.outcome.message == "sendgrid answered 400: oops\u{FFFD}\nline\u{FFFD}[1m\u{FFFD}\u{FFFD}\u{FFFD}end")
        // A JSON error whose message decodes to a NUL.
        let apns = try APNsAdapter(keyPEM: TestKeys.apnsKeyPEM(), keyId: "ABC123DEFG", teamId: "DEF123GHIJ",
                                   topic: "com.example.herald", baseURL: "https://127.0.0.1:9")
        let a = apns.classify(Self.response(400, #"{"reason":"Bad\u0000Thing"}"#), now: Self.now)
        #expect(a.outcome == .permanent(code: "Bad\u{FFFD}Thing", message: "APNs answered 400 Bad\u{FFFD}Thing"))
        // Long answers are cut on a character boundary.
        let long = String(repeating: "é", count: 5_000)
        let fcm = try FCMAdapter(serviceAccountJSON: TestKeys.serviceAccountJSON(), baseURL: "https://127.0.0.1:9")
        let f = fcm.classify(Self.response(400, #"{"error":{"status":"\#(long)","message":"\#(long)"}}"#), now: Self.now)
        #expect((f.outcome.code?.utf8.count ?? 0) <= 200 && (f.outcome.message?.utf8.count ?? 0) <= 1_000)
        #expect(f.outcome.message?.hasSuffix("…") == true)
        // SMTP servers' words and webhook receivers' answers too.
        let smtp = try SMTPAdapter(url: "smtp://u:p@127.0.0.1:9", from: "herald@example.com")
        let s = smtp.classify(.failure(.smtp(code: 550, command: .rcpt, message: "no\u{0}such user")), now: Self.now)
        #expect(s.outcome.message?.contains("no\u{FFFD}such user") == true)
        let hook = try WebhookAdapter(url: "https://127.0.0.1:9/h", secrets: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let h = hook.classify(.success(HTTPResponse(status: 400, body: body)), now: Self.now)
        #expect(h.outcome.message?.unicodeScalars.contains("\u{0}") == false)
    }

    @Test func expoReceiptsAndTicketsAreReadable() throws {
        let expo = try ExpoAdapter(accessToken: "expo-secret", baseURL: "https://127.0.0.1:9")
        let receipts = expo.classifyReceipts(Self.response(200, #"{"data":{"t1":{"status":"error","message":"dead\u0000 expo-secret","details":{"error":"Device\u0000NotRegistered"}}}}"#))
        #expect(receipts.receipt(for: "t1") == .error(code: "Device\u{FFFD}NotRegistered", message: "dead\u{FFFD} [redacted]"))
        let tickets = expo.classify(Self.response(200, #"{"data":[{"status":"ok","id":"tick\u0000et"}]}"#), count: 1, now: Self.now)
        #expect(tickets.first?.outcome == .delivered(messageId: "tick\u{FFFD}et"))
    }
}
