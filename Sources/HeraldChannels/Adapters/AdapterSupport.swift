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

    /// The first 200 bytes of the body as readable text, for messages about unreadable answers ("" when
    /// empty).
    static func snippet(_ response: HTTPResponse) -> String {
        let text = readable(String(decoding: response.body.prefix(600), as: UTF8.self))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return "" }
        return Truncation.prefix(text, maxUTF8Bytes: 200)
    }

    /// The longest message an outcome carries (UTF-8 bytes), whatever the provider sent.
    static let maxMessageBytes = 1_000
    /// The longest code or message id an outcome carries.
    static let maxCodeBytes = 200

    /// Text from outside (a body, a header, a server's reply) made fit for `last_error` and the logs:
    /// invalid UTF-8 is already repaired by `String(decoding:)`; NUL and every other control character
    /// except tab and newline become U+FFFD (a CR before a newline is dropped, a lone CR is a newline);
    /// and, with a limit, the text is cut on a character boundary.
    static func readable(_ text: String, maxUTF8Bytes: Int? = nil) -> String {
        var clean = text
        if text.unicodeScalars.contains(where: { isControl($0) }) {
            var scalars = String.UnicodeScalarView()
            var previousCR = false
            for scalar in text.unicodeScalars {
                if previousCR && scalar != "\n" { scalars.append("\n") }
                previousCR = scalar == "\r"
                if previousCR { continue }
                scalars.append(isControl(scalar) ? "\u{FFFD}" : scalar)
            }
            if previousCR { scalars.append("\n") }
            clean = String(scalars)
        }
        guard let maxUTF8Bytes else { return clean }
        return Truncation.prefix(clean, maxUTF8Bytes: maxUTF8Bytes)
    }

    /// C0 controls but tab and newline, DEL, and C1 controls.
    private static func isControl(_ s: Unicode.Scalar) -> Bool {
        (s.value < 0x20 && s != "\t" && s != "\n") || (0x7F...0x9F).contains(s.value)
    }

    /// Seconds from `Retry-After`, when present and readable (at most 24 h).
    static func retryAfter(_ response: HTTPResponse, now: Date) -> Double? {
        response.header("retry-after").flatMap { Backoff.parseRetryAfter($0, now: now) }
    }

    /// The transfer's duration in whole milliseconds, within what `latency_ms` (an `int`) holds.
    static func latencyMs(_ response: HTTPResponse) -> Int {
        let ms = (response.seconds * 1000).rounded()
        guard ms.isFinite else { return 0 }
        return Int(min(max(ms, 0), Double(Int32.max)))
    }

    /// `application/x-www-form-urlencoded`: every byte outside the unreserved set is percent-encoded
    /// (spaces as %20, which every form decoder accepts).
    static func formEncode(_ fields: [(String, String)]) -> String {
        fields.map { "\(percentEncode($0.0))=\(percentEncode($0.1))" }.joined(separator: "&")
    }

    static func percentEncode(_ s: String) -> String { PercentEncoding.encode(s) }

    /// `message` with every occurrence of each non-empty secret replaced, so a provider that echoes a
    /// credential back cannot leak it into `last_error` or the logs.
    static func redact(_ message: String, secrets: [String]) -> String {
        var out = message
        for secret in secrets where secret.count >= 4 {
            out = out.replacingOccurrences(of: secret, with: "[redacted]")
        }
        return out
    }

    /// The outcome fit to store: messages, codes and message ids readable (see `readable`), scrubbed of
    /// `secrets` and capped; a wait within 0…24 h (a non-finite one is dropped). Every classifier's
    /// answer goes through here, so whatever a provider sends, the record can be written and read.
    static func redact(_ outcome: DeliveryOutcome, secrets: [String]) -> DeliveryOutcome {
        // Redacted before the cut, so a secret is never left half in.
        func message(_ m: String) -> String {
            Truncation.prefix(redact(readable(m), secrets: secrets), maxUTF8Bytes: maxMessageBytes)
        }
        func code(_ c: String?) -> String? {
            c.map { Truncation.prefix(redact(readable($0), secrets: secrets), maxUTF8Bytes: maxCodeBytes) }
        }
        switch outcome {
        case .delivered(let id): return .delivered(messageId: code(id))
        case .retry(let after, let c, let m):
            return .retry(after: after.flatMap(Backoff.clampedWait), code: code(c), message: message(m))
        case .permanent(let c, let m): return .permanent(code: code(c), message: message(m))
        case .destinationInvalid(let c, let m): return .destinationInvalid(code: code(c), message: message(m))
        case .refused(let c, let m): return .refused(code: code(c), message: message(m))
        }
    }

    /// Transport failures, named for the provider ("expo: request timed out").
    static func transportOutcome(_ error: TransportError, provider: Provider, secrets: [String]) -> DeliveryOutcome {
        guard case .retry(let after, let code, let message) = error.asOutcome else {
            return redact(error.asOutcome, secrets: secrets)
        }
        return redact(.retry(after: after, code: code, message: "\(provider.rawValue): \(message)"), secrets: secrets)
    }

    /// The shared shell of a single adapter's `classify`: transport failures become retries, an answer
    /// goes through the provider's own `outcome`, and every message is scrubbed of the adapter's secrets.
    /// `throttle` says whom a "slow down" is about (default: 429/503 with a wait is provider-wide);
    /// `failure` classifies a transport failure that is the provider's own answer (an SMTP refusal), with
    /// its status, or returns nil for the shared retry.
    static func classify(_ result: Result<HTTPResponse, TransportError>, provider: Provider, secrets: [String],
                         now: Date, outcome: (HTTPResponse, Date) -> DeliveryOutcome,
                         throttle: (HTTPResponse, DeliveryOutcome) -> ThrottleScope? = {
                             ThrottleScope.providerWide($1, httpStatus: $0.status)
                         },
                         failure: (TransportError) -> (DeliveryOutcome, status: Int?)? = { _ in nil }) -> ClassifiedResponse {
        switch result {
        case .failure(let error):
            if let (o, status) = failure(error) {
                return ClassifiedResponse(redact(o, secrets: secrets), httpStatus: status)
            }
            return ClassifiedResponse(transportOutcome(error, provider: provider, secrets: secrets))
        case .success(let response):
            let o = outcome(response, now)
            return ClassifiedResponse(redact(o, secrets: secrets), httpStatus: response.status,
                                      latencyMs: latencyMs(response), throttle: throttle(response, o))
        }
    }
}
