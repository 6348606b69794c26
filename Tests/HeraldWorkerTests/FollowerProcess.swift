import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker

/// A `herald run --follow` process against a test database and a webhook receiver: its log read as
/// it comes (to know when it follows), its summary once it has exited.
///
///     let follower = try FollowerProcess(env: env, deadline: 60)
///     #expect(follower.waitForWaits(1))   // it waits for work
///     kill(follower.process.processIdentifier, SIGTERM)
///     let summary = follower.finish()
final class FollowerProcess: @unchecked Sendable {  // `log` is read and written under `condition`
    let process: Process
    private let out = Pipe()
    private let err = Pipe()
    private let condition = NSCondition()
    private var log = ""
    private var stderrClosed = false

    /// Starts `herald run --follow --only <only> --deadline <deadline>` with `env` (the database, the
    /// receiver, HERALD_FOLLOW_*), plus `extra` arguments.
    init(env: [String: String], deadline: Int, only: String = "deliver", extra: [String] = []) throws {
        process = try HeraldBinary.start(["run", "--follow", "--only", only, "--deadline", "\(deadline)"] + extra,
                                         env: env, stdout: out, stderr: err)
        let handle = err.fileHandleForReading
        let reader = Thread { [self] in
            while true {
                let data = handle.availableData
                condition.withLock {
                    if data.isEmpty { stderrClosed = true } else { log += String(decoding: data, as: UTF8.self) }
                    condition.broadcast()
                }
                if data.isEmpty { return }
            }
        }
        reader.start()
    }

    /// Waits until the log contains `text`; false after `seconds` or once the process has ended without it.
    func waitForLog(_ text: String, seconds: Double = 20) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        return condition.withLock {
            while !log.contains(text) {
                if stderrClosed || !condition.wait(until: end) { return log.contains(text) }
            }
            return true
        }
    }

    /// What it logged so far.
    var logText: String { condition.withLock { log } }

    /// Waits for the process to exit (killed after `seconds`), and returns its summary.
    func finish(seconds: Double = 30) -> JSONValue {
        if !waitForExit(process, seconds: seconds) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let end = Date().addingTimeInterval(5)
        condition.withLock {  // the last of its log
            while !stderrClosed && condition.wait(until: end) {}
        }
        return (try? JSONValue.parse(out.fileHandleForReading.readDataToEndOfFile())) ?? .null
    }

    /// A webhook receiver's environment for a follower on `url`.
    static func env(_ url: String, receiver: FakeHTTPServer, _ more: [String: String] = [:]) -> [String: String] {
        ["DATABASE_URL": url, "WEBHOOK_URL": receiver.baseURL + "/hooks", "WEBHOOK_SECRET": WebhookDeliveryTests.secret,
         "HERALD_LOG_LEVEL": "debug"].merging(more) { _, new in new }
    }

    /// The line a follower logs (at debug level) as it starts each wait for work.
    static let waitLine = #""msg":"waiting for the queue""#

    /// How many waits it has started.
    var waits: Int { logText.components(separatedBy: Self.waitLine).count - 1 }

    /// Waits until it has started `count` waits; false after `seconds` or once it has ended.
    func waitForWaits(_ count: Int, seconds: Double = 20) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        return condition.withLock {
            while log.components(separatedBy: Self.waitLine).count - 1 < count {
                if stderrClosed || !condition.wait(until: end) { return log.components(separatedBy: Self.waitLine).count - 1 >= count }
            }
            return true
        }
    }
}
