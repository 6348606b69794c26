import Foundation
import HeraldTestSupport
import Testing

/// The Dockerfile and the Kubernetes manifests agree: the CronJob and the migration Job run the image
/// the documented build command tags, as the uid and gid of the Dockerfile's user; the runtime stage
/// installs the one package list and nothing else; herald finds its migrations where the image puts them.
@Suite struct ImageDeployTests {
    static let root = DeployTests.root

    static func text(_ path: String) throws -> String {
        try String(contentsOfFile: root.appendingPathComponent(path).path, encoding: .utf8)
    }

    /// The runtime stage: the Dockerfile's lines after its last FROM.
    static func runtimeStage() throws -> [Substring] {
        let lines = try text("Dockerfile").split(separator: "\n")
        let last = lines.lastIndex { $0.hasPrefix("FROM ") } ?? 0
        return Array(lines[last...])
    }

    /// The runtime stage installs packages in one place, from deploy/image/runtime-packages.txt, which
    /// the rootfs test gives debootstrap; the build stage builds as `make release` does.
    @Test func theRuntimeStageInstallsOnlyThePackageList() throws {
        let stage = try Self.runtimeStage()
        #expect(stage.first?.hasPrefix("FROM debian:bookworm-slim") == true)
        #expect(stage.contains { $0.hasPrefix("COPY deploy/image/runtime-packages.txt ") })
        let installs = stage.filter { $0.contains("apt-get install") }
        #expect(installs.count == 1 && installs.first?.contains("xargs apt-get install") == true, "\(installs)")
        let facts = try ImageRootfs.describe()
        #expect(!facts.packages.isEmpty && facts.packages.allSatisfy { !$0.contains(",") })
        let release = "build -c release --static-swift-stdlib --product herald"
        #expect(try Self.text("Dockerfile").contains(release))
        #expect(try Self.text("Makefile").contains(release))
        #expect(try Self.text(".dockerignore").split(separator: "\n").contains(".build"))
    }

    /// herald migrate reads HERALD_SQL_DIR: the image sets it to the folder sql/ is copied to, and the
    /// user is not root.
    @Test func theImageSetsTheMigrationsFolderAndANonRootUser() throws {
        let facts = try ImageRootfs.describe()
        #expect(facts.environment["HERALD_SQL_DIR"] == facts.lines["sql"])
        #expect(facts.entrypoint == facts.lines["binary"])
        #expect(Int(facts.uid) ?? 0 > 0)
        #expect(facts.user == "\(facts.uid):\(facts.uid)")
    }

    /// Read with PyYAML, as Kubernetes reads them: both manifests name the same image, tagged in the
    /// repository the Dockerfile's build command names, and run it as the Dockerfile's uid and gid; the
    /// Job runs `herald migrate`, fails at once on exit 1, and reads the database URL from a secret file.
    @Test(.enabled(if: Tools.pythonWithYAML, "needs python3 with PyYAML"))
    func theCronJobAndTheMigrationJobRunTheImageAsItsUser() throws {
        let script = """
            import json, sys
            import yaml
            def pod(path, job):
                d = yaml.safe_load(open(path))
                spec = d["spec"]["jobTemplate"]["spec"] if job == "CronJob" else d["spec"]
                p = spec["template"]["spec"]
                c = p["containers"][0]
                rules = spec.get("podFailurePolicy", {}).get("rules", [])
                return {"kind": d["kind"], "image": c["image"], "args": c.get("args", []),
                        "security": p["securityContext"], "env": [e["name"] for e in c.get("env", [])],
                        "failjob1": any(r["action"] == "FailJob" and 1 in r["onExitCodes"]["values"]
                                        for r in rules if "onExitCodes" in r)}
            print(json.dumps([pod(sys.argv[1], "CronJob"), pod(sys.argv[2], "Job")]))
            """
        let dir = Self.root.appendingPathComponent("deploy/kubernetes")
        let (status, out) = try #require(DeployTests.run("python3", [
            "-c", script, dir.appendingPathComponent("cronjob.yaml").path,
            dir.appendingPathComponent("migrate-job.yaml").path,
        ]))
        #expect(status == 0, "\(out)")
        let pods = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]] ?? []
        try #require(pods.count == 2)
        let (cron, migrate) = (pods[0], pods[1])
        #expect(cron["kind"] as? String == "CronJob" && migrate["kind"] as? String == "Job")

        let facts = try ImageRootfs.describe()
        let tag = try #require(try Self.text("Dockerfile").split(separator: "\n")
            .first { $0.contains("docker build -t ") }?.split(separator: " ").first { $0.contains(":") })
        let repository = tag.prefix { $0 != ":" }
        for pod in pods {
            let image = pod["image"] as? String ?? ""
            #expect(image.hasPrefix(repository + ":"), "\(image) is not a tag of \(repository)")
            #expect(image == cron["image"] as? String)
            let security = pod["security"] as? [String: Any] ?? [:]
            #expect(security["runAsNonRoot"] as? Bool == true)
            #expect((security["runAsUser"] as? Int).map(String.init) == facts.uid)
            #expect((security["runAsGroup"] as? Int).map(String.init) == facts.user.split(separator: ":").last.map(String.init))
            #expect(pod["failjob1"] as? Bool == true)
            let env = pod["env"] as? [String] ?? []
            #expect(env.contains("DATABASE_URL_FILE") && !env.contains("DATABASE_URL"))
        }
        #expect(migrate["args"] as? [String] == ["migrate"])
        #expect((cron["args"] as? [String])?.first == "run")
    }
}
