import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// TwilioAdapter through the real transport against FakeTwilio over TLS.
@Suite(.serialized)
struct TwilioAdapterTests {
    static let sid = "AC0123456789abcdef0123456789abcdef"
    static let authToken = "twilio-secret-auth-token-9a8b7c"
    static let from = "+15005550006"

    func adapter(_ fake: FakeTwilio, token: String = authToken, from: String? = from,
                 service: String? = nil) throws -> TwilioAdapter {
        try TwilioAdapter(accountSid: Self.sid, authToken: token, from: from, messagingServiceSid: service,
                          baseURL: fake.baseURL)
    }

    func send(_ adapter: TwilioAdapter, _ rig: MessagingRig, to: String, body: String = "Time for your evening walk",
              title: String = "Reminder") throws -> ClassifiedResponse {
        let envelope = messagingEnvelope(provider: .twilio, address: to, title: title, body: body)
        return adapter.classify(rig.transport.perform(try adapter.request(for: envelope)), now: Date())
    }

    @Test func sendsAFormEncodedMessage() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeTwilio(tls: rig.certificates, accountSid: Self.sid, authToken: Self.authToken)
        defer { rig.closeTransport(); fake.shutdown() }

        let result = try send(try adapter(fake), rig, to: "+14155552671", body: "Time for your walk & stretch = 10 min")

        #expect(result.httpStatus == 201)
        let sid = try #require(result.outcome.messageId)
        #expect(sid.hasPrefix("SM") && sid.count == 34)
        let form = try #require(fake.accepted.first)
        #expect(form["To"] == "+14155552671")
        #expect(form["From"] == Self.from)
        #expect(form["MessagingServiceSid"] == nil)
        #expect(form["Body"] == "Reminder: Time for your walk & stretch = 10 min")

        let viaService = try send(try adapter(fake, from: nil, service: "MG0123456789abcdef0123456789abcdef"), rig,
                                  to: "+14155552671")
        #expect(viaService.outcome.messageId != nil)
        #expect(fake.accepted.last?["MessagingServiceSid"] == "MG0123456789abcdef0123456789abcdef")
        #expect(fake.accepted.last?["From"] == nil)
    }

    @Test func exactlyOneSender() throws {
        #expect(throws: AdapterError.self) {
            try TwilioAdapter(accountSid: Self.sid, authToken: Self.authToken, from: nil, messagingServiceSid: nil)
        }
        #expect(throws: AdapterError.self) {
            try TwilioAdapter(accountSid: Self.sid, authToken: Self.authToken, from: Self.from, messagingServiceSid: "MG1")
        }
        #expect(throws: AdapterError.self) {
            try TwilioAdapter(accountSid: Self.sid, authToken: Self.authToken, from: "", messagingServiceSid: " ")
        }
        let ok = try TwilioAdapter(accountSid: Self.sid, authToken: Self.authToken, from: Self.from,
                                   messagingServiceSid: "", baseURL: nil)
        #expect(ok.url == "https://api.twilio.com/2010-04-01/Accounts/\(Self.sid)/Messages.json")
    }

    @Test func errorClasses() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeTwilio(tls: rig.certificates, accountSid: Self.sid, authToken: Self.authToken)
        defer { rig.closeTransport(); fake.shutdown() }
        let twilio = try adapter(fake)
        fake.fail(to: "+15555550101", code: 21610, message: "Attempt to send to unsubscribed recipient")
        fake.fail(to: "+15555550102", code: 21614, message: "'To' number is not a valid mobile number")
        fake.fail(to: "+15555550103", code: 21408, message: "Permission to send an SMS has not been enabled for the region indicated by the 'To' number")
        fake.fail(to: "+15555550104", code: 21635, message: "'To' number cannot be a landline")
        fake.fail(to: "+15555550105", code: 30410, message: "Something else")

        let stop = try send(twilio, rig, to: "+15555550101").outcome
        #expect(stop == .destinationInvalid(code: "21610", message: "twilio 21610: Attempt to send to unsubscribed recipient"))
        let invalid = try send(twilio, rig, to: "5551234").outcome       // not E.164: the fake answers 21211
        #expect(invalid.label == "destination_invalid" && invalid.code == "21211")
        #expect(try send(twilio, rig, to: "+15555550102").outcome.code == "21614")
        #expect(try send(twilio, rig, to: "+15555550104").outcome.label == "destination_invalid")
        let geo = try send(twilio, rig, to: "+15555550103").outcome
        #expect(geo.label == "permanent" && geo.code == "21408" && geo.message!.contains("geo permission"))
        let other = try send(twilio, rig, to: "+15555550105").outcome
        #expect(other == .permanent(code: "30410", message: "twilio 30410: Something else"))

        fake.enqueue(FakeTwilio.error(429, code: 20429, message: "Too Many Requests"))
        var limited = FakeTwilio.error(429, code: 20429, message: "Too Many Requests")
        limited.headers.append(("retry-after", "5"))
        fake.enqueue(limited)
        fake.enqueue(.text(500, "<html>Internal Server Error</html>"))
        let r1 = try send(twilio, rig, to: "+14155552671").outcome
        #expect(r1.label == "retry" && r1.code == "20429" && r1.retryAfter == nil)
        let r2Answer = try send(twilio, rig, to: "+14155552671")
        let r2 = r2Answer.outcome
        #expect(r2.retryAfter == 5)
        #expect(r2Answer.throttle == .provider(wait: 5), "20429 is about the account: provider-wide")
        let r3 = try send(twilio, rig, to: "+14155552671").outcome
        #expect(r3.label == "retry" && r3.code == "http_500" && r3.message!.contains("Internal Server Error"))

        // Wrong token: 20003, with what to fix, without the token.
        let wrong = try adapter(fake, token: "twilio-wrong-token-1111")
        let denied = try send(wrong, rig, to: "+14155552671").outcome
        #expect(denied.isRefused && denied.code == "20003" && denied.message!.contains("TWILIO_AUTH_TOKEN"))
        expectNoSecret([stop, invalid, geo, other, r1, r2, r3, denied], [Self.authToken, "twilio-wrong-token-1111"])
    }

    @Test func longArabicAndEmojiBodyIsCutOnACharacterBoundary() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeTwilio(tls: rig.certificates, accountSid: Self.sid, authToken: Self.authToken)
        defer { rig.closeTransport(); fake.shutdown() }
        let unit = "اجتماع قادم 👨‍👩‍👧‍👦🇸🇦 "
        let long = String(String(repeating: unit, count: 200).prefix(2000))
        #expect(long.count == 2000)

        let result = try send(try adapter(fake), rig, to: "+966501234567", body: long, title: "")

        #expect(result.outcome.messageId != nil, "\(result.outcome)")
        let body = try #require(fake.accepted.first?["Body"])
        #expect(body.utf16.count <= 1600)
        #expect(body.hasSuffix("…"))
        let kept = String(body.dropLast())
        #expect(long.hasPrefix(kept))
        #expect(Array(kept) == Array(long.prefix(kept.count)))     // whole characters: no split family or flag
        #expect(kept.utf16.count > 1500)
    }

    @Test func malformedTimeoutAndRefused() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeTwilio(tls: rig.certificates, accountSid: Self.sid, authToken: Self.authToken)
        defer { rig.closeTransport(); fake.shutdown() }
        var twilio = try adapter(fake)

        fake.enqueue(.text(400, "<html>Bad gateway config</html>"))
        let malformed = try send(twilio, rig, to: "+14155552671").outcome
        #expect(malformed == .permanent(code: "http_400", message: "twilio answered 400: <html>Bad gateway config</html>"))

        twilio.timeout = 0.5
        fake.enqueue(.json(201, #"{"sid":"SMlate"}"#, delay: 3))
        let slow = try send(twilio, rig, to: "+14155552671").outcome
        #expect(slow.label == "retry" && slow.code == "timeout")

        let closed = try TwilioAdapter(accountSid: Self.sid, authToken: Self.authToken, from: Self.from,
                                       messagingServiceSid: nil, baseURL: try rig.closedBaseURL())
        let refused = try send(closed, rig, to: "+14155552671").outcome
        #expect(refused.label == "retry" && refused.code == "connection_refused")
        expectNoSecret([malformed, slow, refused], [Self.authToken])
    }
}
