import Foundation
import HeraldCore
import HeraldHTTP

/// SendGrid v3 Mail Send (providers.md §6): one `POST {base}/v3/mail/send` per email, Bearer API key.
/// The queue row id goes in `custom_args.notification_id` (echoed by the Event Webhook) and in the
/// `X-Entity-Ref-ID` header; the answer's `X-Message-Id` is stored as the message id.
///
///     let mail = try SendGridAdapter(apiKey: env["SENDGRID_API_KEY"]!, from: env["EMAIL_FROM"]!,
///                                    baseURL: env["SENDGRID_URL"])
public struct SendGridAdapter: SingleMessageAdapter {
    /// An address that refuses the channel turns it off for the recipient.
    public var deadDestination: FollowUp? { .optOut }
    public let provider = Provider.sendgrid
    /// Internal, not private: the credential probe (CredentialProbes.swift) authenticates with it.
    let apiKey: String
    public let fromEmail: String
    public let fromName: String?
    /// e.g. "https://api.sendgrid.com" (no trailing slash).
    public let baseURL: String
    public var timeout: Double

    /// `from`: `EMAIL_FROM`, either "addr@example.com" or "Name <addr@example.com>".
    public init(apiKey: String, from: String, baseURL: String? = nil, timeout: Double = 15) throws {
        let key = apiKey.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw AdapterError("SENDGRID_API_KEY is empty") }
        let parsed = try Self.parseAddress(from)
        self.apiKey = key
        self.fromEmail = parsed.email
        self.fromName = parsed.name
        self.baseURL = try AdapterSupport.baseURL(baseURL, default: "https://api.sendgrid.com", variable: "SENDGRID_URL")
        self.timeout = timeout
    }

    /// "Name <addr>" or "addr" → (addr, Name?). Throws, naming EMAIL_FROM, when there is no address.
    public static func parseAddress(_ text: String) throws -> (email: String, name: String?) {
        let from = try EmailFrom(text)
        return (from.address, from.name)
    }

    public var url: String { baseURL + "/v3/mail/send" }

    var secrets: [String] { [apiKey] }

    /// The minimal HTML part: the body's text escaped, paragraphs and line breaks kept.
    public static func html(title: String, body: String, rightToLeft: Bool = false) -> String {
        func escape(_ s: String) -> String {
            var out = ""
            for c in s {
                switch c {
                case "&": out += "&amp;"
                case "<": out += "&lt;"
                case ">": out += "&gt;"
                case "\"": out += "&quot;"
                case "'": out += "&#39;"
                default: out.append(c)
                }
            }
            return out
        }
        let paragraphs = body.components(separatedBy: "\n\n").map {
            "<p>" + escape($0).replacingOccurrences(of: "\n", with: "<br>") + "</p>"
        }.joined()
        let open = rightToLeft ? "<html lang=\"ar\" dir=\"rtl\">" : "<html>"
        return "<!doctype html>\(open)<head><meta charset=\"utf-8\"><title>\(escape(title))</title></head><body>\(paragraphs)</body></html>"
    }

    /// The Mail Send body (§6.2).
    public func body(for envelope: Envelope) -> JSONValue {
        let r = envelope.rendered
        let id = envelope.item.id.lowercased
        let subject = r.title.trimmingCharacters(in: .whitespacesAndNewlines)
        var text = r.body
        if let link = r.deepLink, !link.isEmpty { text += "\n\n\(link)" }
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { text = subject.isEmpty ? "-" : subject }
        var from: [String: JSONValue] = ["email": .string(fromEmail)]
        if let fromName { from["name"] = .string(fromName) }
        let recipient: JSONValue = ["email": .string(envelope.destination.address)]
        let personalization: JSONValue = [
            "to": .array([recipient]),
            "custom_args": .object(["notification_id": .string(id)]),
        ]
        let plain: JSONValue = ["type": "text/plain", "value": .string(text)]
        let html: JSONValue = [
            "type": "text/html",
            "value": .string(Self.html(title: subject, body: text, rightToLeft: r.locale == "ar")),
        ]
        let message: [String: JSONValue] = [
            "personalizations": .array([personalization]),
            "from": .object(from),
            "subject": .string(subject.isEmpty ? "Notification" : subject),
            "content": .array([plain, html]),
            "headers": .object(["X-Entity-Ref-ID": .string(id)]),
        ]
        return .object(message)
    }

    public func request(for envelope: Envelope) throws -> HTTPRequest {
        let to = envelope.destination.address.trimmingCharacters(in: .whitespaces)
        guard to.contains("@") else { throw AdapterError("sendgrid: the recipient has no email address") }
        var e = envelope
        e.destination.address = to
        return HTTPRequest(
            method: "POST", url: url,
            headers: [("content-type", "application/json"), ("authorization", "Bearer \(apiKey)")],
            body: Array(body(for: e).jsonText.utf8), timeout: timeout, version: .http2)
    }

    /// A 429 (with `X-RateLimit-Reset`) or a 503 with a wait is about the API key's rate limit or the
    /// service: provider-wide (providers.md §6.4; the default rule).
    public func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse {
        AdapterSupport.classify(result, provider: .sendgrid, secrets: secrets, now: now) { Self.outcome($0, now: $1) }
    }

    /// SendGrid refuses no destination at send time (bounces come later, by its Event Webhook).
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check SENDGRID_API_KEY and EMAIL_FROM", codes: [])
    }

    static func outcome(_ response: HTTPResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        if (200..<300).contains(status) {
            return .delivered(messageId: response.header("x-message-id"))
        }
        let json = AdapterSupport.json(response)
        var reason = ""
        if case .array(let errors)? = json?["errors"], let first = errors.first {
            reason = first["message"]?.stringValue ?? ""
            if let field = first["field"]?.stringValue, !field.isEmpty { reason += " (field \(field))" }
        } else {
            reason = AdapterSupport.snippet(response)
        }
        let text = "sendgrid answered \(status)" + (reason.isEmpty ? "" : ": \(reason)")
        let code = "http_\(status)"
        switch status {
        case 429:
            // X-RateLimit-Reset is the unix time the limit resets (§6.4), honoured up to 24 h; an unreadable
            // one (negative, inf, nan, garbage) is ignored; Retry-After as a fallback.
            let reset = response.header("x-ratelimit-reset").flatMap { Backoff.parseResetTime($0, now: now) }
            return .retry(after: reset ?? AdapterSupport.retryAfter(response, now: now), code: code, message: text)
        case 500..<600:
            return .retry(after: AdapterSupport.retryAfter(response, now: now), code: code, message: text)
        case 401:
            return .refused(code: code, message: "\(text) — check SENDGRID_API_KEY (invalid, deleted or without mail.send permission)")
        case 403:
            return .refused(code: code, message: "\(text) — check SENDGRID_API_KEY's permissions, the account and EMAIL_FROM's sender verification")
        case 451:
            return .permanent(code: code, message: "\(text) — data residency: check SENDGRID_URL (EU subusers use https://api.eu.sendgrid.com)")
        default:
            return .permanent(code: code, message: text)
        }
    }
}
