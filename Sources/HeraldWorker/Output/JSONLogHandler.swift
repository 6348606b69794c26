import Foundation
import HeraldCore
import HeraldHTTP
import Logging

/// One JSON object per line on stderr: `{"ts":…,"level":"info","msg":"…","pass_id":…,…}`.
///
/// Nothing secret is ever passed to a logger above debug: tokens, phone numbers, addresses and message
/// bodies appear only in debug-level events, and even there tokens are masked (`Redact`).
///
///     LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: .info) }
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    public let label: String
    private let stream: LogStream

    public init(label: String, level: Logger.Level, stream: LogStream = .standardError) {
        self.label = label
        self.logLevel = level
        self.stream = stream
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var o: [String: JSONValue] = [
            "ts": .string(ISO8601.string(Date())),
            "level": .string(event.level.rawValue),
            "msg": .string(event.message.description),
        ]
        for (k, v) in metadata { o[k] = JSONLogHandler.json(v) }
        for (k, v) in event.metadata ?? [:] { o[k] = JSONLogHandler.json(v) }
        if let error = event.error, o["error"] == nil { o["error"] = .string("\(error)") }
        stream.write(JSONValue.object(o).jsonText + "\n")
    }

    static func json(_ v: Logger.Metadata.Value) -> JSONValue {
        switch v {
        case .string(let s): return .string(s)
        case .stringConvertible(let c):
            if let n = c as? Int { return .number(Double(n)) }
            if let d = c as? Double { return .number(d) }
            if let b = c as? Bool { return .bool(b) }
            return .string(c.description)
        case .array(let a): return .array(a.map(json))
        case .dictionary(let d): return .object(d.mapValues(json))
        }
    }
}

/// Where log lines go; a lock keeps lines whole when several threads log. A line that cannot be written
/// (a full disk, a closed pipe) is dropped: logging never stops a pass.
public final class LogStream: @unchecked Sendable {
    private let handle: FileHandle
    private let lock = NSLock()

    public init(_ handle: FileHandle) {
        self.handle = handle
    }

    public static let standardError = LogStream(.standardError)

    public func write(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        BestEffortOutput.append(text, to: handle.fileDescriptor)
    }
}

/// Masks what must not reach a log in full.
public enum Redact {
    /// "abcdef…wxyz" → "abcd…wxyz (64 chars)": enough to correlate, not enough to use.
    public static func token(_ s: String) -> String {
        guard s.count > 12 else { return String(repeating: "*", count: s.count) }
        return "\(s.prefix(4))…\(s.suffix(4)) (\(s.count) chars)"
    }

    /// "+15551234567" → "+1555…67"; "ana@example.com" → "a…@example.com";
    /// "https://user:pw@hooks.example.com/x" → "host:hooks.example.com" (URLs first: their userinfo has an @).
    public static func destination(_ s: String) -> String {
        if let url = Redaction.url(s) { return URL(string: url)?.host.map { "host:\($0)" } ?? "url" }
        if let at = s.firstIndex(of: "@") { return "\(s.prefix(1))…\(s[at...])" }
        if s.hasPrefix("+") { return "\(s.prefix(5))…\(s.suffix(2))" }
        if s.hasPrefix("http") { return "url" }
        return token(s)
    }
}
