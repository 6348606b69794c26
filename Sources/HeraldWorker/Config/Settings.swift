import Foundation
import HeraldPostgres

/// Where herald's settings come from, highest first: flags (applied by the CLI), the environment, then an
/// optional config file of `KEY=VALUE` lines (`HERALD_CONFIG=/etc/herald.env`). A secret may come from a
/// file: `WEBHOOK_SECRET_FILE=/run/secrets/webhook` is read when `WEBHOOK_SECRET` is not set.
///
///     let settings = try Settings.load()
///     let url = settings["DATABASE_URL"]
public struct Settings: Sendable {
    private var values: [String: String]
    /// Where each value came from, for `herald doctor`; a key not here came from the environment.
    private var sources: [String: SettingSource] = [:]

    public init(_ values: [String: String]) {
        self.values = values
    }

    /// The process environment, over the config file named by `HERALD_CONFIG` when there is one.
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Settings {
        var merged: [String: String] = [:]
        if let path = environment["HERALD_CONFIG"], !path.isEmpty {
            merged = try parseConfigFile(at: path)
        }
        var settings = Settings(merged.merging(environment) { _, env in env })
        for key in merged.keys where environment[key] == nil { settings.sources[key] = .configFile }
        return settings
    }

    /// A value given on the command line, over any other.
    public mutating func setFlag(_ key: String, _ value: String) {
        values[key] = value
        sources[key] = .flag
    }

    /// Where `key`'s value came from; nil when it is not set.
    public func source(of key: String) -> SettingSource? {
        self[key] == nil ? nil : sources[key] ?? .environment
    }

    /// Every key with a value, sorted.
    public var keys: [String] { values.filter { !$0.value.isEmpty }.keys.sorted() }

    /// `KEY=VALUE` lines; `#` starts a comment; values may be wrapped in single or double quotes.
    static func parseConfigFile(at path: String) throws -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigError("HERALD_CONFIG names \(path), which cannot be read")
        }
        var out: [String: String] = [:]
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") { line = String(line.dropFirst(7)) }
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigError("\(path):\(n + 1): expected KEY=VALUE")
            }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let f = value.first, f == "\"" || f == "'", value.last == f {
                value = String(value.dropFirst().dropLast())
            }
            out[key] = value
        }
        return out
    }

    /// A plain value; empty counts as unset.
    public subscript(_ key: String) -> String? {
        guard let v = values[key], !v.isEmpty else { return nil }
        return v
    }

    /// A secret: `KEY`, else the contents of the file named by `KEY_FILE` (trailing newline trimmed).
    /// Setting both `KEY` and `KEY_FILE` is an error: which one wins would be a guess.
    public func secret(_ key: String) throws -> String? {
        if self[key] != nil && self[key + "_FILE"] != nil {
            throw ConfigError("both \(key) and \(key)_FILE are set: set only one of them")
        }
        if let v = self[key] { return v }
        guard let path = self[key + "_FILE"] else { return nil }
        guard let data = FileManager.default.contents(atPath: path),
              let text = String(data: data, encoding: .utf8) else {
            throw ConfigError("\(key)_FILE names \(path), which cannot be read")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw ConfigError("\(key)_FILE names \(path), which is empty") }
        return trimmed
    }

    public func int(_ key: String) throws -> Int? {
        guard let v = self[key] else { return nil }
        guard let n = Int(v) else { throw ConfigError("\(key) must be an integer, got '\(v)'") }
        return n
    }

    /// An integer that must lie in `range`: anything else exits 1 with a message naming the key, the
    /// range and the value given.
    ///
    ///     let lease = try settings.int("HERALD_LEASE_SECONDS", in: 30...86_400)
    public func int(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let n = try int(key) else { return nil }
        guard range.contains(n) else {
            throw ConfigError("\(key) must be between \(range.lowerBound) and \(range.upperBound) (it is \(n))")
        }
        return n
    }

    public func bool(_ key: String) throws -> Bool? {
        guard let v = self[key]?.lowercased() else { return nil }
        switch v {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigError("\(key) must be true or false, got '\(v)'")
        }
    }

    /// Every setting whose name starts with `prefix` (e.g. WHATSAPP_TEMPLATE_).
    public func withPrefix(_ prefix: String) -> [String: String] {
        values.filter { $0.key.hasPrefix(prefix) && !$0.value.isEmpty }
    }

    /// A file's text, for settings that name a key or credentials file (APNS_KEY_FILE, …).
    public func fileText(_ key: String) throws -> String? {
        guard let path = self[key] else { return nil }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8),
              !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ConfigError("\(key) names \(path), which cannot be read (or is empty)")
        }
        return text
    }

    /// The database to use: `DATABASE_URL`, or the file named by `DATABASE_URL_FILE` (a mounted secret);
    /// nil lets libpq use its `PG*` variables and `~/.pgpass`. One libpq cannot read (another driver's
    /// URL such as `postgresql+psycopg2://…` or `jdbc:postgresql://…`) is a configuration error whose
    /// message keeps its password out.
    public func databaseURL() throws -> String? {
        guard let url = try secret("DATABASE_URL") else { return nil }
        do {
            try PGConnection.checkConninfo(url)
        } catch let error as PGError {
            throw ConfigError("DATABASE_URL is neither a postgresql:// URI nor a libpq conninfo (host=… dbname=…): \(error.message)")
        }
        return url
    }
}

/// Where a setting's value came from, highest precedence first.
public enum SettingSource: String, Sendable {
    case flag
    case environment
    /// The `KEY=VALUE` file named by `HERALD_CONFIG`.
    case configFile = "config file"
}

/// A configuration problem: exit code 1, before any row is touched. The message says what to set.
public struct ConfigError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
