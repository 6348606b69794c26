import Crypto
import Foundation
import HeraldCore

/// WhatsApp Cloud API status webhooks (providers.md §5.3–5.4: delivery, read and failures arrive as
/// `entry[].changes[].value.statuses[]`; errors also in `…statuses[].errors[]`). Meta signs each POST
/// with `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body, keyed by the app secret>` (Meta's
/// Graph API webhooks documentation; not in providers.md).
///
///     {"object":"whatsapp_business_account","entry":[{"id":"…","changes":[{"field":"messages","value":{
///       "messaging_product":"whatsapp","statuses":[{"id":"wamid.…","status":"failed","timestamp":"…",
///       "recipient_id":"16505551234","errors":[{"code":131026,"title":"Message undeliverable"}]}]}}]}]}
public enum WhatsAppTruth {
    public static let signatureHeader = "x-hub-signature-256"

    /// True when `header` is `sha256=<hex>` of the body under `appSecret`. Constant-time comparison.
    public static func isValid(_ header: String, appSecret: String, body: [UInt8]) -> Bool {
        let h = header.trimmingCharacters(in: .whitespaces)
        guard h.lowercased().hasPrefix("sha256="), let given = TruthText.hex(String(h.dropFirst(7))),
              given.count == 32 else { return false }
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(appSecret.utf8)))
        return TruthText.equal(Array(mac), given)
    }

    public static func signature(appSecret: String, body: [UInt8]) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(appSecret.utf8)))
        return "sha256=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Error codes of a failed status that turn WhatsApp off for the recipient: 131026, "message
    /// undeliverable" (not a WhatsApp number, terms not accepted, old client). providers.md §5.4 marks
    /// its HTTP status unconfirmed and suggests "deactivate recipient channel (or confirm out-of-band)".
    public static let optOutCodes: Set<String> = ["131026"]

    /// Every status in a verified body. Throws a readable error when the body is not a webhook object;
    /// a body with no statuses (an incoming message, a template update) gives none.
    public static func reports(body: [UInt8]) throws -> [TruthReport] {
        let json: JSONValue
        do { json = try JSONValue.parse(Data(body)) } catch {
            throw TruthError("the WhatsApp webhook body is not JSON")
        }
        guard case .object = json else { throw TruthError("the WhatsApp webhook body is not a JSON object") }
        guard case .array(let entries)? = json["entry"] else {
            throw TruthError("the WhatsApp webhook body has no entry array")
        }
        var out: [TruthReport] = []
        for entry in entries {
            guard case .array(let changes)? = entry["changes"] else { continue }
            for change in changes {
                guard case .array(let statuses)? = change["value"]?["statuses"] else { continue }
                for s in statuses {
                    if let r = report(s) { out.append(r) }
                }
            }
        }
        return out
    }

    static func report(_ s: JSONValue) -> TruthReport? {
        guard let id = TruthText.string(s["id"], max: 200), let raw = TruthText.string(s["status"], max: 40) else { return nil }
        let status = raw.lowercased()
        var final: FinalStatus?
        var code: String?
        var error: String?
        switch status {
        case "delivered", "read": final = .delivered
        case "failed":
            final = .failed
            if case .array(let errors)? = s["errors"], let first = errors.first {
                code = TruthText.code(first["code"])
                let title = TruthText.string(first["title"]) ?? TruthText.string(first["message"])
                let details = TruthText.string(first["error_data"]?["details"])
                error = [title, details].compactMap { $0 }.joined(separator: " — ")
                if error?.isEmpty == true { error = nil }
            }
            error = error ?? "failed"
        default:
            final = nil  // sent, deleted, warning, and anything new
        }
        let optOut = final == .failed && code.map(optOutCodes.contains) == true
        return TruthReport(provider: .whatsapp, messageId: id, providerStatus: status, status: final,
                           errorCode: code, error: error.map { TruthText.clip($0) }, optOut: optOut)
    }
}
