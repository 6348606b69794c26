import Foundation
import HeraldCore

/// Starting herald as a process of its own, for the sections that time or measure one.
extension Bench {
    /// Starts a process with posix_spawn (output to /dev/null) and waits for it: the cheapest way to
    /// start one, so the timing is the program's, not the harness's.
    func spawn(_ exe: URL, _ args: [String], env: [String: String]) throws {
        var pid: pid_t = 0
        let argv = ([exe.path] + args).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        defer { posix_spawn_file_actions_destroy(&actions) }
        guard posix_spawn(&pid, exe.path, &actions, nil, argv, envp) == 0 else { throw BenchError("cannot start \(exe.path)") }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        guard status == 0 else { throw BenchError("\(exe.lastPathComponent) \(args) failed (status \(status))") }
    }

    /// Runs a process to completion; returns what it printed on stdout as JSON (or null).
    @discardableResult
    func runProcess(_ exe: URL, _ args: [String], env: [String: String]) throws -> JSONValue {
        let p = Process()
        p.executableURL = exe
        p.arguments = args
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        let log = try ProcessLog()
        p.standardError = log.handle
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw BenchError("\(exe.lastPathComponent) \(args) exited \(p.terminationStatus): \(log.tail())")
        }
        return (try? JSONValue.parse(data)) ?? .null
    }
}

/// A process's stderr, kept in a file of its own (a pipe nobody reads could fill and stop the
/// process) so that a failure can say why: the last lines of what it logged.
///
///     let log = try ProcessLog()
///     process.standardError = log.handle
///     …
///     throw BenchError("exited 2: \(log.tail())")
final class ProcessLog {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID()).log").path
    let handle: FileHandle

    init() throws {
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else { throw BenchError("cannot create \(path)") }
        self.handle = handle
    }

    /// The last `lines` lines it logged.
    func tail(_ lines: Int = 5) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: path)
    }
}
