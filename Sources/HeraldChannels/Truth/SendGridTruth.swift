import Crypto
import Foundation
import HeraldCore

/// SendGrid's Event Webhook (not in providers.md; from SendGrid's "Event Webhook" and "Event Webhook
/// Security Features" pages and the official SDKs' verifiers): a POST of a JSON array of events, each
/// with `event`, `email`, `timestamp`, `sg_event_id`, `sg_message_id` and the message's `custom_args`
/// at top level (herald's `notification_id`).
///
/// Signed Event Webhook: `X-Twilio-Email-Event-Webhook-Signature` is base64 of an ECDSA P-256 / SHA-256
/// signature (DER) over the `X-Twilio-Email-Event-Webhook-Timestamp` header's text followed by the raw
/// body, byte for byte (the body SendGrid posts ends in "\r\n", which is signed too). The verification
/// key shown in SendGrid's settings is base64 of a DER SubjectPublicKeyInfo.
public struct SendGridEventKey: @unchecked Sendable {
    /// Immutable once made (swift-crypto's key types are values that do not declare Sendable).
    let key: P256.Signing.PublicKey

    /// `SENDGRID_WEBHOOK_PUBLIC_KEY`: base64 DER (as SendGrid shows it) or a PEM "PUBLIC KEY" block.
    public init(_ text: String) throws {
        var s = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if s.hasPrefix("-----BEGIN") {
            s = s.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        }
        s = s.filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: s) else {
            throw TruthError("SENDGRID_WEBHOOK_PUBLIC_KEY is not base64: paste the verification key from SendGrid's "
                + "Mail Settings → Event Webhook → Signed Event Webhook")
        }
        do {
            key = try P256.Signing.PublicKey(derRepresentation: der)
        } catch {
            throw TruthError("SENDGRID_WEBHOOK_PUBLIC_KEY is not an ECDSA P-256 public key (base64 DER SubjectPublicKeyInfo)")
        }
    }

    /// True when `signature` (base64 DER) signs `timestamp + body`.
    public func isValid(signature: String, timestamp: String, body: [UInt8]) -> Bool {
        guard let der = Data(base64Encoded: signature.trimmingCharacters(in: .whitespaces)),
              let sig = try? P256.Signing.ECDSASignature(derRepresentation: der) else { return false }
        return key.isValidSignature(sig, for: Data(Array(timestamp.utf8) + body))
    }
}

public enum SendGridTruth {
    public static let signatureHeader = "x-twilio-email-event-webhook-signature"
    public static let timestampHeader = "x-twilio-email-event-webhook-timestamp"

    /// The X-Message-Id herald stored, from an event's `sg_message_id`: the part before the first ".".
    /// (SendGrid: "X-Message-Id … the first half of sg_message_id"; e.g. `LRzXl_NHStOGhQ4kofSm_A.filterdrecv-…`.)
    public static func messageId(_ sgMessageId: String) -> String? {
        let head = sgMessageId.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let t = head.trimmingCharacters(in: .whitespaces)
        return t.isEmpty ? nil : TruthText.clip(t, max: 128)
    }

    /// The events of one verified body: one report per event that names a message. An element that is
    /// not an object (`null`, a number) is skipped like an event that names no message, so the others
    /// are kept. Throws a readable error when the body is not a JSON array.
    public static func reports(body: [UInt8]) throws -> [TruthReport] {
        let json: JSONValue
        do { json = try JSONValue.parse(Data(body)) } catch {
            throw TruthError("the SendGrid event body is not JSON")
        }
        guard case .array(let events) = json else {
            throw TruthError("the SendGrid event body is not a JSON array of events")
        }
        var out: [TruthReport] = []
        for event in events {
            guard case .object = event, let r = report(event) else { continue }
            out.append(r)
        }
        return out
    }

    /// A `dropped` reason that says SendGrid will drop every email to the address.
    static func isSuppression(_ reason: String) -> Bool {
        // "Invalid" alone is an invalid address; "Invalid SMTPAPI header" is about the message.
        let r = reason.lowercased().trimmingCharacters(in: .whitespaces)
        return ["bounced address", "spam reporting address", "unsubscribed address", "invalid", "invalid address"].contains(r)
    }

    /// One event. nil when it names no message (neither `sg_message_id` nor `notification_id` + `email`).
    static func report(_ e: JSONValue) -> TruthReport? {
        let kind = TruthText.string(e["event"], max: 40)?.lowercased() ?? ""
        let messageId = TruthText.string(e["sg_message_id"], max: 400).flatMap(messageId)
        let queueId = TruthText.string(e["notification_id"], max: 64).flatMap(UUID.init(uuidString:))
        let email = TruthText.string(e["email"], max: 320)
        guard messageId != nil || (queueId != nil && email != nil) else { return nil }
        let reason = TruthText.string(e["reason"]) ?? TruthText.string(e["response"])
        let smtpStatus = TruthText.code(e["status"])
        var status: FinalStatus?
        var optOut = false
        var error: String?
        var code: String? = smtpStatus
        switch kind {
        case "delivered":
            status = .delivered
            code = nil
        case "bounce":
            // `type` is "bounce" (hard: the address does not accept mail) or "blocked" (soft: refused this
            // time, e.g. reputation or content). Only an explicit hard bounce turns email off.
            let type = TruthText.string(e["type"], max: 40)?.lowercased()
            status = type == "blocked" ? .blocked : .bounced
            optOut = type == "bounce"
            var text = type.map { "\($0)" } ?? "bounce"
            if let c = TruthText.string(e["bounce_classification"], max: 80) { text += " (\(c))" }
            if let reason { text += ": \(reason)" }
            error = text
        case "dropped":
            // Not sent. When SendGrid suppressed the address ("Bounced Address", "Spam Reporting
            // Address", "Unsubscribed Address", "Invalid"), every later email to it would be dropped
            // too — perhaps for a suppression older than herald: email is turned off, naming why.
            // Other reasons (a content or size problem) leave the channel as it is.
            status = .dropped
            optOut = reason.map(Self.isSuppression) ?? false
            error = reason.map { "dropped: \($0)" } ?? "dropped"
        case "spamreport":
            status = .complained
            optOut = true
            code = nil
            error = "the recipient reported it as spam"
        case "unsubscribe", "group_unsubscribe":
            // The person's own wish: no more email (herald sends one kind of email per recipient, so an
            // unsubscribe from the message's group is one from herald's email).
            status = .unsubscribed
            optOut = true
            code = nil
            error = "the recipient unsubscribed"
        default:
            // processed, deferred, open, click, group_resubscribe, and anything new: not a final word on
            // delivery. (A resubscribe does not turn email back on: that is the person's setting.)
            status = nil
            code = nil
        }
        return TruthReport(provider: .sendgrid, messageId: messageId, queueId: queueId,
                           destination: email, providerStatus: kind.isEmpty ? "?" : kind,
                           status: status, errorCode: code, error: error.map { TruthText.clip($0) }, optOut: optOut)
    }
}
