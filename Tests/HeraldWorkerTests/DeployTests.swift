import Foundation
import HeraldTestSupport
import Testing

/// The deployment files beside crontab.example: the CronJob parses as YAML with the settings herald's
/// timing needs (read with PyYAML), and the systemd timer's OnCalendar is valid (systemd-analyze). The
/// checks that need one of those programs are reported as skipped on a machine without it.
@Suite struct DeployTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs a program; nil when it cannot be started.
    static func run(_ program: String, _ args: [String], stdin: String? = nil) -> (status: Int32, out: String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [program] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        let input = Pipe()
        p.standardInput = input
        guard (try? p.run()) != nil else { return nil }
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static let cronJob = root.appendingPathComponent("deploy/kubernetes/cronjob.yaml").path

    /// The checks that need nothing but the file.
    @Test func theCronJobAllowsConcurrentPassesAndHasNoTabs() throws {
        let text = try String(contentsOfFile: Self.cronJob, encoding: .utf8)
        #expect(text.contains("concurrencyPolicy: Allow"))
        #expect(!text.contains("\t"), "YAML must not contain tabs")
    }

    /// Read with PyYAML, as Kubernetes reads it: the job's deadline and grace fit herald's timing, exit
    /// code 1 fails the job, and the database URL comes from a mounted secret.
    @Test(.enabled(if: Tools.pythonWithYAML, "needs python3 with PyYAML"))
    func theCronJobParsesAndFitsHeraldsTiming() throws {
        let script = """
            import json, sys
            import yaml
            d = yaml.safe_load(open(sys.argv[1]))
            job = d["spec"]["jobTemplate"]["spec"]
            pod = job["template"]["spec"]
            c = pod["containers"][0]
            rules = job["podFailurePolicy"]["rules"]
            print(json.dumps({
              "kind": d["kind"], "policy": d["spec"]["concurrencyPolicy"],
              "active": job["activeDeadlineSeconds"], "grace": pod["terminationGracePeriodSeconds"],
              "failjob1": any(r["action"] == "FailJob" and 1 in r["onExitCodes"]["values"] for r in rules if "onExitCodes" in r),
              "args": c["args"], "env": [e["name"] for e in c["env"]],
              "secretMount": any(v.get("secret") for v in pod["volumes"])}))
            """
        let (status, out) = try #require(Self.run("python3", ["-c", script, Self.cronJob]))
        #expect(status == 0, "\(out)")
        let facts = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any] ?? [:]
        #expect(facts["kind"] as? String == "CronJob")
        #expect(facts["policy"] as? String == "Allow")
        let args = facts["args"] as? [String] ?? []
        let deadline = args.firstIndex(of: "--deadline").flatMap { Double(args[$0 + 1]) } ?? 240
        // Above the deadline plus the longest send timeout (SMTP, 30 s), below the default lease.
        let active = facts["active"] as? Double ?? 0
        #expect(active > deadline + 30 && active < 600)
        #expect((facts["grace"] as? Double ?? 0) >= 45)
        #expect(facts["failjob1"] as? Bool == true)
        #expect(facts["secretMount"] as? Bool == true)
        let env = facts["env"] as? [String] ?? []
        #expect(env.contains("DATABASE_URL_FILE") && !env.contains("DATABASE_URL"))
    }

    static func systemdFile(_ name: String) throws -> String {
        try String(contentsOfFile: root.appendingPathComponent("deploy/systemd/\(name)").path, encoding: .utf8)
    }

    static let timers = ["herald-a.timer", "herald-b.timer"]

    /// A oneshot service template, for which exit code 4 (a degraded pass) is not a failure, started
    /// by two timers, each naming its instance.
    @Test func theSystemdServiceIsAOneshotThatAcceptsADegradedPass() throws {
        let service = try Self.systemdFile("herald@.service")
        #expect(service.contains("Type=oneshot"))
        #expect(service.contains("SuccessExitStatus=4"))
        for (timer, instance) in zip(Self.timers, ["a", "b"]) {
            let lines = try Self.systemdFile(timer).split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("OnCalendar=") })
            #expect(lines.contains("Unit=herald@\(instance).service"))
        }
    }

    @Test(.enabled(if: Tools.systemdAnalyze, "needs systemd-analyze"))
    func theSystemdTimersAreValid() throws {
        for name in Self.timers {
            let timer = try Self.systemdFile(name)
            let calendar = try #require(timer.split(separator: "\n").first { $0.hasPrefix("OnCalendar=") })
                .dropFirst("OnCalendar=".count)
            let result = try #require(Self.run("systemd-analyze", ["calendar", String(calendar)]))
            #expect(result.status == 0, "\(result.out)")
            #expect(result.out.contains("Next elapse"))
        }
    }

    /// The `--deadline` of a command line, or nil without one.
    static func deadline(_ words: [String]) -> Double? {
        words.firstIndex(of: "--deadline").flatMap { Double(words[$0 + 1]) }
    }

    /// Every example runs followers, each running longer than the time to the next one's start, so
    /// that one always listens: cron and the CronJob every five minutes, the two systemd timers each
    /// every ten minutes, five minutes apart. Each deadline stays below the lease less a send timeout.
    @Test func theExamplesOverlapTheirFollowers() throws {
        let cron = try String(contentsOfFile: Self.root.appendingPathComponent("crontab.example").path, encoding: .utf8)
        let cronLine = try #require(cron.split(separator: "\n").first { $0.hasPrefix("*/5") })
        let systemd = try Self.systemdFile("herald@.service")
        let execStart = try #require(systemd.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        #expect(try Self.systemdFile("herald-a.timer").contains("OnCalendar=*:00/10"))
        #expect(try Self.systemdFile("herald-b.timer").contains("OnCalendar=*:05/10"))
        let cronJob = try String(contentsOfFile: Self.cronJob, encoding: .utf8)
        #expect(cronJob.contains(#"schedule: "*/5 * * * *""#))
        let args = try #require(cronJob.split(separator: "\n").first { $0.contains("args:") })
        let words = [cronLine, execStart, args].map {
            $0.split(whereSeparator: { " [],\"".contains($0) }).map(String.init)
        }
        for w in words {
            #expect(w.contains("--follow"), "\(w)")
            let deadline = try #require(Self.deadline(w), "\(w)")
            #expect(deadline > 300 && deadline + 30 < 600, "\(w)")
        }
    }

    /// The GitHub Actions workflow, read with PyYAML as GitHub reads it: one job in a Swift 6.3
    /// container that runs `make test`, then the smoke run against its PostgreSQL service.
    @Test(.enabled(if: Tools.pythonWithYAML, "needs python3 with PyYAML"))
    func theCIWorkflowRunsTheTestsThenTheSmokeRunAgainstAPostgresService() throws {
        let script = """
            import json, sys
            import yaml
            d = yaml.safe_load(open(sys.argv[1]))
            (name, job), = d["jobs"].items()
            print(json.dumps({"container": job["container"], "runsOn": job["runs-on"],
              "services": {k: v["image"] for k, v in job["services"].items()},
              "runs": [s["run"] for s in job["steps"] if "run" in s]}))
            """
        let path = Self.root.appendingPathComponent(".github/workflows/ci.yml").path
        let (status, out) = try #require(Self.run("python3", ["-c", script, path]))
        #expect(status == 0, "\(out)")
        let facts = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any] ?? [:]
        #expect((facts["container"] as? String)?.hasPrefix("swift:6.3") == true)
        #expect(facts["runsOn"] as? String == "ubuntu-latest")
        #expect((facts["services"] as? [String: String])?["postgres"]?.hasPrefix("postgres:") == true)
        let runs = facts["runs"] as? [String] ?? []
        let test = runs.firstIndex(of: "make test")
        let smoke = runs.firstIndex { $0.hasPrefix("scripts/smoke.sh postgresql://") && $0.contains("@postgres:5432/") }
        #expect(test != nil && smoke != nil && test! < smoke!, "\(runs)")
    }
}
