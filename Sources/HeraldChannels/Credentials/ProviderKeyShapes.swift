/// The shapes of the providers' keys, checked without asking the provider (providers.md §4.1, §5.1,
/// §6.1): a value of the wrong shape is refused by the provider at the first send. A shape the ids and
/// keys are defined by (a Twilio SID's prefix and length, SendGrid's `SG.`) fails; one only seen in
/// practice (the token's length, the key's parts, Meta's `EAA`) warns. No finding quotes the value.
/// The adapters' `credentialCheck` reads their keys through these.
///
///     ProviderKeyShapes.sendGrid(apiKey: "abc")   // [CredentialFinding(.fail, "SENDGRID_API_KEY does not start with SG. …")]
public enum ProviderKeyShapes {
    public typealias Finding = CredentialFinding

    public static func twilio(accountSid: String, authToken: String, messagingServiceSid: String?) -> [Finding] {
        var findings: [Finding] = []
        if !isSid(accountSid, prefix: "AC") {
            findings.append(Finding(.fail, "TWILIO_ACCOUNT_SID is not AC followed by 32 hexadecimal digits (it has \(accountSid.count) characters)"))
        }
        if let service = messagingServiceSid, !isSid(service, prefix: "MG") {
            findings.append(Finding(.fail, "TWILIO_MESSAGING_SERVICE_SID is not MG followed by 32 hexadecimal digits (it has \(service.count) characters)"))
        }
        if !(authToken.count == 32 && authToken.allSatisfy(\.isHexDigit)) {
            findings.append(Finding(.warn, "TWILIO_AUTH_TOKEN is not 32 hexadecimal digits, as Twilio's auth tokens are (it has \(authToken.count) characters)"))
        }
        return findings
    }

    public static func sendGrid(apiKey: String) -> [Finding] {
        guard apiKey.hasPrefix("SG.") else {
            return [Finding(.fail, "SENDGRID_API_KEY does not start with SG., as every SendGrid API key does")]
        }
        let parts = apiKey.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isBase64URL) }) else {
            return [Finding(.warn, "SENDGRID_API_KEY is not SG.<id>.<secret>, as SendGrid's API keys are")]
        }
        return []
    }

    public static func whatsApp(token: String) -> [Finding] {
        guard token.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            return [Finding(.fail, "WHATSAPP_TOKEN holds a space or a character that cannot go into a header")]
        }
        guard token.hasPrefix("EAA") else {
            return [Finding(.warn, "WHATSAPP_TOKEN does not start with EAA, as Meta's access tokens do")]
        }
        return []
    }

    /// `prefix` and 32 hexadecimal digits: a Twilio SID.
    static func isSid(_ value: String, prefix: String) -> Bool {
        value.count == prefix.count + 32 && value.hasPrefix(prefix) && value.dropFirst(prefix.count).allSatisfy(\.isHexDigit)
    }

    static func isBase64URL(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "_")
    }
}
