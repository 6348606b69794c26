import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// SendGridAdapter through the real transport against FakeSendGrid over TLS.
@Suite(.serialized)
struct SendGridAdapterTests {
    static let apiKey = "SG.sendgrid-secret-api-key.5d4c3b"

    func send(_ adapter: SendGridAdapter, _ rig: MessagingRig, to: String = "member@example.com",
              locale: String = "en", body: String = "Time for your evening walk",
              id: UUID = UUID()) throws -> ClassifiedResponse {
        let envelope = messagingEnvelope(provider: .sendgrid, address: to, body: body, locale: locale, id: id)
        return adapter.classify(rig.transport.perform(try adapter.request(for: envelope)), now: Date())
    }

    @Test func sendsAndStoresTheMessageId() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeSendGrid(tls: rig.certificates, apiKey: Self.apiKey)
        defer { rig.closeTransport(); fake.shutdown() }
        let mail = try SendGridAdapter(apiKey: Self.apiKey, from: "Herald <no-reply@herald.example>", baseURL: fake.baseURL)
        let id = UUID()

        let result = try send(mail, rig, body: "Line one <b>&</b>\nline two", id: id)

        #expect(result.httpStatus == 202)
        let sent = try #require(fake.sent.first)
        #expect(result.outcome == .delivered(messageId: sent.messageId))
        #expect(sent.to == ["member@example.com"])
        #expect(sent.fromEmail == "no-reply@herald.example")
        #expect(sent.subject == "Reminder")
        #expect(sent.contentTypes == ["text/plain", "text/html"])
        #expect(sent.text.hasPrefix("Line one <b>&</b>\nline two"))
        #expect(sent.customArgs["notification_id"] == id.lowercased)
        #expect(sent.headers["X-Entity-Ref-ID"] == id.lowercased)
        let body = try jsonBody(try #require(fake.server.requests.first))
        #expect(body["from"]?["name"]?.stringValue == "Herald")
        guard case .array(let content)? = body["content"] else { Issue.record("no content"); return }
        let html = try #require(content[1]["value"]?.stringValue)
        #expect(html.contains("Line one &lt;b&gt;&amp;&lt;/b&gt;<br>line two"))

        _ = try send(mail, rig, locale: "ar", body: "حان وقت المشي")
        let arabic = try jsonBody(fake.server.requests[1])
        guard case .array(let arContent)? = arabic["content"] else { Issue.record("no content"); return }
        #expect(arContent[1]["value"]?.stringValue?.contains("dir=\"rtl\"") == true)
    }

    @Test func fromAddressForms() throws {
        let bare = try SendGridAdapter.parseAddress("a@b.example")
        #expect(bare.email == "a@b.example" && bare.name == nil)
        let named = try SendGridAdapter.parseAddress("\"Herald Team\" <a@b.example>")
        #expect(named.email == "a@b.example" && named.name == "Herald Team")
        for bad in ["", "Herald", "Herald <>", "a b@c.example"] {
            #expect(throws: AdapterError.self) { try SendGridAdapter(apiKey: Self.apiKey, from: bad) }
        }
        #expect(try SendGridAdapter(apiKey: Self.apiKey, from: "a@b.example").url == "https://api.sendgrid.com/v3/mail/send")
    }

    @Test func errorClasses() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeSendGrid(tls: rig.certificates, apiKey: Self.apiKey)
        defer { rig.closeTransport(); fake.shutdown() }
        let mail = try SendGridAdapter(apiKey: Self.apiKey, from: "no-reply@herald.example", baseURL: fake.baseURL)
        fake.fail(email: "bad@example.com", status: 400, message: "Does not contain a valid address.",
                  field: "personalizations.0.to.0.email")

        let invalid = try send(mail, rig, to: "bad@example.com").outcome
        #expect(invalid == .permanent(code: "http_400",
                                      message: "sendgrid answered 400: Does not contain a valid address. (field personalizations.0.to.0.email)"))

        // 429: retry when the limit resets (X-RateLimit-Reset, unix seconds), else Retry-After.
        let reset = Int(Date().timeIntervalSince1970) + 120
        fake.enqueue(FakeSendGrid.error(429, "too many requests", headers: [
            ("x-ratelimit-limit", "600"), ("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", String(reset))]))
        let limitedAnswer = try send(mail, rig)
        let limited = limitedAnswer.outcome
        #expect(limited.label == "retry" && limited.code == "http_429")
        let after = try #require(limited.retryAfter)
        #expect(after > 110 && after <= 120)
        // The API key's rate limit: every later send would get the same answer, so provider-wide.
        #expect(limitedAnswer.throttle == .provider(wait: after))
        fake.enqueue(FakeSendGrid.error(429, "too many requests", headers: [("retry-after", "9")]))
        let limited9 = try send(mail, rig)
        #expect(limited9.outcome.retryAfter == 9)
        #expect(limited9.throttle == .provider(wait: 9))

        fake.enqueue(FakeSendGrid.error(500, "internal server error"), .text(503, "Service Unavailable"))
        let r500 = try send(mail, rig).outcome
        #expect(r500 == .retry(after: nil, code: "http_500", message: "sendgrid answered 500: internal server error"))
        #expect(try send(mail, rig).outcome.label == "retry")

        fake.enqueue(FakeSendGrid.error(413, "content too large"))
        #expect(try send(mail, rig).outcome == .permanent(code: "http_413", message: "sendgrid answered 413: content too large"))
        fake.enqueue(FakeSendGrid.error(403, "access forbidden"))
        let forbidden = try send(mail, rig).outcome
        #expect(forbidden.isRefused && forbidden.message!.contains("SENDGRID_API_KEY"))

        let wrong = try SendGridAdapter(apiKey: "SG.wrong-key-3333", from: "no-reply@herald.example", baseURL: fake.baseURL)
        let denied = try send(wrong, rig).outcome
        #expect(denied.isRefused && denied.code == "http_401" && denied.message!.contains("SENDGRID_API_KEY"))
        expectNoSecret([invalid, limited, r500, forbidden, denied], [Self.apiKey, "SG.wrong-key-3333"])
    }

    @Test func malformedTimeoutAndRefused() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeSendGrid(tls: rig.certificates, apiKey: Self.apiKey)
        defer { rig.closeTransport(); fake.shutdown() }
        var mail = try SendGridAdapter(apiKey: Self.apiKey, from: "no-reply@herald.example", baseURL: fake.baseURL)

        fake.enqueue(.text(400, "<html>oops</html>"))
        let malformed = try send(mail, rig).outcome
        #expect(malformed == .permanent(code: "http_400", message: "sendgrid answered 400: <html>oops</html>"))

        mail.timeout = 0.5
        fake.enqueue(FakeResponse(status: 202, headers: [("x-message-id", "late")], delay: 3))
        #expect(try send(mail, rig).outcome.code == "timeout")

        let closed = try SendGridAdapter(apiKey: Self.apiKey, from: "no-reply@herald.example", baseURL: try rig.closedBaseURL())
        let refused = try send(closed, rig).outcome
        #expect(refused.label == "retry" && refused.code == "connection_refused")
        expectNoSecret([malformed, refused], [Self.apiKey])
    }
}
