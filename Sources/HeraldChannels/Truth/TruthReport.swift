import Foundation
import HeraldCore

/// What a provider finally said about a message it had accepted (docs/delivery-truth.md). Stored on
/// the delivery as `final_status` (sql/015_provider_truth.sql).
public enum FinalStatus: String, Sendable, CaseIterable {
    /// It reached the handset or the mailbox (WhatsApp `read` included).
    case delivered
    /// Twilio: the carrier did not deliver it.
    case undelivered
    /// Twilio or WhatsApp: it could not be sent.
    case failed
    /// Twilio: a scheduled message was canceled.
    case canceled
    /// SendGrid: a hard bounce (`bounce` with `type: bounce`), or a bounce of no stated type.
    case bounced
    /// SendGrid: a soft block (`bounce` with `type: blocked`): the address may work another time.
    case blocked
    /// SendGrid: not sent at all (suppressed address, invalid, …).
    case dropped
    /// SendGrid: the recipient marked it as spam.
    case complained
    /// SendGrid: the recipient unsubscribed from it (`unsubscribe`, `group_unsubscribe`).
    case unsubscribed
    /// Polling gave up without a final word (overridable by a later event).
    case expired
    /// The provider no longer knows the message (overridable by a later event).
    case unknown
}

/// One provider's word about one message, from a status poll or a webhook event. Pure data: the
/// worker matches it to a delivery and applies it.
public struct TruthReport: Sendable, Equatable {
    /// "twilio", "sendgrid" or "whatsapp": only deliveries of this provider can match.
    public var provider: Provider
    /// The message id as herald stored it in `notification_deliveries.provider_message_id` (Twilio's
    /// MessageSid, SendGrid's X-Message-Id, WhatsApp's wamid).
    public var messageId: String?
    /// SendGrid only: the queue row id herald put in `custom_args.notification_id`, matched together
    /// with `destination` against deliveries that stored no message id (a 202 without X-Message-Id).
    public var queueId: UUID?
    public var destination: String?
    /// The provider's own word, e.g. "undelivered", "bounce", "failed".
    public var providerStatus: String
    /// nil: not final (queued, sent, processed, open, …).
    public var status: FinalStatus?
    public var errorCode: String?
    public var error: String?
    /// The recipient's channel should be turned off (hard bounce, spam report, STOP, dead number, not
    /// on WhatsApp).
    public var optOut: Bool

    public init(provider: Provider, messageId: String?, queueId: UUID? = nil, destination: String? = nil,
                providerStatus: String, status: FinalStatus?, errorCode: String? = nil, error: String? = nil,
                optOut: Bool = false) {
        self.provider = provider
        self.messageId = messageId
        self.queueId = queueId
        self.destination = destination
        self.providerStatus = providerStatus
        self.status = status
        self.errorCode = errorCode
        self.error = error
        self.optOut = optOut
    }

    /// How much this word outranks another about the same delivery: a delivery's final status only
    /// changes to one of a higher rank. 0 not final (or expired/unknown), 1 delivered, 2 a failure,
    /// 3 a failure that turns the channel off. So a late bounce or spam report overrides `delivered`,
    /// out-of-order callbacks (`sent` after `delivered`) change nothing, and a replayed event (same
    /// rank as what it already set) is a no-op: it cannot turn a channel off a second time after the
    /// recipient turned it back on.
    public var rank: Int { Self.rank(status, optOut: optOut) }

    public static func rank(_ status: FinalStatus?, optOut: Bool) -> Int {
        switch status {
        case nil, .expired?, .unknown?: 0
        case .delivered?: 1
        default: optOut ? 3 : 2
        }
    }

    /// The reason stored in `notify_<channel>_disabled_reason`: "twilio 30006: …".
    public var reason: String {
        var text = "\(provider.rawValue) \(errorCode ?? providerStatus)"
        if let error, !error.isEmpty { text += ": \(error)" }
        return TruthText.clip(text)
    }
}

/// Helpers for hostile input: numbers and strings from outside, never trapping.
public enum TruthText {
    /// At most `max` UTF-8 bytes, cut on a character boundary, without NUL: PostgreSQL's text and jsonb
    /// cannot hold U+0000, so one NUL from a provider's JSON (`"a\u0000b"`) or form (`%00`) would fail
    /// every statement that stores it, and the events phase forever.
    public static func clip(_ s: String, max: Int = 500) -> String {
        let clean = s.contains("\u{0}") ? String(s.unicodeScalars.filter { $0 != "\u{0}" }.map(Character.init)) : s
        return Truncation.prefix(clean, maxUTF8Bytes: max)
    }

    /// An integer from a JSON value that is an integral number or a string of digits, without trapping
    /// on 1e300, 0.5 or "x".
    public static func int(_ v: JSONValue?) -> Int? {
        switch v {
        case .number(let n)?: return Int(exactly: n)
        case .string(let s)?: return Int(s.trimmingCharacters(in: .whitespaces))
        default: return nil
        }
    }

    /// A code as text: an integral number or a non-empty string (clipped).
    public static func code(_ v: JSONValue?) -> String? {
        switch v {
        case .number(let n)?: return Int(exactly: n).map(String.init)
        case .string(let s)?:
            let t = s.trimmingCharacters(in: .whitespaces)
            return t.isEmpty ? nil : clip(t, max: 64)
        default: return nil
        }
    }

    /// A non-empty string (clipped), or nil.
    public static func string(_ v: JSONValue?, max: Int = 500) -> String? {
        guard case .string(let s)? = v else { return nil }
        let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
        return t.isEmpty ? nil : clip(t, max: max)
    }

    /// Constant-time equality of two byte strings of equal length (false when lengths differ).
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    /// Bytes from hexadecimal text (either case); nil on anything else.
    public static func hex(_ s: String) -> [UInt8]? {
        let chars = Array(s.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
