import Foundation
import HeraldCore
import Logging

/// The settings as a pass would read them: one line per variable set — where it came from (a flag, the
/// environment, a file named by `X_FILE`, the config file named by `HERALD_CONFIG`), its value unless
/// the registry calls it secret (`set (from environment)` then) — and whether it is valid; then
/// `settings.pass`, whether a pass would start with them (`PassConfig.load`, the pass's own checks).
/// A variable herald does not read, in the config file or named `HERALD_…`, is a warning: a typo
/// leaves a default in force.
///
///     SettingsCheck(settings: settings).checks()
///     // ok   settings.APNS_ENV      sandbox (from environment)
///     // ok   settings.DATABASE_URL  set (from file /run/secrets/db, named by DATABASE_URL_FILE in environment)
struct SettingsCheck {
    let settings: Settings

    func checks() -> [DoctorCheck] {
        var lines = subjects().map(line)
        let pass: Result<PassConfig, Error> = Result { try PassConfig.load(settings, options: PassOptions()) }
        switch pass {
        case .success(let config):
            return lines + [DoctorCheck("settings.pass", .ok, "a pass would start: " + Self.describe(config.routes))]
        case .failure(let error):
            // The pass's error names the variable at fault first: that variable's line fails with its words.
            let refusal = "\(error)"
            if let i = culprit(of: refusal, among: lines), lines[i].status != .fail {
                lines[i].status = .fail
                lines[i].detail = refusal + "; " + lines[i].detail
            }
            return lines + [DoctorCheck("settings.pass", .fail, "a pass would stop: " + refusal)]
        }
    }

    /// The line of the first variable `message` names, as a whole word (`X` or `X_FILE`).
    func culprit(of message: String, among lines: [DoctorCheck]) -> Int? {
        for word in message.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }) {
            let key = word.hasSuffix("_FILE") && lines.contains(where: { $0.name == "settings.\(word)" }) == false
                ? String(word.dropLast(5)) : String(word)
            if let i = lines.firstIndex(where: { $0.name == "settings." + key }) { return i }
        }
        return nil
    }

    /// The settings a line is given to: each declared variable set (`X` for both `X` and `X_FILE`), in
    /// the registry's order, then the undeclared ones.
    func subjects() -> [String] {
        var declared: [String: Int] = [:]
        var undeclared: Set<String> = []
        for key in settings.keys {
            guard let spec = Settings.spec(key) else {
                if settings.source(of: key) == .configFile || key.hasPrefix("HERALD_") { undeclared.insert(key) }
                continue
            }
            let base = key.hasSuffix("_FILE") && !spec.matchesExactly(key) ? String(key.dropLast(5)) : key
            declared[base] = Settings.registry.firstIndex(of: spec) ?? Int.max
        }
        return declared.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key) + undeclared.sorted()
    }

    /// The line of one setting: its source and value, or why it cannot be used.
    func line(_ key: String) -> DoctorCheck {
        let name = "settings." + key
        guard let spec = Settings.spec(key) else {
            return DoctorCheck(name, .warn, "not a setting herald reads, so it changes nothing: a typo? (from \(describe(key)))")
        }
        let fileKey = key + "_FILE"
        if !spec.matchesExactly(fileKey), let path = settings[fileKey] {
            do {
                _ = try settings.secret(key)
                return DoctorCheck(name, .ok, "set (from file \(path), named by \(fileKey) in \(describe(fileKey)))")
            } catch {
                return DoctorCheck(name, .fail, "\(error)")
            }
        }
        let value = settings[key] ?? ""
        let source = "(from \(describe(key)))"
        if let problem = Self.problem(key, value) { return DoctorCheck(name, .fail, "\(problem) \(source)") }
        return DoctorCheck(name, .ok, (spec.secret ? "set" : Self.shown(value)) + " " + source)
    }

    /// Where a set variable came from, in words.
    func describe(_ key: String) -> String {
        switch settings.source(of: key) ?? .environment {
        case .flag: "a flag"
        case .environment: "environment"
        case .configFile: "config file \(settings["HERALD_CONFIG"] ?? "")"
        }
    }

    /// What is wrong with a setting that only the command line reads (the pass's own are checked by
    /// `settings.pass`); nil when nothing is.
    static func problem(_ key: String, _ value: String) -> String? {
        switch key {
        case "HERALD_LOG_LEVEL":
            guard Logger.Level(rawValue: value.lowercased()) == nil else { return nil }
            return "HERALD_LOG_LEVEL must be one of trace, debug, info, notice, warning, error; got '\(shown(value))'"
        case "HERALD_SQL_DIR":
            var isDirectory: ObjCBool = false
            guard !FileManager.default.fileExists(atPath: value, isDirectory: &isDirectory) || !isDirectory.boolValue else { return nil }
            return "HERALD_SQL_DIR names \(shown(value)), which is not a directory"
        default:
            return nil
        }
    }

    /// A value as shown: control characters replaced, cut to 120 characters.
    static func shown(_ value: String) -> String {
        let clean = String(value.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return clean.count > 120 ? String(clean.prefix(119)) + "…" : clean
    }

    /// Each routed channel and what serves it: `push: apns, fcm; in_app: inbox`.
    static func describe(_ routes: ChannelRoutes) -> String {
        Channel.allCases.compactMap { channel -> String? in
            guard let route = routes[channel] else { return nil }
            switch route {
            case .log: return "\(channel.rawValue): log"
            case .inbox: return "\(channel.rawValue): inbox"
            case .providers(let adapters, let order):
                let providers = order.isEmpty ? adapters.keys.sorted() : order
                return "\(channel.rawValue): " + providers.map(\.rawValue).joined(separator: ", ")
            }
        }.joined(separator: "; ")
    }
}

extension SettingSpec {
    /// Whether `key` is this setting itself, not a member of its family nor its `_FILE` variant.
    func matchesExactly(_ key: String) -> Bool { key == name }
}
