import Foundation
import Testing

/// The deployment files beside crontab.example, checked as far as this machine allows: the CronJob
/// parses as YAML with the settings herald's timing needs (PyYAML, when python3 has it), and the
/// systemd timer's OnCalendar is valid (systemd-analyze, when present).
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

    @Test func theCronJobParsesAndFitsHeraldsTiming() throws {
        let path = Self.root.appendingPathComponent("deploy/kubernetes/cronjob.yaml").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        // Checked in Python, with PyYAML, when the machine has it; the plain checks below always run.
        let script = """
            import json, sys
            try:
                import yaml
            except ImportError:
                print("no-yaml"); sys.exit(0)
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
        if let (status, out) = Self.run("python3", ["-c", script, path]), status == 0, !out.contains("no-yaml") {
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
        #expect(text.contains("concurrencyPolicy: Allow"))
        #expect(!text.contains("\t"), "YAML must not contain tabs")
    }

    @Test func theSystemdTimerIsValid() throws {
        let timer = try String(contentsOfFile: Self.root.appendingPathComponent("deploy/systemd/herald.timer").path,
                               encoding: .utf8)
        let service = try String(contentsOfFile: Self.root.appendingPathComponent("deploy/systemd/herald.service").path,
                                 encoding: .utf8)
        let calendar = try #require(timer.split(separator: "\n").first { $0.hasPrefix("OnCalendar=") })
            .dropFirst("OnCalendar=".count)
        #expect(service.contains("Type=oneshot"))
        #expect(service.contains("SuccessExitStatus=4"))
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let result = try #require(Self.run("systemd-analyze", ["calendar", String(calendar)]))
        #expect(result.status == 0, "\(result.out)")
        #expect(result.out.contains("Next elapse"))
    }
}
