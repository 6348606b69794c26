import CCurl
import Foundation

/// Where `HERALD_CURL_VERBOSE=1` sends libcurl's description of each transfer: connection notes,
/// request and response header lines, SMTP commands and replies — with credentials masked and no
/// body or TLS data (see ``CurlDebugMasker``).
///
///     var options = TransportOptions()
///     options.debugOutput = CurlDebugOutput { line in lines.append(line) }   // tests; default: the environment
public struct CurlDebugOutput: Sendable {
    public let write: @Sendable (String) -> Void

    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    /// Lines to stderr, each call in one write.
    public static let standardError = CurlDebugOutput { text in BestEffortOutput.standardError(text) }

    /// `standardError` when `HERALD_CURL_VERBOSE=1`, else nil (nothing is described).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> CurlDebugOutput? {
        environment["HERALD_CURL_VERBOSE"] == "1" ? .standardError : nil
    }
}

/// Turns what libcurl's debug callback receives into lines fit for a terminal or a log: one per
/// transfer, since it remembers an SMTP `334` challenge, after which the client's next line is a
/// credential.
///
/// - header fields that carry credentials (`authorization`, `proxy-authorization`, `cookie`,
///   `set-cookie`, `x-api-key`, names with `token`, `secret`, `password`, `api-key`, `session`…) keep
///   their name and auth scheme: `authorization: Bearer ***`;
/// - a request target's or URL's query string and a URL's userinfo become `***`, and a long token-like
///   path segment (an APNs device token in `/3/device/<token>`) its first and last four characters;
/// - SMTP: `AUTH PLAIN ***`, and the line answering a `334` is `***`;
/// - body and TLS data (`CURLINFO_DATA_*`, `CURLINFO_SSL_DATA_*`) are not shown at all.
///
///     var masker = CurlDebugMasker()
///     masker.lines(.headerOut, "Authorization: Bearer abc\r\n")   // ["> Authorization: Bearer ***"]
public struct CurlDebugMasker {
    public enum Kind: Sendable {
        case text, headerIn, headerOut, data

        init(_ type: curl_infotype) {
            switch type {
            case CURLINFO_TEXT: self = .text
            case CURLINFO_HEADER_IN: self = .headerIn
            case CURLINFO_HEADER_OUT: self = .headerOut
            default: self = .data
            }
        }
    }

    /// The server's last reply was an SMTP `334` challenge: the client's next line answers it.
    private var challenged = false

    public init() {}

    /// The lines to print for one callback, each with curl's prefix (`* `, `< `, `> `); none for data.
    public mutating func lines(_ kind: Kind, _ text: String) -> [String] {
        // "\r\n" is one Character in Swift: split on it as well as on "\n".
        var raw = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { line in line.last == "\r" ? line.dropLast() : line }
        if raw.last?.isEmpty == true { raw.removeLast() }   // the text's final newline
        switch kind {
        case .data:
            return []
        case .text:
            return raw.map { "* " + Self.maskText(String($0)) }
        case .headerIn:
            if let first = raw.first(where: { !$0.isEmpty }) {
                challenged = first.hasPrefix("334")
            }
            return raw.map { "< " + Self.maskHeaderLine(String($0)) }
        case .headerOut:
            var lines: [String] = []
            for line in raw {
                if line.isEmpty {
                    lines.append(">")
                } else if challenged {
                    challenged = false
                    lines.append("> " + Self.mask)
                } else {
                    lines.append("> " + Self.maskCommand(Self.maskHeaderLine(String(line))))
                }
            }
            return lines
        }
    }

    // MARK: Pure masking

    static let mask = "***"

    /// Whether a header field's value is a credential.
    public static func isSensitive(headerName: String) -> Bool {
        let name = headerName.lowercased()
        if ["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
            "x-goog-api-key", "x-auth-token", "x-access-token", "x-csrf-token"].contains(name) {
            return true
        }
        return ["token", "secret", "passw", "api-key", "apikey", "session", "cookie", "credential", "authorization"]
            .contains { name.contains($0) }
    }

    /// `Name: value` with a sensitive value masked (its auth scheme kept), and a request line's query
    /// masked; anything else unchanged.
    public static func maskHeaderLine(_ line: String) -> String {
        if let masked = maskRequestLine(line) { return masked }
        // HTTP/2 pseudo-header fields (":path: /x") begin with a colon.
        let nameStart = line.hasPrefix(":") ? line.index(after: line.startIndex) : line.startIndex
        guard let colon = line[nameStart...].firstIndex(of: ":"), colon != nameStart else { return line }
        let name = line[..<colon]
        // A field name is a token: no spaces ("MAIL FROM:<…>" is not a field).
        guard !name.contains(where: { $0 == " " || $0 == "\t" }) else { return line }
        let value = line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" })
        if isSensitive(headerName: String(name)) {
            guard !value.isEmpty else { return line }
            return "\(name): \(maskedCredential(value))"
        }
        if name == ":path" { return "\(name): \(maskQuery(String(value)))" }
        return maskURLs(line)
    }

    /// "Bearer abc" → "Bearer ***"; "abc" → "***".
    static func maskedCredential(_ value: Substring) -> String {
        if let space = value.firstIndex(of: " ") {
            let scheme = value[..<space]
            if scheme.count <= 20, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-") }) {
                return "\(scheme) \(mask)"
            }
        }
        return mask
    }

    /// "POST /hook?key=k HTTP/1.1" → "POST /hook?*** HTTP/1.1"; nil when `line` is not a request line.
    static func maskRequestLine(_ line: String) -> String? {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/"), !parts[0].isEmpty,
              parts[0].allSatisfy({ $0.isASCII && $0.isUppercase }) else { return nil }
        return "\(parts[0]) \(maskQuery(String(parts[1]))) \(parts[2])"
    }

    /// A path's or URL's query string as `***`, a URL's userinfo as `***@`, and path segments that look
    /// like tokens (32 or more letters, digits, `-`, `_`, `:`) as `abcd…wxyz`.
    static func maskQuery(_ target: String) -> String {
        var target = target
        if let scheme = target.range(of: "://") {
            let rest = target[scheme.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                target = String(target[..<scheme.upperBound]) + mask + String(target[at...])
            }
        }
        let q = target.firstIndex(of: "?")
        let path = q.map { target[..<$0] } ?? target[...]
        // Device tokens travel in paths (APNs: /3/device/<token>): long token-like segments are cut.
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            guard segment.count >= 32,
                  segment.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_:".contains($0)) })
            else { return String(segment) }
            return "\(segment.prefix(4))…\(segment.suffix(4))"
        }
        let masked = segments.joined(separator: "/")
        return q == nil ? masked : masked + "?" + mask
    }

    /// Every http(s) URL in free text with its userinfo and query masked.
    static func maskURLs(_ text: String) -> String {
        guard text.contains("://") else { return text }
        var out = ""
        var rest = Substring(text)
        while let range = rest.range(of: "://") {
            // The scheme: the letters just before "://".
            var start = range.lowerBound
            while start > rest.startIndex, rest[rest.index(before: start)].isLetter { start = rest.index(before: start) }
            let end = rest[range.upperBound...].firstIndex(where: { $0.isWhitespace || $0 == "]" || $0 == "'" || $0 == "\"" || $0 == ">" })
                ?? rest.endIndex
            out += rest[..<start]
            let url = String(rest[start..<end])
            let scheme = rest[start..<range.lowerBound].lowercased()
            out += (scheme == "http" || scheme == "https") ? maskQuery(url) : url
            rest = rest[end...]
        }
        return out + rest
    }

    /// libcurl's notes, with HTTP/2 and HTTP/3 header fields (`[authorization: Bearer …]`, curl 8) and
    /// URLs masked.
    public static func maskText(_ line: String) -> String {
        guard line.contains("[") else { return maskURLs(line) }
        var out = ""
        var rest = Substring(line)
        while let open = rest.firstIndex(of: "["), let close = rest[open...].firstIndex(of: "]") {
            out += rest[...open]
            let inner = String(rest[rest.index(after: open)..<close])
            out += inner.contains(": ") ? maskHeaderLine(inner) : inner
            out += "]"
            rest = rest[rest.index(after: close)...]
        }
        return maskURLs(out + rest)
    }

    /// SMTP commands: `AUTH <mechanism> <initial response>` keeps only the mechanism.
    public static func maskCommand(_ line: String) -> String {
        let words = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard words.count == 3, words[0].uppercased() == "AUTH" else { return line }
        return "\(words[0]) \(words[1]) \(mask)"
    }
}

/// One transfer's debug output: the masker's state and where its lines go. Reached from libcurl's
/// debug callback through the transfer.
final class CurlDebugLog {
    private var masker = CurlDebugMasker()
    private let output: CurlDebugOutput
    private let label: String

    init(output: CurlDebugOutput, label: String) {
        self.output = output
        self.label = label
    }

    func received(_ type: curl_infotype, _ data: UnsafePointer<CChar>, _ count: Int) {
        let kind = CurlDebugMasker.Kind(type)
        guard kind != .data else { return }
        let text = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        let lines = masker.lines(kind, text)
        guard !lines.isEmpty else { return }
        output.write(lines.map { "[\(label)] \($0)\n" }.joined())
    }
}
