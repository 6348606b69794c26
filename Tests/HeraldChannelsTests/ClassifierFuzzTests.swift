import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// Every provider's classifier, fed a thousand deterministic random answers: statuses 0…999 and
/// beyond, headers such as Retry-After and X-RateLimit-Reset with absurd values, bodies of random bytes,
/// NULs, invalid UTF-8, truncated or huge JSON, and JSON shaped like the provider's own with numbers of
/// any size. Nothing may trap, and every outcome must be storable and readable.
@Suite struct ClassifierFuzzTests {
    static let now = Date(timeIntervalSince1970: 1_769_310_000)   // 2026-01-25T03:00:00Z

    /// Messages are capped: whatever a provider sends, `last_error` stays short. These are the caps every
    /// classifier's answer goes through (`AdapterSupport.redact`): 1,000 UTF-8 bytes for a message, 200
    /// for a code or a message id.
    static let maxMessageBytes = 1_000
    static let maxCodeBytes = 200

    /// The outcome can be written to PostgreSQL and read by a person.
    static func expectWellFormed(_ c: ClassifiedResponse, _ what: @autoclosure () -> String,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        func readable(_ s: String?) -> Bool {
            guard let s else { return true }
            return s.unicodeScalars.allSatisfy { $0 == "\t" || $0 == "\n" || !($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) }
        }
        let o = c.outcome
        #expect(readable(o.message), "message not readable: \(String(describing: o.message?.debugDescription)) for \(what())", sourceLocation: sourceLocation)
        #expect((o.message?.utf8.count ?? 0) <= maxMessageBytes, "message too long for \(what())", sourceLocation: sourceLocation)
        #expect(readable(o.code), "code not readable: \(String(describing: o.code?.debugDescription))", sourceLocation: sourceLocation)
        #expect((o.code?.utf8.count ?? 0) <= maxCodeBytes, "code too long for \(what())", sourceLocation: sourceLocation)
        switch o {
        case .retry(let after?, _, _):
            #expect(after.isFinite && after >= 0 && after <= Backoff.retryAfterCap, "retry after \(after) for \(what())", sourceLocation: sourceLocation)
        case .delivered(let id?):
            #expect(readable(id) && id.utf8.count <= maxCodeBytes, "message id \(id.debugDescription)", sourceLocation: sourceLocation)
        default:
            break
        }
    }

    /// A provider answer: mostly an HTTP response shaped like `provider`'s, sometimes a transport failure.
    static func answer(_ fuzz: inout Fuzz, provider: Provider) -> Result<HTTPResponse, TransportError> {
        if fuzz.chance(0.1) {
            let message = fuzz.hostileText()
            return .failure(fuzz.pick([
                .timeout, .connectionRefused, .couldNotResolve, .tls(message),
                .other(code: fuzz.int(-1...100), message: message),
                .smtp(code: fuzz.pick([0, 421, 450, 451, 535, 550, 551, 553, 554, fuzz.status()]),
                      command: fuzz.pick(SMTPCommand.allCases), message: message),
            ]))
        }
        var headers = fuzz.headers()
        if fuzz.chance(0.3) { headers.insert((fuzz.pick(["retry-after", "x-ratelimit-reset"]), fuzz.retryAfterText()), at: 0) }
        let body = fuzz.chance(0.5) ? Array(shapedBody(&fuzz, provider: provider).utf8) : fuzz.body()
        return .success(HTTPResponse(status: fuzz.status(), headers: headers, body: body,
                                     httpVersion: fuzz.pick([11, 20]),
                                     // libcurl's own timing, not the provider's: odd only now and then.
                                     seconds: fuzz.chance(0.02) ? fuzz.pick([1e300, .infinity, .nan, -1]) : fuzz.pick([0, 0.02, 1.5])))
    }

    /// A JSON body with the provider's own keys, values of any kind and numbers of any size.
    static func shapedBody(_ fuzz: inout Fuzz, provider: Provider) -> String {
        func anyValue() -> String {
            switch fuzz.below(4) {
            case 0: return fuzz.jsonNumberText()
            case 1: return fuzz.jsonStringText()
            case 2: return fuzz.jsonValueText(depth: 4)
            default: return "\"" + fuzz.pick(["Unregistered", "BadDeviceToken", "ExpiredProviderToken", "TooManyRequests",
                                             "UNREGISTERED", "QUOTA_EXCEEDED", "INTERNAL", "DeviceNotRegistered", "ok", "error",
                                             "TOO_MANY_REQUESTS", "UNAUTHENTICATED"]) + "\""
            }
        }
        let text: String
        switch provider {
        case .apns:
            text = "{\"reason\":\(anyValue()),\"timestamp\":\(fuzz.chance(0.7) ? fuzz.jsonNumberText() : anyValue())}"
        case .fcm:
            text = "{\"name\":\(anyValue()),\"error\":{\"code\":\(fuzz.jsonNumberText()),\"message\":\(anyValue()),\"status\":\(anyValue()),"
                + "\"details\":[{\"@type\":\"type.googleapis.com/google.firebase.fcm.v1.FcmError\",\"errorCode\":\(anyValue())}]}}"
        case .expo:
            let tickets = (0..<fuzz.int(0...4)).map { _ in
                "{\"status\":\(anyValue()),\"id\":\(anyValue()),\"message\":\(anyValue()),\"details\":{\"error\":\(anyValue())}}"
            }
            text = fuzz.chance(0.3)
                ? "{\"errors\":[{\"code\":\(anyValue()),\"message\":\(anyValue())}]}"
                : "{\"data\":[\(tickets.joined(separator: ","))]}"
        case .twilio:
            text = "{\"code\":\(fuzz.chance(0.7) ? fuzz.jsonNumberText() : anyValue()),\"message\":\(anyValue()),\"sid\":\(anyValue())}"
        case .whatsapp:
            text = "{\"messages\":[{\"id\":\(anyValue())}],\"error\":{\"code\":\(fuzz.chance(0.7) ? fuzz.jsonNumberText() : anyValue()),"
                + "\"message\":\(anyValue()),\"error_data\":{\"details\":\(anyValue())}}}"
        case .sendgrid:
            text = "{\"errors\":[{\"message\":\(anyValue()),\"field\":\(anyValue())}]}"
        default:
            text = fuzz.jsonText()
        }
        return fuzz.chance(0.1) ? String(text.prefix(fuzz.below(text.count + 1))) : text
    }

    static func run(_ adapter: any SingleMessageAdapter, seed: UInt64) {
        var fuzz = Fuzz(seed: seed)
        for _ in 0..<Fuzz.bodyIterations {
            let result = answer(&fuzz, provider: adapter.provider)
            let classified = adapter.classify(result, now: now)
            expectWellFormed(classified, "\(adapter.provider.rawValue) \(result)")
        }
    }

    @Test func apns() throws {
        Self.run(try APNsAdapter(keyPEM: TestKeys.apnsKeyPEM(), keyId: "ABC123DEFG", teamId: "DEF123GHIJ",
                                 topic: "com.example.herald", baseURL: "https://127.0.0.1:9"), seed: 31)
    }

    @Test func fcm() throws {
        Self.run(try FCMAdapter(serviceAccountJSON: TestKeys.serviceAccountJSON(), baseURL: "https://127.0.0.1:9"), seed: 32)
    }

    @Test func twilio() throws {
        Self.run(try TwilioAdapter(accountSid: "AC123", authToken: "secret-token", from: "+15005550006",
                                   messagingServiceSid: nil, baseURL: "https://127.0.0.1:9"), seed: 33)
    }

    @Test func whatsapp() throws {
        Self.run(try WhatsAppAdapter(token: "secret-token", phoneNumberId: "1234567890", baseURL: "https://127.0.0.1:9"), seed: 34)
    }

    @Test func sendgrid() throws {
        Self.run(try SendGridAdapter(apiKey: "SG.secret", from: "Herald <herald@example.com>", baseURL: "https://127.0.0.1:9"), seed: 35)
    }

    @Test func smtp() throws {
        Self.run(try SMTPAdapter(url: "smtp://herald:secret@127.0.0.1:9", from: "herald@example.com"), seed: 36)
    }

    @Test func webhook() throws {
        Self.run(try WebhookAdapter(url: "https://127.0.0.1:9/hook", secrets: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), seed: 37)
    }

    @Test func expoBatchesAndReceipts() throws {
        let expo = try ExpoAdapter(accessToken: "expo-secret", baseURL: "https://127.0.0.1:9")
        var fuzz = Fuzz(seed: 38)
        for _ in 0..<Fuzz.bodyIterations {
            let result = Self.answer(&fuzz, provider: .expo)
            let count = fuzz.int(1...4)
            let answers = expo.classify(result, count: count, now: Self.now)
            #expect(answers.count == count)
            for a in answers { Self.expectWellFormed(a, "expo \(result)") }
            switch expo.classifyReceipts(result) {
            case .failed(let outcome): Self.expectWellFormed(ClassifiedResponse(outcome), "expo receipts \(result)")
            case .receipts(let receipts):
                for (_, r) in receipts { Self.expectWellFormed(ClassifiedResponse(r.outcome), "expo receipt \(result)") }
            }
        }
    }

    /// Whole-request refusals that some messages caused (PUSH_TOO_MANY_EXPERIENCE_IDS with `details` of any
    /// shape, VALIDATION_ERROR naming any place or token): one answer per message, well formed, no token
    /// quoted, and never every message failed for good over another project's tokens.
    @Test func expoRefusalsOfSomeMessages() throws {
        let expo = try ExpoAdapter(accessToken: "expo-secret", baseURL: "https://127.0.0.1:9")
        var fuzz = Fuzz(seed: 39)
        for _ in 0..<Fuzz.bodyIterations {
            let tokens = (0..<fuzz.int(1...6)).map { _ in
                fuzz.chance(0.8) ? "ExponentPushToken[\(fuzz.int(0...5))abcdef]" : fuzz.hostileText(maxPieces: 4)
            }
            let envelopes = tokens.map { pushEnvelope(token: $0, provider: .expo, now: Self.now) }
            func quoted(_ s: String) -> String { JSONValue.string(s).jsonText }
            let body: String
            if fuzz.chance(0.5) {
                let projects = (0..<fuzz.int(0...3)).map { i in
                    let listed = (0..<fuzz.int(0...4)).map { _ in fuzz.chance(0.8) ? quoted(fuzz.pick(tokens)) : fuzz.jsonValueText(depth: 4) }
                    return quoted(fuzz.pick(["@herald/app", "@old/app", "", "\(i)"]) + String(i)) + ":[" + listed.joined(separator: ",") + "]"
                }
                let details = fuzz.chance(0.9) ? "{" + projects.joined(separator: ",") + "}" : fuzz.jsonValueText(depth: 4)
                body = #"{"errors":[{"code":"PUSH_TOO_MANY_EXPERIENCE_IDS","message":"mixed","details":\#(details)}]}"#
            } else {
                let place = fuzz.pick(["[\(fuzz.int(-2...8))].to", "[\(fuzz.numberText())].to", "[0]", "value", "[1].priority"])
                let text = quoted("\"\(place)\" must be valid" + (fuzz.chance(0.3) ? ", got \(fuzz.pick(tokens))" : ""))
                body = #"{"errors":[{"code":"VALIDATION_ERROR","message":\#(text)}]}"#
            }
            let result: Result<HTTPResponse, TransportError> = .success(HTTPResponse(status: fuzz.pick([400, 200, 429, 500]), headers: [],
                                                                                     body: Array(body.utf8)))
            let answers = expo.classify(result, envelopes: envelopes, now: Self.now)
            #expect(answers.count == envelopes.count)
            for a in answers {
                Self.expectWellFormed(a, "expo \(body)")
                for token in tokens where token.count >= 4 && tokens.count > 1 && a.outcome.code == "PUSH_TOO_MANY_EXPERIENCE_IDS" {
                    #expect(!(a.outcome.message ?? "").contains(token), "\(token) quoted in \(a.outcome)")
                }
            }
            #expect(!answers.allSatisfy { $0.outcome.label == "permanent" && $0.outcome.code == "PUSH_TOO_MANY_EXPERIENCE_IDS" },
                    "\(body) → \(answers.map(\.outcome))")
        }
    }
}
