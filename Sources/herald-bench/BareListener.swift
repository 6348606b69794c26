import Foundation
import HeraldPostgres
import HeraldWorker

/// A bare LISTEN connection on the queue's channel, on a thread of its own: when each notification
/// arrived, in order (the floor of section 8).
final class BareListener: @unchecked Sendable {  // `times` and `stopped` are read and written under `lock`
    private let lock = NSLock()
    private var times: [Date] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(url: String) throws {
        let listening = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: Error?
        Thread { [self] in
            defer { done.signal() }
            let conn: PGConnection
            do {
                conn = try PGConnection(url)
                try conn.execute("LISTEN \(identifier: QueueNotification.channel)")
            } catch {
                failure = error
                listening.signal()
                return
            }
            listening.signal()
            while !lock.withLock({ stopped }) {
                guard let got = try? conn.waitForNotifications(timeout: 0.1) else { break }
                let now = Date()
                lock.withLock { times += got.map { _ in now } }
            }
            conn.close()
        }.start()
        listening.wait()
        if let failure { throw failure }
    }

    /// Stops once `count` notifications came (at most 10 s more); when each arrived.
    func stop(expecting count: Int) -> [Date] {
        let end = Date().addingTimeInterval(10)
        while lock.withLock({ times.count }) < count && Date() < end { usleep(10_000) }
        lock.withLock { stopped = true }
        done.wait()
        return lock.withLock { times }
    }
}
