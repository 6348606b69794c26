import Foundation
import HeraldTestSupport
import Testing

/// The built `herald` as an operator runs it: arguments, environment, working directory; what it
/// printed on stdout and stderr, and its exit status.
///
///     let r = try HeraldCLI.run(["migrate", "--quiet"], env: ["DATABASE_URL": url], in: folder)
///     #expect(r.status == 0, "\(r.stderr)")
enum HeraldCLI {
    struct Result {
        var stdout: String
        var stderr: String
        var status: Int32
    }

    /// Runs `executable` (the built binary unless given) with `args`, the test's environment less every
    /// `HERALD_*` and `DATABASE_URL` variable, plus `env`.
    static func run(_ args: [String], env: [String: String] = [:], in directory: URL? = nil,
                    executable: URL = HeraldBinary.url) throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outPath = scratch.appendingPathComponent("stdout"), errPath = scratch.appendingPathComponent("stderr")
        for path in [outPath, errPath] { _ = FileManager.default.createFile(atPath: path.path, contents: nil) }
        let out = try FileHandle(forWritingTo: outPath), err = try FileHandle(forWritingTo: errPath)
        let p = Process()
        p.executableURL = executable
        p.arguments = args
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") && $0.key != "DATABASE_URL" }
        environment.merge(env) { _, new in new }
        p.environment = environment
        if let directory { p.currentDirectoryURL = directory }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = out
        p.standardError = err
        try p.run()
        p.waitUntilExit()
        try out.close()
        try err.close()
        return Result(stdout: try String(contentsOf: outPath, encoding: .utf8),
                      stderr: try String(contentsOf: errPath, encoding: .utf8), status: p.terminationStatus)
    }

    /// A folder that stands for an app's own repository: its `sql/001_orders.sql` is the app's first
    /// migration, which herald must never apply.
    final class AppRepository {
        let url: URL
        var sql: URL { url.appendingPathComponent("sql") }

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-app-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url.appendingPathComponent("sql"), withIntermediateDirectories: true)
            try "create table orders (id bigint primary key);\n"
                .write(to: sql.appendingPathComponent("001_orders.sql"), atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(at: url) }
    }

    /// herald installed as the README installs it, under a prefix of its own: `bin/herald` (a hard link
    /// to the built binary, so that it is not resolved back to the build) and `share/herald/sql`.
    final class Installation {
        let prefix: URL
        var binary: URL { prefix.appendingPathComponent("bin/herald") }

        init(sqlFolder: String = "share/herald/sql") throws {
            prefix = DeployTests.root.appendingPathComponent(".build/herald-prefix-\(UUID().uuidString)")
            let fm = FileManager.default
            try fm.createDirectory(at: prefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
            do { try fm.linkItem(at: HeraldBinary.url, to: binary) } catch { try fm.copyItem(at: HeraldBinary.url, to: binary) }
            let sql = prefix.appendingPathComponent(sqlFolder)
            try fm.createDirectory(at: sql.deletingLastPathComponent(), withIntermediateDirectories: true)
            try fm.copyItem(at: TestDatabase.migrationsDirectory, to: sql)
        }

        deinit { try? FileManager.default.removeItem(at: prefix) }
    }
}
