import Foundation
import HeraldTestSupport
import Testing

/// The platforms' own checkers pass on herald's files: hadolint on the Dockerfile (a rule it ignores is
/// named in .hadolint.yaml with the reason), kubernetes-validate --strict on the manifests for every
/// Kubernetes release from 1.31 on (where podFailurePolicy became GA), actionlint on the workflows.
/// scripts/deps.sh installs them from PyPI into .build/checkers; without one a test is reported as
/// skipped, except under `make test`, which requires them.
@Suite struct CheckerTests {
    static let root = DeployTests.root

    /// Runs `program` in the checkout; (status, stdout and stderr).
    static func run(_ program: String?, _ args: [String]) throws -> (status: Int32, out: String) {
        let program = try #require(program, "the checker is not installed: run scripts/deps.sh")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [program] + args
        p.currentDirectoryURL = root
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(.enabled(if: Tools.hadolint != nil || Tools.checkersRequired, "needs hadolint (scripts/deps.sh installs it)"))
    func hadolintFindsNothingInTheDockerfile() throws {
        let (status, out) = try Self.run(Tools.hadolint, ["--config", ".hadolint.yaml", "Dockerfile"])
        #expect(status == 0 && out.isEmpty, "\(out)")
    }

    /// Each rule .hadolint.yaml ignores has a comment directly above it that names it and says why.
    @Test func everyRuleHadolintIgnoresSaysWhy() throws {
        let lines = try String(contentsOf: Self.root.appendingPathComponent(".hadolint.yaml"), encoding: .utf8)
            .components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let rules = lines.indices.filter { lines[$0].hasPrefix("- DL") || lines[$0].hasPrefix("- SC") }
        #expect(!rules.isEmpty)
        for i in rules {
            let rule = String(lines[i].dropFirst(2))
            var comment: [String] = []
            var j = i - 1
            while j >= 0, lines[j].hasPrefix("#") { comment.insert(lines[j], at: 0); j -= 1 }
            let text = comment.joined(separator: " ")
            #expect(text.contains(rule) && text.count > rule.count + 40, "\(rule) is ignored without its reason")
        }
    }

    @Test(.enabled(if: Tools.kubernetesValidate != nil || Tools.checkersRequired, "needs kubernetes-validate (scripts/deps.sh installs it)"),
          arguments: ["1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"])
    func theManifestsAreValidForKubernetes(_ version: String) throws {
        let manifests = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("deploy/kubernetes").path)
            .filter { $0.hasSuffix(".yaml") }.sorted().map { "deploy/kubernetes/" + $0 }
        #expect(manifests.count >= 2)
        let (status, out) = try Self.run(Tools.kubernetesValidate, ["--strict", "--quiet", "-k", version] + manifests)
        #expect(status == 0, "\(out)")
    }

    @Test(.enabled(if: Tools.actionlint != nil || Tools.checkersRequired, "needs actionlint (scripts/deps.sh installs it)"))
    func actionlintFindsNothingInTheWorkflows() throws {
        let workflows = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent(".github/workflows").path)
            .filter { $0.hasSuffix(".yml") || $0.hasSuffix(".yaml") }.sorted().map { ".github/workflows/" + $0 }
        #expect(!workflows.isEmpty)
        let (status, out) = try Self.run(Tools.actionlint, workflows)
        #expect(status == 0 && out.isEmpty, "\(out)")
    }
}
