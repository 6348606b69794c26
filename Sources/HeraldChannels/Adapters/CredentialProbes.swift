import Foundation
import HeraldCore
import HeraldHTTP

/// The read-only requests `herald doctor --online` makes to show that a provider takes herald's
/// credentials: each reads something of the account's own and sends nothing (providers.md §4.1, §5.1,
/// §6.1). Every verdict's text is the provider's answer made readable, with the credentials redacted.
extension TwilioAdapter {
    /// `GET /2010-04-01/Accounts/{AccountSid}.json` with the same basic auth as a send: 200 with the
    /// account's `status` (`active`, `suspended`, `closed`).
    public var credentialProbe: CredentialProbe? {
        let credentials = Data("\(accountSid):\(authToken)".utf8).base64EncodedString()
        let request = HTTPRequest(
            method: "GET", url: "\(baseURL)/2010-04-01/Accounts/\(AdapterSupport.percentEncode(accountSid)).json",
            headers: [("accept", "application/json"), ("authorization", "Basic \(credentials)")],
            timeout: timeout, version: .http1_1)
        let secrets = secrets
        return CredentialProbe(request: request) { answer in
            let body = AdapterSupport.json(answer)
            guard answer.status == 200 else {
                let code = body?["code"]?.intValue.map { ", code \($0)" } ?? ""
                let message = body?["message"]?.stringValue.map { ": " + $0 } ?? ""
                let text = "Twilio answered \(answer.status)\(code)\(message)"
                return CredentialProbes.verdict(status: answer.status, AdapterSupport.redact(text, secrets: secrets))
            }
            let status = AdapterSupport.readable(body?["status"]?.stringValue ?? "unknown", maxUTF8Bytes: 40)
            guard status == "active" else { return .refused("the account is \(status), not active") }
            return .accepted("the account is active")
        }
    }
}

extension SendGridAdapter {
    /// `GET /v3/scopes` with the API key: 200 with the key's `scopes`, which must hold `mail.send`.
    public var credentialProbe: CredentialProbe? {
        let request = HTTPRequest(method: "GET", url: baseURL + "/v3/scopes",
                                  headers: [("accept", "application/json"), ("authorization", "Bearer \(apiKey)")],
                                  timeout: timeout, version: .http2)
        let secrets = secrets
        return CredentialProbe(request: request) { answer in
            let body = AdapterSupport.json(answer)
            guard answer.status == 200 else {
                let message = body?["errors"]?.arrayValue?.first?["message"]?.stringValue.map { ": " + $0 } ?? ""
                let text = "SendGrid answered \(answer.status)\(message)"
                return CredentialProbes.verdict(status: answer.status, AdapterSupport.redact(text, secrets: secrets))
            }
            let scopes = body?["scopes"]?.arrayValue?.compactMap(\.stringValue) ?? []
            guard scopes.contains("mail.send") else {
                return .refused("the key lacks the mail.send scope (it has \(scopes.count) scopes)")
            }
            return .accepted("the key has the mail.send scope")
        }
    }
}

extension WhatsAppAdapter {
    /// `GET /{version}/{phone-number-id}?fields=verified_name,quality_rating` with the token: 200 with
    /// the sender's verified name and quality rating.
    public var credentialProbe: CredentialProbe? {
        let request = HTTPRequest(
            method: "GET", url: "\(baseURL)/\(apiVersion)/\(phoneNumberId)?fields=verified_name,quality_rating",
            headers: [("accept", "application/json"), ("authorization", "Bearer \(token)")],
            timeout: timeout, version: .http2)
        let (secrets, phoneNumberId) = (secrets, phoneNumberId)
        return CredentialProbe(request: request) { answer in
            let body = AdapterSupport.json(answer)
            guard answer.status == 200 else {
                let error = body?["error"]
                let code = error?["code"]?.intValue.map { ", code \($0)" } ?? ""
                let message = error?["message"]?.stringValue.map { ": " + $0 } ?? ""
                let text = "the Graph API answered \(answer.status)\(code)\(message)"
                return CredentialProbes.verdict(status: answer.status, AdapterSupport.redact(text, secrets: secrets))
            }
            let name = body?["verified_name"]?.stringValue.map { " (\(AdapterSupport.readable($0, maxUTF8Bytes: 80)))" } ?? ""
            let quality = body?["quality_rating"]?.stringValue.map { ", quality \(AdapterSupport.readable($0, maxUTF8Bytes: 20))" } ?? ""
            return .accepted("phone number id \(phoneNumberId) answers\(name)\(quality)")
        }
    }
}

/// What the probes share: an answer that is not a 200, read as a refusal (4xx) or as unclear.
enum CredentialProbes {
    static func verdict(status: Int, _ text: String) -> CredentialProbe.Verdict {
        let readable = AdapterSupport.readable(text, maxUTF8Bytes: 300)
        return (400..<500).contains(status) ? .refused(readable) : .unclear(readable)
    }
}
