import Foundation
import HeraldCore
import HeraldHTTP

/// WhatsApp Business Cloud API (providers.md §5): one template message per
/// `POST {base}/{version}/{phone_number_id}/messages`, `Authorization: Bearer`.
///
/// herald writes first, outside any 24-hour customer-service window, so it sends approved templates
/// only (free-form text there fails with 131047). The template is chosen by notification kind; its body
/// takes one text parameter, the rendered notification ("Title: body").
///
///     let templates = try WhatsAppAdapter.parseTemplates(env)    // WHATSAPP_TEMPLATE_<KIND>=name:lang
///     let wa = try WhatsAppAdapter(token: env["WHATSAPP_TOKEN"]!, phoneNumberId: env["WHATSAPP_PHONE_NUMBER_ID"]!,
///                                  templates: templates, baseURL: env["WHATSAPP_URL"])
public struct WhatsAppAdapter: SingleMessageAdapter {
    /// An address that refuses the channel turns it off for the recipient.
    public var deadDestination: FollowUp? { .optOut }
    public typealias Template = (name: String, language: String)

    public let provider = Provider.whatsapp
    /// Internal, not private: the credential probe (CredentialProbes.swift) authenticates with it.
    let token: String
    public let phoneNumberId: String
    /// By kind raw value ("pattern_alert", …). A language of "" means the recipient's locale.
    public let templates: [String: Template]
    /// The Graph API version, e.g. "v21.0" (providers.md saw v17.0 … v25.0 in use).
    public let apiVersion: String
    /// e.g. "https://graph.facebook.com" (no trailing slash).
    public let baseURL: String
    public var timeout: Double

    /// Templates used for kinds not configured: `herald_<kind>` in the recipient's language. They must
    /// exist and be approved in the WhatsApp Business account, each with one body parameter.
    public static func defaultTemplate(kind: String) -> Template {
        (name: "herald_\(kind)", language: "")
    }

    /// `templates` overrides the defaults per kind.
    public init(token: String, phoneNumberId: String, templates: [String: Template] = [:],
                apiVersion: String = "v21.0", baseURL: String? = nil, timeout: Double = 15) throws {
        let token = token.trimmingCharacters(in: .whitespacesAndNewlines)
        let phone = phoneNumberId.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw AdapterError("WHATSAPP_TOKEN is empty: set it to a system-user access token") }
        guard !phone.isEmpty, phone.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw AdapterError("WHATSAPP_PHONE_NUMBER_ID must be the numeric phone number id from the WhatsApp Manager, got '\(phone)'")
        }
        var version = apiVersion.trimmingCharacters(in: .whitespaces)
        if !version.hasPrefix("v") { version = "v" + version }
        self.token = token
        self.phoneNumberId = phone
        self.templates = templates
        self.apiVersion = version
        self.baseURL = try AdapterSupport.baseURL(baseURL, default: "https://graph.facebook.com", variable: "WHATSAPP_URL")
        self.timeout = timeout
    }

    /// Reads `WHATSAPP_TEMPLATE_<KIND>=name:lang` (e.g. `WHATSAPP_TEMPLATE_PATTERN_ALERT=pattern_alert_v2:en_US`)
    /// into templates keyed by kind ("pattern_alert"). `name` alone uses the recipient's language.
    /// Throws, naming the variable, when a value is malformed or the kind is unknown.
    public static func parseTemplates(_ env: [String: String]) throws -> [String: Template] {
        let prefix = "WHATSAPP_TEMPLATE_"
        var out: [String: Template] = [:]
        for (variable, raw) in env.sorted(by: { $0.key < $1.key }) where variable.hasPrefix(prefix) {
            let kind = String(variable.dropFirst(prefix.count)).lowercased()
            guard Kind(rawValue: kind) != nil else {
                throw AdapterError("\(variable): unknown notification kind '\(kind)'; expected one of "
                    + Kind.allCases.map { prefix + $0.rawValue.uppercased() }.joined(separator: ", "))
            }
            let value = raw.trimmingCharacters(in: .whitespaces)
            let parts = value.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            let name = parts[0]
            let language = parts.count > 1 ? parts[1] : ""
            let nameOK = !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }
            let languageOK = language.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "_") }
                && (parts.count == 1 || (2...6).contains(language.count))
            guard parts.count <= 2, nameOK, languageOK else {
                throw AdapterError("\(variable)='\(raw)' is malformed: expected name:language, e.g. "
                    + "\(kind)_v1:en_US (template names are lower-case letters, digits and _)")
            }
            out[kind] = (name: name, language: language)
        }
        return out
    }

    public var url: String { "\(baseURL)/\(apiVersion)/\(phoneNumberId)/messages" }

    var secrets: [String] { [token] }

    /// The template for a row and its language code.
    public func template(for envelope: Envelope) -> Template {
        let kind = envelope.item.kindRaw
        let t = templates[kind] ?? Self.defaultTemplate(kind: kind)
        let language = t.language.isEmpty ? (envelope.destination.locale ?? envelope.rendered.locale) : t.language
        // Meta's language codes are written with an underscore (pt_BR), the renderer's with a hyphen.
        return (t.name, language.isEmpty ? "en" : language.replacingOccurrences(of: "-", with: "_"))
    }

    /// The body parameter: "Title: body" on one line. Template parameters may not hold newlines, tabs
    /// or more than four spaces in a row, and are cut to 1,024 characters (both per third-party
    /// documentation of error 132018 / parameter limits — unconfirmed in providers.md).
    public static func parameterText(for rendered: RenderedNotification) -> String {
        // By Character: "\r\n" is one Character, equal to neither "\n" nor "\r"; isNewline and
        // isWhitespace also take U+2028, vertical tabs, form feeds and no-break spaces.
        var text = rendered.titleAndBody.split(whereSeparator: { $0.isNewline || $0.isWhitespace })
            .joined(separator: " ")
        if text.isEmpty { text = "-" }
        return Truncation.prefix(text, maxUTF16Units: 1024)
    }

    public func request(for envelope: Envelope) throws -> HTTPRequest {
        // providers.md: Meta's example writes `to` with "+", most others without; both are accepted
        // (canonical form unconfirmed). herald sends the E.164 number as stored.
        let to = envelope.destination.address.trimmingCharacters(in: .whitespaces)
        guard !to.isEmpty else { throw AdapterError("whatsapp: the recipient has no phone number") }
        let t = template(for: envelope)
        let parameter: JSONValue = ["type": "text", "text": .string(Self.parameterText(for: envelope.rendered))]
        let component: JSONValue = ["type": "body", "parameters": .array([parameter])]
        let template: JSONValue = [
            "name": .string(t.name),
            "language": .object(["code": .string(t.language)]),
            "components": .array([component]),
        ]
        let body: JSONValue = [
            "messaging_product": "whatsapp", "to": .string(to), "type": "template", "template": template,
        ]
        return HTTPRequest(
            method: "POST", url: url,
            headers: [("content-type", "application/json"), ("authorization", "Bearer \(token)")],
            body: Array(body.jsonText.utf8), timeout: timeout, version: .http2)
    }

    public func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse {
        AdapterSupport.classify(result, provider: .whatsapp, secrets: secrets, now: now,
                                outcome: { Self.outcome($0, now: $1) }, throttle: Self.throttle)
    }

    /// Whom a "slow down" is about (providers.md §5.4, §5.5), keyed on `error.code`:
    /// - 130429 (throughput of the business phone number, 80/s by default), 80007 (the WhatsApp Business
    ///   account's rate limit) and 4 (the app's API call rate): every message this adapter sends goes out
    ///   from that one number, account and app, so provider-wide;
    /// - 131056 (pair rate limit: too many messages to the same user) and 131049 (Meta holds back
    ///   marketing-like messages to this user for a day): that recipient only.
    /// Other codes: a 429 or 503 with a wait is provider-wide. The HTTP statuses of most WhatsApp codes
    /// are unconfirmed (providers.md: 130429 → 429 per a third-party mirror of Meta's table; 131056 and
    /// 131049 unconfirmed), which is why the code decides.
    static func throttle(_ response: HTTPResponse, _ outcome: DeliveryOutcome) -> ThrottleScope? {
        guard case .retry(let after, let code, _) = outcome else { return nil }
        switch code {
        case "131056", "131049": return .destination(wait: after)
        case "130429", "80007", "4": return .provider(wait: after)
        default: return ThrottleScope.providerWide(outcome, httpStatus: response.status)
        }
    }

    /// 131026 (undeliverable: not a WhatsApp number, …) for most numbers at once points at the sender
    /// or the numbers' format rather than at every recipient.
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check WHATSAPP_PHONE_NUMBER_ID and that phone numbers are stored in E.164 (+ and the country code)",
                           codes: ["131026"])
    }

    static func outcome(_ response: HTTPResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        let json = AdapterSupport.json(response)
        let retryAfter = AdapterSupport.retryAfter(response, now: now)
        if (200..<300).contains(status) {
            if case .array(let messages)? = json?["messages"], let id = messages.first?["id"]?.stringValue {
                return .delivered(messageId: id)
            }
            // Accepted without a readable wamid: sending again could deliver twice.
            return .delivered(messageId: nil)
        }
        guard let error = json?["error"], let code = error["code"]?.intValue else {
            let snippet = AdapterSupport.snippet(response)
            let text = "whatsapp answered \(status)" + (snippet.isEmpty ? "" : ": \(snippet)")
            switch status {
            case 429, 500..<600: return .retry(after: retryAfter, code: "http_\(status)", message: text)
            case 401, 403: return .refused(code: "http_\(status)", message: text + " (check WHATSAPP_TOKEN)")
            default: return .permanent(code: "http_\(status)", message: text)
            }
        }
        var text = "whatsapp \(code): \(error["message"]?.stringValue ?? "error")"
        if let details = error["error_data"]?["details"]?.stringValue, !details.isEmpty { text += " (\(details))" }
        return classify(code: code, text: text, status: status, retryAfter: retryAfter)
    }

    /// providers.md §5.4, keyed on `error.code` (HTTP statuses are mostly unconfirmed, so they only
    /// decide for codes not listed).
    static func classify(code: Int, text: String, status: Int, retryAfter: Double?) -> DeliveryOutcome {
        let label = String(code)
        switch code {
        case 131026:
            return .destinationInvalid(code: label, message: "\(text) — the number cannot receive WhatsApp messages")
        case 130429, 131056, 131000, 131016, 131057, 1, 2, 4, 80007:
            return .retry(after: retryAfter, code: label, message: text)
        case 131049:
            // Meta: wait at least 24 h before sending this user another marketing-like message.
            return .retry(after: retryAfter ?? 24 * 3600, code: label, message: text)
        // The token, its permissions, the business account: every message would be refused alike.
        case 0, 190:
            return .refused(code: label, message: "\(text) — the access token is invalid or expired: set WHATSAPP_TOKEN to a valid system-user token")
        case 3, 10, 200...299:
            return .refused(code: label, message: "\(text) — the token lacks permission (whatsapp_business_messaging): fix the app's permissions")
        case 368, 131031, 131042, 131005, 131045, 133010:
            return .refused(code: label, message: "\(text) — a WhatsApp Business account problem an operator must fix")
        case 131030, 131048, 131064:
            // 131030: this recipient is not on a test number's allow list; 131048 and 131064 are not
            // known to be account-wide: this message fails, the provider keeps being called.
            return .permanent(code: label, message: "\(text) — a WhatsApp Business account problem an operator must fix")
        case 132000...132999:
            return .permanent(code: label, message: "\(text) — check the template (WHATSAPP_TEMPLATE_<KIND>): name, language, approval, one body parameter")
        case 131047:
            return .permanent(code: label, message: "\(text) — outside the 24-hour window only templates can be sent")
        case 100, 131008, 131009, 131051, 131021, 131052, 131053, 130472, 130497, 131050:
            // 131050 (user stopped marketing messages) is "deactivate for marketing" in §8; herald's
            // messages are utility, so it fails this message without deactivating the channel.
            return .permanent(code: label, message: text)
        default:
            switch status {
            case 429, 500..<600: return .retry(after: retryAfter, code: label, message: text)
            default: return .permanent(code: label, message: text)
            }
        }
    }
}
