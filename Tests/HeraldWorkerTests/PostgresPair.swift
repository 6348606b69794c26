import Foundation
import HeraldPostgres
import HeraldTestSupport

/// A primary and its synchronous standby (scripts/pg-pair.sh: `initdb`, `pg_basebackup -R`), each on a
/// loopback port of its own, with herald's schema, reached through one multi-host URL with
/// `target_session_attrs=read-write`, as a managed PostgreSQL is. `failover()` stops the primary at
/// once and promotes the standby. Stop it whatever happens (`defer { pair.stop() }`).
///
///     let pair = try PostgresPair()
///     defer { pair.stop() }
///     try pair.failover()   // the URL now reaches the former standby
final class PostgresPair {
    static let script = DeployTests.root.appendingPathComponent("scripts/pg-pair.sh").path

    let ports: (primary: Int, standby: Int)
    /// `postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/postgres?target_session_attrs=read-write…`
    let url: String

    /// Starts the pair on HERALD_TEST_PAIR_PORTS (`P1,P2`) or on two loopback ports free now, and
    /// migrates herald's schema through the URL.
    init() throws {
        let given = (ProcessInfo.processInfo.environment["HERALD_TEST_PAIR_PORTS"] ?? "")
            .split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        if given.count == 2 {
            ports = (given[0], given[1])
        } else {  // both held at once, so that they differ
            let (a, b) = (try LoopbackSocket(), try LoopbackSocket())
            ports = (a.port, b.port)
            a.close()
            b.close()
        }
        url = try Self.run("start", ports).trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            let db = try PGConnection(url, applicationName: "herald-tests")
            defer { db.close() }
            _ = try Migrator(directory: TestDatabase.migrationsDirectory).migrate(db)
        } catch {
            stop()
            throw error
        }
    }

    /// Stops the primary (immediate: its sessions end with no goodbye) and promotes the standby;
    /// returns once the standby accepts writes. Its duration, in seconds.
    @discardableResult
    func failover() throws -> Double {
        let start = Date()
        _ = try Self.run("failover", ports)
        return Date().timeIntervalSince(start)
    }

    /// Stops the primary at once and promotes nothing: no server accepts writes.
    func stopPrimary() throws {
        _ = try Self.run("stop-primary", ports)
    }

    /// Stops both servers and deletes their directories.
    func stop() {
        _ = try? Self.run("stop", ports)
    }

    /// Runs the script; its standard output, or an error with everything it printed.
    private static func run(_ command: String, _ ports: (primary: Int, standby: Int)) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [script, command]
        p.environment = ProcessInfo.processInfo.environment.merging([
            "HERALD_PG_PRIMARY_PORT": "\(ports.primary)", "HERALD_PG_STANDBY_PORT": "\(ports.standby)"]) { _, new in new }
        // What it says on stderr goes to a file, so that a long server log cannot fill a pipe no one reads.
        let errPath = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-pair-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: errPath.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errPath) }
        let err = try FileHandle(forWritingTo: errPath)
        defer { try? err.close() }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let messages = (try? String(contentsOf: errPath, encoding: .utf8)) ?? ""
        guard p.terminationStatus == 0 else {
            throw PairError(description: "scripts/pg-pair.sh \(command) exited \(p.terminationStatus): \(messages)")
        }
        return output
    }
}

struct PairError: Error, CustomStringConvertible {
    let description: String
}
