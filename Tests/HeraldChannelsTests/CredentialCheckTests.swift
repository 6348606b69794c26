import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// What each adapter's credential check (`ProviderAdapter.credentialCheck`, run by `herald doctor`) finds
/// without sending anything, one row per case: a good key passes, a key of the wrong shape fails or
/// warns as its provider's rules say, a token exchange with no transport fails, and no text holds the key.
@Suite struct CredentialCheckTests {
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var adapter: @Sendable () throws -> any ProviderAdapter
        var status: CredentialFinding.Status
        var words: String
        /// What the finding's text must never hold.
        var secret: String? = nil
    }

    static let sid = "AC" + String(repeating: "0", count: 32)
    static let token = String(repeating: "a", count: 32)

    static let cases: [Case] = [
        Case(description: "an APNs key that signs", adapter: {
            try APNsAdapter(keyPEM: TestKeys.apnsKeyPEM(), keyId: "ABC123DEFG", teamId: "DEF123GHIJ", topic: "com.example.herald")
        }, status: .ok, words: "signs an ES256 token (key ABC123DEFG, team DEF123GHIJ, production)"),
        Case(description: "an FCM account with no transport to fetch its token", adapter: {
            try FCMAdapter(serviceAccountJSON: TestKeys.serviceAccountJSON())
        }, status: .fail, words: "no HTTP transport to reach https://oauth2.googleapis.com/token"),
        Case(description: "Twilio keys of Twilio's shapes", adapter: {
            try TwilioAdapter(accountSid: sid, authToken: token, from: "+15555550100", messagingServiceSid: nil)
        }, status: .ok, words: "have Twilio's shapes"),
        Case(description: "a Twilio account SID that is not AC and 32 hex digits", adapter: {
            try TwilioAdapter(accountSid: "AC123", authToken: token, from: "+15555550100", messagingServiceSid: nil)
        }, status: .fail, words: "TWILIO_ACCOUNT_SID is not AC", secret: token),
        Case(description: "a Twilio auth token of an unusual length", adapter: {
            try TwilioAdapter(accountSid: sid, authToken: "short-token", from: "+15555550100", messagingServiceSid: nil)
        }, status: .warn, words: "TWILIO_AUTH_TOKEN is not 32 hexadecimal digits", secret: "short-token"),
        Case(description: "a SendGrid key without SG.", adapter: {
            try SendGridAdapter(apiKey: "xk-secret-value", from: "noreply@example.com")
        }, status: .fail, words: "does not start with SG.", secret: "xk-secret-value"),
        Case(description: "a WhatsApp token without EAA", adapter: {
            try WhatsAppAdapter(token: "secret-token-value", phoneNumberId: "106540352242922")
        }, status: .warn, words: "does not start with EAA", secret: "secret-token-value"),
        Case(description: "SMTP, whose login shows only when it sends", adapter: {
            try SMTPAdapter(url: "smtps://herald:pw-secret@smtp.example.com:465", from: "noreply@example.com")
        }, status: .ok, words: "cannot check the SMTP login", secret: "pw-secret"),
    ]

    @Test(arguments: cases)
    func eachAdaptersCheckFindsWhatItsProviderWouldRefuse(_ c: Case) throws {
        let check = try #require(try c.adapter().credentialCheck)
        let finding = check.run(now: Date(), transport: nil)
        #expect(finding.status == c.status, "\(finding.text)")
        #expect(finding.text.contains(c.words), "\(finding.text)")
        if let secret = c.secret { #expect(!finding.text.contains(secret)) }
    }

    /// What a check throws is its failure, in the error's words; a check of shapes gives the first failure
    /// before any warning.
    @Test func aThrownErrorFailsAndAFailureOutranksAWarning() {
        let thrown = CredentialCheck { _, _ in throw AdapterError("APNS_KEY_FILE is not a valid key") }
        #expect(thrown.run(now: Date(), transport: nil) == CredentialFinding(.fail, "APNS_KEY_FILE is not a valid key"))
        let shapes = CredentialCheck.shapes({ [CredentialFinding(.warn, "w"), CredentialFinding(.fail, "f")] }, ok: "fine")
        #expect(shapes.run(now: Date(), transport: nil) == CredentialFinding(.fail, "f"))
        #expect(CredentialCheck.shapes({ [] }, ok: "fine").run(now: Date(), transport: nil) == CredentialFinding(.ok, "fine"))
    }
}
