import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// WhatsAppAdapter through the real transport against FakeWhatsApp over TLS.
@Suite(.serialized)
struct WhatsAppAdapterTests {
    static let token = "EAAG-whatsapp-secret-token-77e1"
    static let phoneId = "106540352242922"

    func send(_ adapter: WhatsAppAdapter, _ rig: MessagingRig, to: String, kind: String = "reminder",
              locale: String = "en", body: String = "Time for your evening walk") throws -> ClassifiedResponse {
        let envelope = messagingEnvelope(provider: .whatsapp, address: to, kind: kind, body: body, locale: locale)
        return adapter.classify(rig.transport.perform(try adapter.request(for: envelope)), now: Date())
    }

    /// Meta's language codes have an underscore (pt_BR); a title's "\r\n" (one Character in Swift) or a
    /// U+2028 does not reach the template parameter, which may hold no newline.
    @Test func languageCodesAndParameterText() throws {
        let rendered = RenderedNotification(title: "Dose\r\ndue", body: "Take\u{2028}it\u{000B}now\u{00A0}\u{00A0}\u{00A0}\u{00A0}\u{00A0}ok")
        let text = WhatsAppAdapter.parameterText(for: rendered)
        #expect(!text.contains(where: { $0.isNewline }), "\(text.debugDescription)")
        #expect(!text.contains("     "))
        let adapter = try WhatsAppAdapter(token: "t", phoneNumberId: "1", baseURL: "https://graph.example")
        var envelope = messagingEnvelope(provider: .whatsapp, address: "+14155552671", locale: "pt-BR")
        envelope.destination.locale = nil
        #expect(adapter.template(for: envelope).language == "pt_BR")
    }

    @Test func parseTemplates() throws {
        let parsed = try WhatsAppAdapter.parseTemplates([
            "WHATSAPP_TEMPLATE_PATTERN_ALERT": "pattern_alert_v2:en_US",
            "WHATSAPP_TEMPLATE_REMINDER": "reminder_v1",
            "WHATSAPP_TOKEN": "ignored",
            "PATH": "/usr/bin",
        ])
        #expect(parsed.count == 2)
        #expect(parsed["pattern_alert"]?.name == "pattern_alert_v2")
        #expect(parsed["pattern_alert"]?.language == "en_US")
        #expect(parsed["reminder"]?.name == "reminder_v1")
        #expect(parsed["reminder"]?.language == "")

        for (variable, value) in [("WHATSAPP_TEMPLATE_PROMPT", "Bad Name:en"), ("WHATSAPP_TEMPLATE_PROMPT", "a:b:c"),
                                  ("WHATSAPP_TEMPLATE_PROMPT", ":en"), ("WHATSAPP_TEMPLATE_PROMPT", "p:"),
                                  ("WHATSAPP_TEMPLATE_BIRTHDAY", "birthday:en")] {
            do {
                _ = try WhatsAppAdapter.parseTemplates([variable: value])
                Issue.record("\(variable)=\(value) accepted")
            } catch let error as AdapterError {
                #expect(error.description.contains(variable), "\(error)")
            }
        }
    }

    @Test func sendsTheTemplateOfEachKind() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeWhatsApp(tls: rig.certificates, token: Self.token, phoneNumberId: Self.phoneId,
                                    approvedTemplates: ["pattern_alert_v2", "reminder_v1", "herald_prompt"])
        defer { rig.closeTransport(); fake.shutdown() }
        let templates = try WhatsAppAdapter.parseTemplates([
            "WHATSAPP_TEMPLATE_PATTERN_ALERT": "pattern_alert_v2:en_US",
            "WHATSAPP_TEMPLATE_REMINDER": "reminder_v1",
        ])
        let wa = try WhatsAppAdapter(token: Self.token, phoneNumberId: Self.phoneId, templates: templates,
                                     baseURL: fake.baseURL)

        let alert = try send(wa, rig, to: "+14155552671", kind: "pattern_alert", body: "Sleep is down\n\nOpen the app")
        let reminder = try send(wa, rig, to: "+966501234567", kind: "reminder", locale: "ar", body: "حان وقت المشي")
        let prompt = try send(wa, rig, to: "+14155552671", kind: "prompt")

        for r in [alert, reminder, prompt] {
            #expect(r.httpStatus == 200)
            #expect(r.outcome.messageId?.hasPrefix("wamid.") == true, "\(r.outcome)")
        }
        let sent = fake.sent
        #expect(sent.map(\.name) == ["pattern_alert_v2", "reminder_v1", "herald_prompt"])
        #expect(sent.map(\.language) == ["en_US", "ar", "en"])
        #expect(sent[0].parameters == ["Reminder: Sleep is down Open the app"])
        #expect(sent[1].parameters == ["Reminder: حان وقت المشي"])
        #expect(sent[1].to == "+966501234567")
        let request = try #require(fake.server.requests.first)
        #expect(request.path == "/v21.0/\(Self.phoneId)/messages")
        let body = try jsonBody(request)
        #expect(body["messaging_product"]?.stringValue == "whatsapp")
        #expect(body["type"]?.stringValue == "template")
    }

    @Test func errorClasses() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeWhatsApp(tls: rig.certificates, token: Self.token, phoneNumberId: Self.phoneId)
        defer { rig.closeTransport(); fake.shutdown() }
        let wa = try WhatsAppAdapter(token: Self.token, phoneNumberId: Self.phoneId, baseURL: fake.baseURL)
        fake.fail(to: "+15555550101", code: 131026, message: "Message Undeliverable.")
        fake.fail(to: "+15555550102", code: 130429, message: "Rate limit hit", status: 429)
        fake.fail(to: "+15555550103", code: 131056, message: "(Business Account, Consumer Account) pair rate limit hit")
        fake.fail(to: "+15555550104", code: 131000, message: "Something went wrong", status: 500)
        fake.fail(to: "+15555550105", code: 368, message: "Temporarily blocked for policies violations", status: 403)
        fake.fail(to: "+15555550106", code: 100, message: "Invalid parameter")
        fake.fail(to: "+15555550107", code: 131047, message: "Re-engagement message")
        fake.fail(to: "+15555550108", code: 132001, message: "Template name does not exist in the translation")
        fake.fail(to: "+15555550109", code: 2, message: "Service temporarily unavailable", status: 503)
        fake.fail(to: "+15555550110", code: 131031, message: "Business Account locked", status: 403)

        func outcome(_ n: Int) throws -> DeliveryOutcome { try send(wa, rig, to: "+155555501\(String(format: "%02d", n))").outcome }
        let gone = try outcome(1)
        #expect(gone.label == "destination_invalid" && gone.code == "131026")
        #expect(try outcome(2).label == "retry")
        #expect(try outcome(3).label == "retry")
        #expect(try outcome(4).label == "retry")
        let blocked = try outcome(5)
        #expect(blocked.isRefused && blocked.code == "368")
        #expect(try outcome(6) == .permanent(code: "100", message: "whatsapp 100: (#100) Invalid parameter"))
        #expect(try outcome(7).label == "permanent")
        let template = try outcome(8)
        #expect(template.label == "permanent" && template.message!.contains("WHATSAPP_TEMPLATE_"))
        let down = try outcome(9)
        #expect(down.label == "retry" && down.code == "2")
        #expect(try outcome(10).isRefused)

        fake.enqueue(FakeWhatsApp.error(429, code: 130429, message: "Rate limit hit"))
        var limited = FakeWhatsApp.error(429, code: 130429, message: "Rate limit hit")
        limited.headers.append(("retry-after", "12"))
        fake.enqueue(limited)
        #expect(try outcome(0).retryAfter == nil)
        #expect(try outcome(0).retryAfter == 12)

        // Whom a "slow down" is about: 130429 is the business number's throughput (every message we send
        // goes out from it), 131056 the pair rate to one recipient.
        #expect(try send(wa, rig, to: "+15555550102").throttle == .provider(wait: nil))
        #expect(try send(wa, rig, to: "+15555550103").throttle == .destination(wait: nil))
        fake.enqueue(limited)
        #expect(try send(wa, rig, to: "+14155552671").throttle == .provider(wait: 12))
        var pair = FakeWhatsApp.error(400, code: 131056, message: "(Business Account, Consumer Account) pair rate limit hit")
        pair.headers.append(("retry-after", "6"))
        fake.enqueue(pair)
        #expect(try send(wa, rig, to: "+14155552671").throttle == .destination(wait: 6))
        #expect(try send(wa, rig, to: "+15555550101").throttle == nil)

        // A wrong token: 190, refused, naming WHATSAPP_TOKEN and not quoting the token.
        let wrong = try WhatsAppAdapter(token: "EAAG-wrong-token-2222", phoneNumberId: Self.phoneId, baseURL: fake.baseURL)
        let denied = try send(wrong, rig, to: "+14155552671").outcome
        #expect(denied.isRefused && denied.code == "190" && denied.message!.contains("WHATSAPP_TOKEN"))
        expectNoSecret([gone, blocked, template, down, denied], [Self.token, "EAAG-wrong-token-2222"])
    }

    @Test func malformedTimeoutAndRefused() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeWhatsApp(tls: rig.certificates, token: Self.token, phoneNumberId: Self.phoneId)
        defer { rig.closeTransport(); fake.shutdown() }
        var wa = try WhatsAppAdapter(token: Self.token, phoneNumberId: Self.phoneId, baseURL: fake.baseURL)

        fake.enqueue(.text(502, "<html>Bad Gateway</html>"))
        let malformed = try send(wa, rig, to: "+14155552671").outcome
        #expect(malformed == .retry(after: nil, code: "http_502", message: "whatsapp answered 502: <html>Bad Gateway</html>"))
        fake.enqueue(.json(400, #"{"error":"nope"}"#))
        let odd = try send(wa, rig, to: "+14155552671").outcome
        #expect(odd.label == "permanent" && odd.code == "http_400" && odd.message!.contains("nope"))

        wa.timeout = 0.5
        fake.enqueue(.json(200, "{}", delay: 3))
        #expect(try send(wa, rig, to: "+14155552671").outcome.code == "timeout")

        let closed = try WhatsAppAdapter(token: Self.token, phoneNumberId: Self.phoneId, baseURL: try rig.closedBaseURL())
        let refused = try send(closed, rig, to: "+14155552671").outcome
        #expect(refused.label == "retry" && refused.code == "connection_refused")
        expectNoSecret([malformed, odd, refused], [Self.token])
        #expect(throws: AdapterError.self) { try WhatsAppAdapter(token: Self.token, phoneNumberId: "abc") }
    }
}
