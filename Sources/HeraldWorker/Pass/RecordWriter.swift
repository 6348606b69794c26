import Foundation
import HeraldPostgres

/// Writes record flushes on a thread of its own while the transport's loop goes on, so requests in
/// flight are never held up by a database round trip (their timeouts keep running meanwhile).
/// While it writes, it is the only user of the pass's connection.
///
///     let writer = RecordWriter(store: store)
///     transport.perform(requests, shouldStart: { !writer.failed }) { … writer.submit(records) … }
///     for (batch, recorded) in try writer.finish() { count(batch, recorded) }
///
/// Flushes queued while one is being written are merged into the next transaction. Once a flush
/// fails, nothing more is written (those rows stay leased and come back when the lease expires),
/// `failed` turns true so the caller starts no new request, and `finish()` throws the error.
final class RecordWriter: @unchecked Sendable {  // every var is read and written under `condition`
    private let store: QueueStore
    private let condition = NSCondition()
    private var queue = RecordBatch()
    private var writing = false
    private var closed = false
    private var finished = false
    private var error: (any Error)?
    private var results: [(RecordBatch, Set<UUID>)] = []

    init(store: QueueStore) {
        self.store = store
        let thread = Thread { [self] in run() }
        thread.name = "herald record writer"
        thread.start()
    }

    /// True once a flush failed: start no new request.
    var failed: Bool { condition.withLock { error != nil } }

    /// Queues `batch` to be written; returns at once.
    func submit(_ batch: RecordBatch) {
        guard !batch.isEmpty else { return }
        condition.withLock {
            if error == nil { queue.append(batch) }
            condition.broadcast()
        }
    }

    /// Waits until everything submitted is written, ends the thread, and returns each flush with the
    /// ids it recorded (the fenced update may record fewer than it was given). Throws the first error.
    func finish() throws -> [(RecordBatch, Set<UUID>)] {
        try condition.withLock {
            closed = true
            condition.broadcast()
            while !finished { condition.wait() }
            if let error { throw error }
            return results
        }
    }

    private func run() {
        while true {
            let batch: RecordBatch? = condition.withLock {
                while queue.isEmpty && !closed { condition.wait() }
                if queue.isEmpty { return nil }
                defer { queue = RecordBatch() }
                return queue
            }
            guard let batch else { break }
            do {
                let recorded = try store.record(batch)
                condition.withLock { results.append((batch, recorded)) }
            } catch {
                condition.withLock {
                    self.error = error
                    queue = RecordBatch()
                }
            }
        }
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }
}
