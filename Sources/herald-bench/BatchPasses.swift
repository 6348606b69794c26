import Foundation

/// A batch pass — `herald run --batch-size 1000`, one batch: what is due at its claim — started every
/// `period` seconds on a thread of its own, each after the last has ended, until stopped: the batch
/// setup of section 8. (A `--drain` pass would not end while rows keep coming due faster than it
/// claims them: under a steady rate it is a follower without the wait.)
final class BatchPasses: @unchecked Sendable {  // `starts` and `stopped` are read and written under `lock`
    private let lock = NSLock()
    private var starts: [Date] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(herald: URL, env: [String: String], period: Double) {
        Thread { [self] in
            defer { done.signal() }
            var next = DispatchTime.now().uptimeNanoseconds
            while !lock.withLock({ stopped }) {
                let p = Process()
                p.executableURL = herald
                p.arguments = ["run", "--only", "deliver", "--batch-size", "1000", "--quiet"]
                p.environment = env
                p.standardOutput = FileHandle.nullDevice
                p.standardError = FileHandle.nullDevice
                lock.withLock { starts.append(Date()) }
                guard (try? p.run()) != nil else { return }
                p.waitUntilExit()
                next += UInt64(period * 1e9)
                while !lock.withLock({ stopped }) && DispatchTime.now().uptimeNanoseconds < next { usleep(10_000) }
            }
        }.start()
    }

    /// Stops starting passes (the one running ends first); when each started.
    func stop() -> [Date] {
        lock.withLock { stopped = true }
        done.wait()
        return lock.withLock { starts }
    }
}
