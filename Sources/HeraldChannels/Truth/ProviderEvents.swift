import Foundation
import HeraldCore

/// The keys that verify what providers post to the app's webhook endpoint. A provider whose key is
/// not configured gets its events marked `unverified` and never applied.
public struct ProviderEventKeys: Sendable {
    /// TWILIO_AUTH_TOKEN: Twilio signs callbacks with the account's auth token.
    public var twilioAuthToken: String?
    /// SENDGRID_WEBHOOK_PUBLIC_KEY.
    public var sendgrid: SendGridEventKey?
    /// WHATSAPP_APP_SECRET: the Meta app's secret.
    public var whatsappAppSecret: String?

    public init(twilioAuthToken: String? = nil, sendgrid: SendGridEventKey? = nil, whatsappAppSecret: String? = nil) {
        self.twilioAuthToken = twilioAuthToken
        self.sendgrid = sendgrid
        self.whatsappAppSecret = whatsappAppSecret
    }
}

/// One row of `provider_events`, as stored by the endpoint.
public struct ProviderEventInput: Sendable {
    public var provider: String
    /// The full URL the endpoint was called at.
    public var url: String?
    /// The stored headers (a JSON object of lower-cased names), or whatever else was stored.
    public var headers: JSONValue?
    /// The raw body; nil when it was too large to load.
    public var body: String?

    public init(provider: String, url: String?, headers: JSONValue?, body: String?) {
        self.provider = provider
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What to do with one stored event.
public enum ProviderEventVerdict: Sendable, Equatable {
    /// Verified and read: these reports (possibly none) are to be applied.
    case reports([TruthReport])
    /// The signature is missing or wrong: never applied.
    case rejected(String)
    /// The provider's verification key is not configured: not applied.
    case unverified(String)
    /// Not what the provider sends (malformed headers, body, JSON, form): not applied.
    case invalid(String)

    public var outcome: String {
        switch self {
        case .reports: "applied"
        case .rejected: "rejected"
        case .unverified: "unverified"
        case .invalid: "invalid"
        }
    }
}

/// Verifies and reads one stored provider event. Pure, total: every input, however hostile, gives a
/// verdict. The order is: the row's own shape (headers an object, a body of sane size); for Twilio the
/// form (its parameters are part of the signature); the key; the signature; only then the content. So
/// nothing unauthenticated is parsed beyond what the signature needs, and a body that fails its
/// signature is `rejected` whatever it holds.
public enum ProviderEvents {
    /// The providers that post events (`provider_events.provider`'s check lists the same).
    public static let providers: Set<Provider> = [.sendgrid, .twilio, .whatsapp]

    /// Larger bodies are refused unread (SendGrid batches events; a request is far below this).
    public static let maxBodyBytes = 1 << 20

    public static func evaluate(_ event: ProviderEventInput, keys: ProviderEventKeys) -> ProviderEventVerdict {
        guard let body = event.body else {
            return .invalid("the body is larger than \(maxBodyBytes) bytes")
        }
        guard body.utf8.count <= maxBodyBytes else {
            return .invalid("the body is larger than \(maxBodyBytes) bytes")
        }
        var headers: [String: String] = [:]
        switch event.headers {
        case .object(let o)?:
            for (name, value) in o {
                if case .string(let v) = value { headers[name.lowercased()] = v }
                // An array of values (a repeated header): the first string.
                else if case .array(let vs) = value, case .string(let v)? = vs.first { headers[name.lowercased()] = v }
            }
        case nil, .null?:
            break
        default:
            return .invalid("headers is not a JSON object of header names")
        }
        let bytes = Array(body.utf8)

        switch Provider(rawValue: event.provider) {
        case .sendgrid?:
            guard let key = keys.sendgrid else {
                return .unverified("SENDGRID_WEBHOOK_PUBLIC_KEY is not set: SendGrid events cannot be verified (set it and "
                    + "reset processed_at to process them)")
            }
            guard let signature = headers[SendGridTruth.signatureHeader], let timestamp = headers[SendGridTruth.timestampHeader] else {
                return .rejected("no X-Twilio-Email-Event-Webhook-Signature / -Timestamp header: not a signed SendGrid event")
            }
            guard key.isValid(signature: signature, timestamp: timestamp, body: bytes) else {
                return .rejected("the SendGrid signature does not match the body")
            }
            do { return .reports(try SendGridTruth.reports(body: bytes)) } catch { return .invalid("\(error)") }

        case .twilio?:
            let params: [(String, String)]
            do { params = try FormBody.parse(body) } catch {
                return .invalid("the Twilio callback body is not a form: \(error)")
            }
            guard let token = keys.twilioAuthToken else {
                return .unverified("TWILIO_AUTH_TOKEN is not set: Twilio callbacks cannot be verified")
            }
            guard let url = event.url, !url.isEmpty else {
                return .rejected("no url stored: a Twilio signature covers the URL it was sent to")
            }
            guard let signature = headers["x-twilio-signature"] else {
                return .rejected("no X-Twilio-Signature header: not a signed Twilio callback")
            }
            guard TwilioSignature.isValid(signature, authToken: token, url: url, params: params) else {
                return .rejected("the Twilio signature does not match the URL and parameters")
            }
            do { return .reports([try TwilioTruth.callback(params)]) } catch { return .invalid("\(error)") }

        case .whatsapp?:
            guard let secret = keys.whatsappAppSecret else {
                return .unverified("WHATSAPP_APP_SECRET is not set: WhatsApp webhooks cannot be verified")
            }
            guard let signature = headers[WhatsAppTruth.signatureHeader] else {
                return .rejected("no X-Hub-Signature-256 header: not a signed WhatsApp webhook")
            }
            guard WhatsAppTruth.isValid(signature, appSecret: secret, body: bytes) else {
                return .rejected("the X-Hub-Signature-256 does not match the body")
            }
            do { return .reports(try WhatsAppTruth.reports(body: bytes)) } catch { return .invalid("\(error)") }

        default:
            return .invalid("unknown provider '\(TruthText.clip(event.provider, max: 40))'")
        }
    }
}
