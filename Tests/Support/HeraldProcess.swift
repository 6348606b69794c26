import Foundation

/// `herald` run as a process of its own, as it is deployed: a pass run to its end, or a follower
/// stopped when the caller has seen what it waited for. What it logs goes to a file of its own (a pipe
/// nobody reads could fill and stop it), so that a failure can say why.
///
///     let summary = try HeraldProcess.pass(herald, ["run", "--now", "2026-01-25T07:00:00Z"], env: env)
///     let follower = try HeraldProcess(herald, ["run", "--follow"], env: env)
///     …
///     let last = try follower.stop()   // SIGTERM, then its summary
public final class HeraldProcess: @unchecked Sendable {
    public let process: Process
    /// When it was started, on this process's clock.
    public let started: Date
    private let out = Pipe()
    private let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("herald-process-\(UUID()).log").path

    public init(_ herald: URL, _ args: [String], env: [String: String]) throws {
        guard FileManager.default.createFile(atPath: logPath, contents: nil),
              let log = FileHandle(forWritingAtPath: logPath) else { throw Failure("cannot create \(logPath)") }
        defer { try? log.close() }
        process = Process()
        process.executableURL = herald
        process.arguments = args
        process.environment = ProcessInfo.processInfo.environment.merging(env) { _, new in new }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = log
        started = Date()
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(atPath: logPath)
    }

    /// Runs one pass to its end; its summary. Throws, with the last lines it logged, when it exits
    /// with anything but 0 or 4 (a pass that delivered but whose generator phase failed).
    public static func pass(_ herald: URL, _ args: [String], env: [String: String]) throws -> [String: Any] {
        let p = try HeraldProcess(herald, args, env: env)
        return try p.summary(accepting: [0, 4])
    }

    /// What it logged so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Stops it with SIGTERM, as a deployment stops a follower; its summary (exit 3: interrupted).
    public func stop() throws -> [String: Any] {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        return try summary(accepting: [0, 3, 4])
    }

    /// Waits for its end; the summary it printed on stdout.
    private func summary(accepting codes: Set<Int32>) throws -> [String: Any] {
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard codes.contains(process.terminationStatus) else {
            let tail = log.split(separator: "\n").suffix(5).joined(separator: "\n")
            throw Failure("herald \(process.arguments ?? []) exited \(process.terminationStatus): \(tail)")
        }
        guard let summary = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Failure("herald \(process.arguments ?? []) printed no summary: \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
        return summary
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }
}
