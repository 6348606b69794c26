import Foundation
import HeraldCore
import HeraldHTTP

/// A signed JSON POST per Standard Webhooks v1 (`WebhookSigner`): `webhook-id` is the queue row id (the
/// same on every retry, so receivers can drop repeats), `webhook-timestamp` the attempt's unix seconds,
/// and `webhook-signature` one `v1,<base64 HMAC-SHA256>` per secret (several during a key rotation).
///
///     let hook = try WebhookAdapter(url: "https://example.com/hooks", secrets: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
public struct WebhookAdapter: SingleMessageAdapter {
    public let provider = Provider.webhook
    public let url: String
    /// Every webhook destination is the receiver's URL.
    public var providerAddress: String? { url }
    private let signer: WebhookSigner
    public var timeout: Double

    /// `secrets`: one or more space-separated `whsec_<base64>` secrets (a bare base64 string is accepted).
    public init(url: String, secrets: String, timeout: Double = 15) throws {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "https" || scheme == "http", parsed.host != nil else {
            // Not quoted: a URL may carry a password (user:pw@) or a key in its query.
            let what = URL(string: url)?.scheme.map { "a \($0):// URL" } ?? "something that is not a URL"
            throw AdapterError("WEBHOOK_URL must be an http(s) URL with a host, got \(what)")
        }
        self.signer = try WebhookSigner(secrets: secrets)
        self.url = url
        self.timeout = timeout
    }

    /// The event body: `{"type":"notification.<kind>","timestamp":…,"data":{…}}`.
    public static func body(for envelope: Envelope) -> String {
        let item = envelope.item
        let r = envelope.rendered
        var data: [String: JSONValue] = [
            "id": .string(item.id.lowercased),
            "recipient_user_id": .string(item.recipientUserId.lowercased),
            "kind": .string(item.kindRaw),
            "priority": .string(item.priority.rawValue),
            "title": .string(r.title),
            "body": .string(r.body),
            "locale": .string(r.locale),
            "data": .object(r.data),
        ]
        if let m = item.memberUserId { data["member_user_id"] = .string(m.lowercased) }
        if let s = item.severity { data["severity"] = .string(s.rawValue) }
        if let link = r.deepLink { data["deep_link"] = .string(link) }
        let event: JSONValue = [
            "type": .string("notification.\(item.kindRaw)"),
            "timestamp": .string(ISO8601.string(envelope.now)),
            "data": .object(data),
        ]
        return event.jsonText
    }

    /// The `webhook-signature` header value for one message.
    public func signature(id: String, timestamp: Int, body: [UInt8]) -> String {
        signer.signature(id: id, timestamp: timestamp, body: body)
    }

    public func request(for envelope: Envelope) throws -> HTTPRequest {
        let id = envelope.item.id.lowercased
        let timestamp = Int(envelope.now.timeIntervalSince1970)
        let body = Array(WebhookAdapter.body(for: envelope).utf8)
        var request = HTTPRequest(
            method: "POST", url: url,
            headers: [("content-type", "application/json")] + signer.headers(id: id, timestamp: timestamp, body: body),
            body: body, timeout: timeout, version: .http2)
        // A receiver drops copies by `webhook-id` (Standard Webhooks), so libcurl may send it again itself.
        request.replayable = true
        return request
    }

    /// 2xx delivered; 3xx, 410 and other 4xx permanent (with the receiver's reason); 408, 429 and 5xx
    /// retried, after `Retry-After` when given; transport failures retried.
    /// Through the shared classifier: 2xx delivered; 408, 429 and 5xx retried (its Retry-After honoured);
    /// a redirect, 410 and other answers permanent. One receiver: its 429 or 503 with a wait is provider-wide.
    public func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse {
        AdapterSupport.classify(result, provider: .webhook, secrets: [], now: now) { Self.outcome($0, now: $1) }
    }

    static func outcome(_ response: HTTPResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        let reason = Self.reason(response)
        switch status {
        case 200..<300:
            return .delivered(messageId: nil)
        case 408, 429, 500..<600:
            let after = response.header("retry-after").flatMap { Backoff.parseRetryAfter($0, now: now) }
            return .retry(after: after, code: "http_\(status)", message: "webhook answered \(status)\(reason)")
        // What only the operator can fix — a moved or gone endpoint, a secret the receiver no longer
        // takes — would be answered alike to every webhook: the pass stops calling it, rows wait.
        case 300..<400:
            return .refused(code: "http_\(status)", message: "webhook answered a redirect (\(status)); update WEBHOOK_URL")
        case 410:
            return .refused(code: "http_410", message: "webhook endpoint is gone (410)\(reason); update WEBHOOK_URL")
        case 401, 403:
            return .refused(code: "http_\(status)", message: "webhook answered \(status)\(reason); check WEBHOOK_SECRET")
        default:
            // providers.md §7: any other answer is a failure to retry (a 404 during the receiver's deploy).
            return .retry(after: nil, code: "http_\(status)", message: "webhook answered \(status)\(reason)")
        }
    }

    /// The first 200 bytes of the receiver's answer, readable, for `last_error`.
    static func reason(_ response: HTTPResponse) -> String {
        let text = AdapterSupport.snippet(response)
        return text.isEmpty ? "" : ": " + text
    }
}
