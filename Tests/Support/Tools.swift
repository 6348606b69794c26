import Foundation

/// The programs some tests need besides Swift and PostgreSQL (`scripts/deps.sh` installs them). A
/// test that cannot run without one names it in an `.enabled(if:)` trait, so that on a machine without
/// it the runner reports the test as skipped, with the reason, instead of passing it unchecked.
///
///     @Suite(.enabled(if: Tools.node, "needs Node.js (scripts/deps.sh installs it)"))
///     struct EdgeFunctionTests { … }
public enum Tools {
    /// True when `program` (looked up in PATH) starts with `arguments` and exits 0.
    public static func succeeds(_ program: String, _ arguments: [String]) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [program] + arguments
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    /// Node.js, which runs the edge functions' routing module (Tests/EdgeFunctions).
    public static let node = succeeds("node", ["--version"])

    /// python3 with `zoneinfo` (3.9+) and the system tzdata, for the quiet-hours oracle (Tests/Oracles).
    public static let pythonWithZoneinfo = succeeds(
        "python3", ["-c", "import zoneinfo; zoneinfo.ZoneInfo('America/Chicago'); zoneinfo.ZoneInfo('Australia/Lord_Howe')"])

    /// python3 with PyYAML, which reads the Kubernetes CronJob as Kubernetes would.
    public static let pythonWithYAML = succeeds("python3", ["-c", "import yaml"])

    /// promtool, from Debian's prometheus package: checks and unit-tests the alert rules (deploy/prometheus).
    public static let promtool = succeeds("promtool", ["--version"])

    /// psql, which the smoke script (scripts/smoke.sh) adds its recipients with.
    public static let psql = succeeds("psql", ["--version"])

    /// The platforms' own checkers' folder: the virtualenv scripts/deps.sh makes in the checkout.
    public static let checkers = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/checkers/bin")

    /// A checker's program: in `checkers`, else on PATH; nil when neither has it.
    public static func checker(_ name: String) -> String? {
        let path = checkers.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
        return succeeds(name, ["--version"]) ? name : nil
    }

    /// `make test` sets `HERALD_TEST_CHECKERS=required`: a checker that is missing then fails its test
    /// instead of skipping it, since `make test` installs them.
    public static let checkersRequired = ProcessInfo.processInfo.environment["HERALD_TEST_CHECKERS"] == "required"

    /// hadolint, on the Dockerfile.
    public static let hadolint = checker("hadolint")
    /// kubernetes-validate, on the Kubernetes manifests.
    public static let kubernetesValidate = checker("kubernetes-validate")
    /// actionlint, on the workflows.
    public static let actionlint = checker("actionlint")

    /// nginx (Debian's nginx-light), an HTTP/2 server that answers before it reads a request's body
    /// (``EarlyAnsweringNginx``).
    public static let nginx = EarlyAnsweringNginx.installed

    /// systemd-analyze, which checks a timer's OnCalendar.
    public static let systemdAnalyze = FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")
}
