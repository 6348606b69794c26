import Foundation
import HeraldCore

/// Every finding of one `herald doctor`, in the order they were made: rendered as one line per check or
/// as JSON, and read as an exit code (0 when nothing failed, warnings included; 1 otherwise, naming the
/// first failure).
///
///     let report = DoctorReport([DoctorCheck("database.schema", .ok, "migration 33 of 33")])
///     report.text       // "ok   database.schema  migration 33 of 33"
///     report.exitCode   // .ok
public struct DoctorReport: Sendable {
    public let checks: [DoctorCheck]

    /// `secrets`: values that must never be shown (the secret settings' values); any a detail holds,
    /// quoted by a library or a provider, becomes `***`. Values shorter than 4 characters are left.
    public init(_ checks: [DoctorCheck], secrets: [String] = []) {
        let hidden = secrets.filter { $0.count >= 4 }.sorted { $0.count > $1.count }
        self.checks = checks.map { check in
            var check = check
            for secret in hidden { check.detail = check.detail.replacingOccurrences(of: secret, with: "***") }
            check.detail = Self.oneLine(check.detail)
            return check
        }
    }

    /// A detail on one line: a provider's answer or a libpq message may hold line breaks and tabs,
    /// which would split a check's line (and a reader's grep) in two.
    static func oneLine(_ detail: String) -> String {
        detail.split(whereSeparator: { $0.isNewline || $0 == "\t" }).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// The first check that failed, nil when none did.
    public var firstFailure: DoctorCheck? { checks.first { $0.status == .fail } }

    /// 0 when every check passed or warned, 1 when one failed.
    public var exitCode: ExitCode { firstFailure == nil ? .ok : .configuration }

    /// One line per check: status, name, detail, in aligned columns.
    public var text: String {
        let width = min(checks.map(\.name.count).max() ?? 0, 40)
        return checks.map { check in
            let status = check.status.rawValue.padding(toLength: 4, withPad: " ", startingAt: 0)
            let name = check.name.count < width ? check.name.padding(toLength: width, withPad: " ", startingAt: 0) : check.name
            return "\(status) \(name)  \(check.detail)"
        }.joined(separator: "\n")
    }

    /// A JSON array of `{"check", "status", "detail"}` objects, one per line.
    public var jsonText: String {
        let lines = checks.map { check -> String in
            let object: JSONValue = ["check": .string(check.name), "status": .string(check.status.rawValue),
                                     "detail": .string(check.detail)]
            return object.jsonText
        }
        return lines.isEmpty ? "[]" : "[\n" + lines.joined(separator: ",\n") + "\n]"
    }

    /// The last word: how many checks ran and how they went, naming the first failure.
    public var verdict: String {
        let warnings = checks.filter { $0.status == .warn }.count
        let failures = checks.filter { $0.status == .fail }.count
        let warned = warnings == 0 ? "" : warnings == 1 ? " (1 warning)" : " (\(warnings) warnings)"
        guard let first = firstFailure else { return "herald doctor: all \(checks.count) checks passed\(warned)" }
        return "herald doctor: \(failures) of \(checks.count) checks failed\(warned); the first: \(first.name): \(first.detail)"
    }
}
