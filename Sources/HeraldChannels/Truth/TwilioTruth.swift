import Crypto
import Foundation
import HeraldCore
import HeraldHTTP

/// Twilio's word on an SMS after the 201 (providers.md §4.3–4.5): the Message resource's `status` and
/// `error_code`, read by polling (`GET …/Messages/{sid}.json`) or from a status callback
/// (`MessageStatus`, `ErrorCode`, signed with `X-Twilio-Signature`).
public enum TwilioTruth {
    /// Statuses after which nothing more happens to an outbound message. `read` is RCS/WhatsApp through
    /// Twilio; `partially_delivered` (several recipients) counts as delivered — its meaning for one SMS
    /// is unconfirmed. Every other status (`queued`, `accepted`, `scheduled`, `sending`, `sent`, and any
    /// Twilio adds later) is "not final yet".
    static func finalStatus(_ status: String) -> FinalStatus? {
        switch status {
        case "delivered", "read", "partially_delivered": .delivered
        case "undelivered": .undelivered
        case "failed": .failed
        case "canceled": .canceled
        default: nil
        }
    }

    /// Error codes of a final failure that mean "stop texting this number" (the recipient's SMS is
    /// turned off, as the deliver path does for the synchronous ones): 21610 the recipient replied STOP
    /// (until START); 21211 / 21614 / 21635 invalid, not mobile, landline (TwilioAdapter.deactivatingCodes);
    /// 30005 unknown destination handset and 30006 landline or unreachable carrier — providers.md
    /// §4.4 gives "deactivate" for these two from third-party guidance only (unconfirmed by Twilio's
    /// own text). Others (30003 unreachable handset, 30007 carrier filtering, 30008 unknown, …) are
    /// recorded and nothing more.
    public static let optOutCodes: Set<String> = ["21610", "21211", "21614", "21635", "30005", "30006"]

    static let codeMeanings: [String: String] = [
        "21610": "the recipient replied STOP",
        "30003": "unreachable destination handset",
        "30005": "unknown destination handset",
        "30006": "landline or unreachable carrier",
        "30007": "filtered by the carrier",
        "30008": "unknown error",
    ]

    /// A report from a status and an error code (either source).
    public static func report(messageSid: String, status rawStatus: String, errorCode: String?, errorMessage: String?) -> TruthReport {
        let status = TruthText.clip(rawStatus.trimmingCharacters(in: .whitespaces).lowercased(), max: 40)
        let final = finalStatus(status)
        let code = (errorCode.flatMap { $0.isEmpty || $0 == "0" ? nil : $0 }).map { TruthText.clip($0, max: 64) }
        var error: String?
        if final != nil && final != .delivered {
            let meaning = errorMessage.map { TruthText.clip($0) } ?? code.flatMap { codeMeanings[$0] }
            error = meaning.map { "\(status): \($0)" } ?? status
        }
        let optOut = (final == .undelivered || final == .failed) && code.map(optOutCodes.contains) == true
        return TruthReport(provider: .twilio, messageId: messageSid, providerStatus: status, status: final,
                           errorCode: final == .delivered ? nil : code, error: error, optOut: optOut)
    }

    // MARK: - Polling

    /// What a `GET …/Messages/{sid}.json` said (404: Twilio does not know the message — deleted, or
    /// another account's sid).
    public typealias Poll = StatusPoll

    /// Reads the Message resource. Hostile input: any body, any status, never trapping.
    public static func poll(_ result: Result<HTTPResponse, TransportError>, messageSid: String) -> Poll {
        let response: HTTPResponse
        switch result {
        case .failure(let error): return .later(error.asOutcome.message ?? "transport error")
        case .success(let r): response = r
        }
        let json: JSONValue? = response.body.isEmpty ? nil : try? JSONValue.parse(Data(response.body))
        switch response.status {
        case 200:
            guard let status = TruthText.string(json?["status"], max: 40) else {
                return .later("twilio answered 200 without a status")
            }
            // error_code is a number or null in Twilio's JSON; a string of digits is accepted too.
            let code = TruthText.code(json?["error_code"])
            return .report(report(messageSid: messageSid, status: status, errorCode: code,
                                  errorMessage: TruthText.string(json?["error_message"])))
        case 404:
            return .notFound
        case 401, 403:
            return .forbidden("twilio answered \(response.status) to a status request: check TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN")
        default:
            return .later("twilio answered \(response.status) to a status request")
        }
    }

    /// A Message SID as Twilio writes them (`SM`/`MM` + 32 hex digits, providers.md §4.1); anything else
    /// stored as a message id is not polled.
    public static func isMessageSid(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 34, (u[0] == UInt8(ascii: "S") || u[0] == UInt8(ascii: "M")), u[1] == UInt8(ascii: "M") else { return false }
        return TruthText.hex(String(decoding: u[2...], as: UTF8.self)) != nil
    }

    // MARK: - Status callbacks

    /// A status callback's form body (`MessageSid`, `MessageStatus` — or the older `SmsSid`/`SmsStatus`
    /// — and `ErrorCode`). Throws a readable error when it is not one.
    public static func callback(_ params: [(String, String)]) throws -> TruthReport {
        func value(_ names: String...) -> String? {
            for n in names {
                if let v = params.first(where: { $0.0 == n })?.1.trimmingCharacters(in: .whitespaces), !v.isEmpty { return v }
            }
            return nil
        }
        guard let sid = value("MessageSid", "SmsSid") else {
            throw TruthError("a Twilio status callback without MessageSid")
        }
        guard let status = value("MessageStatus", "SmsStatus") else {
            throw TruthError("a Twilio status callback without MessageStatus")
        }
        return report(messageSid: TruthText.clip(sid, max: 64), status: status, errorCode: value("ErrorCode"),
                      errorMessage: value("ErrorMessage"))
    }
}

/// A readable reason why a payload is not what the provider sends.
public struct TruthError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// `application/x-www-form-urlencoded` bodies, strictly: `+` is a space, `%XX` a byte, and the result
/// must be UTF-8. Anything else throws instead of guessing.
public enum FormBody {
    public static func parse(_ body: String) throws -> [(String, String)] {
        guard !body.isEmpty else { return [] }
        var out: [(String, String)] = []
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try decode(parts[0])
            let value = parts.count > 1 ? try decode(parts[1]) : ""
            out.append((name, value))
        }
        return out
    }

    static func decode(_ s: Substring) throws -> String {
        var bytes: [UInt8] = []
        var u = s.utf8[...]
        while let c = u.first {
            u = u.dropFirst()
            if c == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if c == UInt8(ascii: "%") {
                guard u.count >= 2, let b = TruthText.hex(String(decoding: u.prefix(2), as: UTF8.self))?.first else {
                    throw TruthError("malformed percent-encoding in a form body")
                }
                bytes.append(b)
                u = u.dropFirst(2)
            } else {
                bytes.append(c)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw TruthError("a form body that is not UTF-8")
        }
        return text
    }
}

/// Twilio's request signature (providers.md §4.5, Twilio "webhooks security"): `X-Twilio-Signature` =
/// base64(HMAC-SHA1(auth token, the full URL + every POST parameter sorted by name, name then value
/// concatenated)). The URL is the one Twilio called, query string included.
///
///     TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", authToken: "12345",
///                             url: "https://mycompany.com/myapp.php?foo=1&bar=2", params: form)
public enum TwilioSignature {
    public static func compute(authToken: String, url: String, params: [(String, String)]) -> [UInt8] {
        var data = Array(url.utf8)
        // Sorted by name, then value (for repeated names), byte-wise.
        let sorted = params.sorted { a, b in
            let (an, bn) = (Array(a.0.utf8), Array(b.0.utf8))
            if an != bn { return an.lexicographicallyPrecedes(bn) }
            return Array(a.1.utf8).lexicographicallyPrecedes(Array(b.1.utf8))
        }
        for (name, value) in sorted {
            data += Array(name.utf8)
            data += Array(value.utf8)
        }
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: data, using: SymmetricKey(data: Array(authToken.utf8)))
        return Array(mac)
    }

    public static func base64(authToken: String, url: String, params: [(String, String)]) -> String {
        Data(compute(authToken: authToken, url: url, params: params)).base64EncodedString()
    }

    /// True when `signature` is Twilio's for this URL and these parameters. Compared in constant time.
    /// Twilio's own libraries also accept the URL with the default port written out or left out (a
    /// proxy may add or drop ":443"); so does this (library behaviour, not a documented rule).
    public static func isValid(_ signature: String, authToken: String, url: String, params: [(String, String)]) -> Bool {
        guard let given = Data(base64Encoded: signature.trimmingCharacters(in: .whitespaces)).map(Array.init),
              given.count == 20 else { return false }
        var ok = false
        for candidate in urlVariants(url) {
            // Every candidate is computed and compared, so timing does not say which one matched.
            if TruthText.equal(compute(authToken: authToken, url: candidate, params: params), given) { ok = true }
        }
        return ok
    }

    /// The URL as given, and with its default port added or removed.
    static func urlVariants(_ url: String) -> [String] {
        guard var c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), c.host != nil else { return [url] }
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        guard let defaultPort else { return [url] }
        if c.port == defaultPort {
            c.port = nil
        } else if c.port == nil {
            c.port = defaultPort
        } else {
            return [url]
        }
        guard let other = c.string, other != url else { return [url] }
        return [url, other]
    }
}
