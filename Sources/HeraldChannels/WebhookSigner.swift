import Crypto
import Foundation
import HeraldHTTP

/// Standard Webhooks v1 signing: the headers that let a receiver check a POST came from herald.
/// `webhook-id` names the message (the same on every retry, so receivers can drop repeats),
/// `webhook-timestamp` is the attempt's unix seconds, and `webhook-signature` holds one
/// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret (several during a key rotation).
///
///     let signer = try WebhookSigner(secrets: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
///     signer.headers(id: "3f2c…", timestamp: 1769310000, body: body)
///     // [("webhook-id", "3f2c…"), ("webhook-timestamp", "1769310000"), ("webhook-signature", "v1,…")]
///
/// The webhook channel signs its notifications with it, and the forecasts phase its requests to the
/// team's insight service.
public struct WebhookSigner: Sendable {
    /// The secrets' raw bytes (SymmetricKey is not Sendable; a key is made per signature).
    private let keys: [[UInt8]]

    /// `secrets`: one or more space-separated `whsec_<base64>` secrets (a bare base64 string is
    /// accepted). `setting` names the variable they came from, in the errors.
    public init(secrets: String, setting: String = "WEBHOOK_SECRET") throws {
        let keys = try secrets.split(separator: " ").map { try WebhookSigner.key(from: String($0), setting: setting) }
        guard !keys.isEmpty else { throw AdapterError("\(setting) is empty: set it to whsec_<base64 of 24–64 random bytes>") }
        self.keys = keys
    }

    static func key(from secret: String, setting: String) throws -> [UInt8] {
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        guard let bytes = Data(base64Encoded: encoded), !bytes.isEmpty else {
            throw AdapterError("\(setting) is not valid: expected whsec_ followed by base64")
        }
        return Array(bytes)
    }

    /// The `webhook-signature` header value for one message.
    public func signature(id: String, timestamp: Int, body: [UInt8]) -> String {
        var signed = Array("\(id).\(timestamp).".utf8)
        signed.append(contentsOf: body)
        return keys.map { key in
            let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))
            return "v1," + Data(mac).base64EncodedString()
        }.joined(separator: " ")
    }

    /// The three Standard Webhooks headers for one message.
    public func headers(id: String, timestamp: Int, body: [UInt8]) -> [(String, String)] {
        [("webhook-id", id), ("webhook-timestamp", String(timestamp)),
         ("webhook-signature", signature(id: id, timestamp: timestamp, body: body))]
    }
}
