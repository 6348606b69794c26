import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// The credential probes `herald doctor --online` reads, fed a thousand deterministic random answers
/// each (any status, bodies of random bytes, truncated JSON, JSON shaped like the provider's own with
/// values of any kind): nothing traps, and every verdict is short, readable and free of the credentials.
@Suite struct CredentialProbeFuzzTests {
    /// The longest verdict a probe may give (UTF-8 bytes): the 300 of a provider's words made readable,
    /// and a short sentence of herald's own around a name or a state.
    static let maxVerdictBytes = 400

    static func run(_ adapter: any ProviderAdapter, secrets: [String], seed: UInt64) throws {
        let probe = try #require(adapter.credentialProbe, "\(adapter.provider) has no probe")
        var fuzz = Fuzz(seed: seed)
        for _ in 0..<Fuzz.bodyIterations {
            guard case .success(let answer) = ClassifierFuzzTests.answer(&fuzz, provider: adapter.provider) else { continue }
            let text: String
            switch probe.read(answer) {
            case .accepted(let t), .refused(let t), .unclear(let t): text = t
            }
            // Readable as every answer of a provider is made readable (AdapterSupport.readable): no
            // control character but a tab or a line break, which the doctor's report puts on one line.
            let readable = text.unicodeScalars.allSatisfy {
                $0 == "\t" || $0 == "\n" || !($0.value < 0x20 || (0x7F...0x9F).contains($0.value))
            }
            #expect(readable, "not readable: \(text.debugDescription)")
            #expect(text.utf8.count <= maxVerdictBytes, "\(text.utf8.count) bytes")
            for secret in secrets { #expect(!text.contains(secret), "a credential in \(text.debugDescription)") }
        }
    }

    @Test func twilio() throws {
        try Self.run(try TwilioAdapter(accountSid: "AC123", authToken: "secret-token", from: "+15005550006",
                                       messagingServiceSid: nil, baseURL: "https://127.0.0.1:9"),
                     secrets: ["secret-token"], seed: 41)
    }

    @Test func sendgrid() throws {
        try Self.run(try SendGridAdapter(apiKey: "SG.secret", from: "Herald <herald@example.com>", baseURL: "https://127.0.0.1:9"),
                     secrets: ["SG.secret"], seed: 42)
    }

    @Test func whatsapp() throws {
        try Self.run(try WhatsAppAdapter(token: "secret-token", phoneNumberId: "1234567890", baseURL: "https://127.0.0.1:9"),
                     secrets: ["secret-token"], seed: 43)
    }
}
