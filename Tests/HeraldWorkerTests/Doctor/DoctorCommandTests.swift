import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// `herald doctor` as the operator runs it: the built binary, its stdout, stderr and exit code.
@Suite struct DoctorCommandTests {
    /// Runs `herald` with `args` over the lab's settings and returns stdout, stderr and the exit status.
    static func doctor(_ args: [String], env: [String: String]) throws -> (stdout: String, stderr: String, status: Int32) {
        let errPath = FileManager.default.temporaryDirectory.appendingPathComponent("herald-doctor-stderr-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errPath) }
        let errFile = try #require(FileHandle(forWritingAtPath: errPath))
        let out = Pipe()
        let process = try HeraldBinary.start(args, env: env, stdout: out, stderr: errFile)
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try errFile.close()
        let stderr = String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self)
        return (stdout, stderr, process.terminationStatus)
    }

    /// A good deployment: exit 0, and `--json` prints an array of {check, status, detail} that parses.
    @Test func aGoodSetupExitsZeroAndItsJSONParses() throws {
        let lab = try DoctorLab()
        defer { lab.cleanup() }
        let (stdout, stderr, status) = try Self.doctor(["doctor", "--online", "--json"], env: try lab.environment())
        #expect(status == 0, "\(stdout)\n\(stderr)")
        guard case .array(let checks) = try JSONValue.parse(stdout) else {
            Issue.record("not a JSON array: \(stdout)")
            return
        }
        #expect(checks.count > 20)
        for check in checks {
            #expect(check.objectValue.map { Set($0.keys) } == ["check", "status", "detail"], "\(check)")
            #expect(["ok", "warn"].contains(check["status"]?.stringValue ?? ""), "\(check)")
        }
        #expect(checks.contains { $0["check"]?.stringValue == "provider.fcm" && $0["status"]?.stringValue == "ok" })
        #expect(stderr.contains("herald doctor: all "), "\(stderr)")
        for secret in lab.secrets { #expect(!(stdout + stderr).contains(secret)) }
    }

    /// A fault: one line per check on stdout, exit 1, and stderr's last line names the first failure.
    @Test func aFaultExitsOneNamingTheFirstFailure() throws {
        let lab = try DoctorLab()
        defer { lab.cleanup() }
        var env = try lab.environment()
        env["SENDGRID_API_KEY"] = "xk-" + DoctorLab.base64URL(40)
        let (stdout, stderr, status) = try Self.doctor(["doctor"], env: env)
        #expect(status == 1, "\(stdout)\n\(stderr)")
        let lines = stdout.split(separator: "\n")
        #expect(lines.count > 20)
        #expect(lines.allSatisfy { $0.hasPrefix("ok   ") || $0.hasPrefix("warn ") || $0.hasPrefix("fail ") }, "\(stdout)")
        #expect(lines.contains { $0.hasPrefix("fail provider.sendgrid ") }, "\(stdout)")
        let last = stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.contains("the first: provider.sendgrid: SENDGRID_API_KEY does not start with SG."), "\(stderr)")
        for secret in lab.secrets + [env["SENDGRID_API_KEY"]!] { #expect(!(stdout + stderr).contains(secret)) }
    }
}
