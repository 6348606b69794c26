import Foundation
import Testing
@testable import HeraldWorker

/// Every environment key the sources read is declared once in `Settings.registry`, and
/// docs/configuration.md documents every declared key: adding a key without both fails here.
@Suite struct SettingsRegistryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The settings' documentation: docs/configuration.md, the whole file (its one subject is the
    /// settings; every table row that starts with a backticked name there is a setting).
    static func configurationSection() throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        #expect(text.contains("| variable | meaning |"), "docs/configuration.md has lost its settings table")
        return text
    }

    /// Keys the sources read by name: `settings["X"]`, `.secret("X")`, `.int("X")`, `.bool("X")`,
    /// `.fileText("X")`, `.withPrefix("X")`, `environment["X"]`, and the groups `required(...)` checks.
    static func keysRead() throws -> Set<String> {
        var keys = Set<String>()
        let patterns = [
            #"(?:settings|environment)\[\"([A-Z][A-Z0-9_]+)\"\]"#,
            #"\.(?:secret|int|bool|double|fileText|withPrefix)\(\"([A-Z][A-Z0-9_]+)\"\)"#,
            #"required\(settings, \[([^\]]+)\]"#,
        ].map { try! NSRegularExpression(pattern: $0) }
        let sources = root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" && !$0.path.contains("herald-bench") }
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            let range = NSRange(text.startIndex..., in: text)
            for regex in patterns {
                for match in regex.matches(in: text, range: range) {
                    guard let r = Range(match.range(at: 1), in: text) else { continue }
                    for name in text[r].split(separator: ",") {
                        keys.insert(name.trimmingCharacters(in: CharacterSet(charactersIn: " \"")))
                    }
                }
            }
        }
        // Families read by prefix ("HERALD_ANDROID_CHANNEL_" + kind) stand for their `<KIND>` entry.
        return Set(keys.map { $0.hasSuffix("_") ? $0 + "X" : $0 })
    }

    @Test func everyKeyTheSourcesReadIsDeclared() throws {
        let keys = try Self.keysRead()
        #expect(keys.count > 40, "the scan found \(keys.count) keys; it should find them all")
        // Not herald's: libpq's own variables and the operator's login name.
        let foreign: Set<String> = ["PGPASSWORD", "PGSERVICE", "USER"]
        for key in keys.subtracting(foreign).sorted() {
            #expect(Settings.spec(key) != nil, "\(key) is read but not declared in Settings.registry")
        }
    }

    @Test func everyDeclaredKeyIsDocumented() throws {
        let section = try Self.configurationSection()
        for spec in Settings.registry {
            #expect(section.contains("`\(spec.name)") || section.contains(spec.name + "`"),
                    "\(spec.name) is declared but not documented in docs/configuration.md")
        }
    }

    @Test func everyKeyTheDocsTableNamesIsDeclared() throws {
        let section = try Self.configurationSection()
        let regex = try NSRegularExpression(pattern: #"`([A-Z][A-Z0-9_]*(?:<[A-Z]+>[A-Z0-9_]*)?)"#)
        var named = Set<String>()
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            let first = String(line.dropFirst(2).prefix { $0 != "|" })
            let range = NSRange(first.startIndex..., in: first)
            for match in regex.matches(in: first, range: range) {
                if let r = Range(match.range(at: 1), in: first) { named.insert(String(first[r])) }
            }
        }
        #expect(named.count > 40)
        for name in named.sorted() {
            #expect(Settings.registry.contains { $0.name == name || $0.matches(name) },
                    "docs/configuration.md documents \(name), which Settings.registry does not declare")
        }
    }

    @Test func familiesAndFileVariantsMatch() {
        #expect(Settings.spec("HERALD_EMAIL_PROVIDERS")?.name == "HERALD_<CHANNEL>_PROVIDERS")
        #expect(Settings.spec("HERALD_CHANNEL_PUSH")?.name == "HERALD_CHANNEL_<CHANNEL>")
        #expect(Settings.spec("WEBHOOK_SECRET_FILE")?.name == "WEBHOOK_SECRET")
        #expect(Settings.spec("APNS_KEY_FILE")?.name == "APNS_KEY_FILE")
        #expect(Settings.spec("HERALD_NO_SUCH_THING") == nil)
    }
}
