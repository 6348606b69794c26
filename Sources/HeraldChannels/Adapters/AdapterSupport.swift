import Foundation
import HeraldCore
import HeraldHTTP

/// Small pieces shared by the provider adapters: base URLs, JSON answers, form encoding, redaction.
enum AdapterSupport {
    /// `url` without trailing slashes, or `fallback` when nil or empty; throws when not an http(s) URL.
    static func baseURL(_ url: String?, default fallback: String, variable: String) throws -> String {
        var base = (url?.trimmingCharacters(in: .whitespaces)).flatMap { $0.isEmpty ? nil : $0 } ?? fallback
        while base.hasSuffix("/") { base.removeLast() }
        guard let parsed = URL(string: base), let scheme = parsed.scheme?.lowercased(),
              scheme == "https" || scheme == "http", parsed.host != nil else {
            throw AdapterError("\(variable) must be an http(s) URL, got '\(base)'")
        }
        return base
    }

    /// The body parsed as JSON, or nil when it is empty or not JSON.
    static func json(_ response: HTTPResponse) -> JSONValue? {
        guard !response.body.isEmpty else { return nil }
        return try? JSONValue.parse(Data(response.body))
    }

    /// The first 200 bytes of the body as text, for messages about unreadable answers ("" when empty).
    static func snippet(_ response: HTTPResponse) -> String {
        let text = String(decoding: response.body.prefix(600), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return "" }
        return Truncation.prefix(text, maxUTF8Bytes: 200)
    }

    /// Seconds from `Retry-After`, when present and readable.
    static func retryAfter(_ response: HTTPResponse, now: Date) -> Double? {
        response.header("retry-after").flatMap { Backoff.parseRetryAfter($0, now: now) }
    }

    static func latencyMs(_ response: HTTPResponse) -> Int { Int(response.seconds * 1000) }

    /// `application/x-www-form-urlencoded`: every byte outside the unreserved set is percent-encoded
    /// (spaces as %20, which every form decoder accepts).
    static func formEncode(_ fields: [(String, String)]) -> String {
        fields.map { "\(percentEncode($0.0))=\(percentEncode($0.1))" }.joined(separator: "&")
    }

    static func percentEncode(_ s: String) -> String {
        var out = ""
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
            }
        }
        return out
    }

    /// `message` with every occurrence of each non-empty secret replaced, so a provider that echoes a
    /// credential back cannot leak it into `last_error` or the logs.
    static func redact(_ message: String, secrets: [String]) -> String {
        var out = message
        for secret in secrets where secret.count >= 4 {
            out = out.replacingOccurrences(of: secret, with: "[redacted]")
        }
        return out
    }

    static func redact(_ outcome: DeliveryOutcome, secrets: [String]) -> DeliveryOutcome {
        switch outcome {
        case .delivered: outcome
        case .retry(let after, let code, let m): .retry(after: after, code: code, message: redact(m, secrets: secrets))
        case .permanent(let code, let m): .permanent(code: code, message: redact(m, secrets: secrets))
        case .destinationInvalid(let code, let m):
            .destinationInvalid(code: code, message: redact(m, secrets: secrets))
        }
    }

    /// Transport failures, named for the provider ("expo: request timed out").
    static func transportOutcome(_ error: TransportError, provider: String, secrets: [String]) -> DeliveryOutcome {
        guard case .retry(let after, let code, let message) = error.asOutcome else { return error.asOutcome }
        return .retry(after: after, code: code, message: redact("\(provider): \(message)", secrets: secrets))
    }

    /// The shared shell of a single adapter's `classify`: transport failures become retries, an answer
    /// goes through the provider's own `outcome`, and every message is scrubbed of the adapter's secrets.
    /// `throttle` says whom a "slow down" is about (default: 429/503 with a wait is provider-wide).
    static func classify(_ result: Result<HTTPResponse, TransportError>, provider: String, secrets: [String],
                         now: Date, outcome: (HTTPResponse, Date) -> DeliveryOutcome,
                         throttle: (HTTPResponse, DeliveryOutcome) -> ThrottleScope? = {
                             ThrottleScope.providerWide($1, httpStatus: $0.status)
                         }) -> ClassifiedResponse {
        switch result {
        case .failure(let error):
            return ClassifiedResponse(transportOutcome(error, provider: provider, secrets: secrets))
        case .success(let response):
            let o = outcome(response, now)
            return ClassifiedResponse(redact(o, secrets: secrets), httpStatus: response.status,
                                      latencyMs: latencyMs(response), throttle: throttle(response, o))
        }
    }
}
