import Foundation
import HeraldTestSupport
import Testing

/// The alert rules as Prometheus reads them: `promtool check rules` accepts every rule, and
/// `promtool test rules` runs herald-rules.test.yml, which has at least one case for every alert.
/// Reported as skipped on a machine without promtool (scripts/deps.sh installs Debian's prometheus).
@Suite(.enabled(if: Tools.promtool, "needs promtool (scripts/deps.sh installs Debian's prometheus package)"))
struct PromtoolTests {
    static let directory = DeployTests.root.appendingPathComponent("deploy/prometheus")
    static let rules = directory.appendingPathComponent("herald-rules.yml").path
    static let tests = directory.appendingPathComponent("herald-rules.test.yml").path

    /// The names after `key: ` on the lines of a file (YAML's `- alert: X`, `alertname: X`).
    static func values(of key: String, in path: String) throws -> Set<String> {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return Set(text.components(separatedBy: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard let range = trimmed.range(of: key + ": "), !trimmed.hasPrefix("#") else { return nil }
            return String(trimmed[range.upperBound...]).trimmingCharacters(in: .whitespaces)
        })
    }

    @Test func promtoolAcceptsEveryRule() throws {
        let alerts = try Self.values(of: "- alert", in: Self.rules)
        #expect(alerts.count >= 6)
        let (status, out) = try #require(DeployTests.run("promtool", ["check", "rules", Self.rules]))
        #expect(status == 0, "\(out)")
        #expect(out.contains("SUCCESS: \(alerts.count) rules found"), "\(out)")
    }

    @Test func everyAlertFiresWhereItShouldAndNowhereElse() throws {
        let alerts = try Self.values(of: "- alert", in: Self.rules)
        let tested = try Self.values(of: "alertname", in: Self.tests)
        #expect(alerts.subtracting(tested).isEmpty, "alerts without a unit test: \(alerts.subtracting(tested).sorted())")
        #expect(tested.subtracting(alerts).isEmpty, "tests of alerts that do not exist: \(tested.subtracting(alerts).sorted())")
        let (status, out) = try #require(DeployTests.run("promtool", ["test", "rules", Self.tests]))
        #expect(status == 0, "\(out)")
        #expect(out.contains("SUCCESS"), "\(out)")
    }
}
