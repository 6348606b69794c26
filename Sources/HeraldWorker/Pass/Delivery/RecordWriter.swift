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
/// A pass that drains several batches keeps one writer, on a connection of its own, across batches
/// (`Recorder`, the pipeline): batch N is recorded while batch N+1 is claimed and decided.
///
///     let writer = RecordWriter(store: QueueStore(db: second, passId: id))
///     writer.submit(batchN); writer.waitUntilPickedUp(); claim(N+1) …; for (b, r) in writer.takeResults() { … }
///
/// Flushes queued while one is being written are merged into the next transaction. A flush whose
/// transaction was lost to contention (`PGError.isContention`: a deadlock, a serialization failure, a lock
/// wait past `lock_timeout`, such as a migration holding a table) is written again after a pause, a few
/// times: its rows were sent, and unrecorded they would go out again once their lease expires. Once a
/// flush fails for good, nothing more is written (those rows stay leased and come back when the lease
/// expires), `failed` turns true so the caller starts no new request, and `finish()` throws the error.
///
/// A flush whose connection ended (a failover, a restart) is written again once the connection is open
/// again (`Reconnector`: within HERALD_RECONNECT_SECONDS): the sends it records were made, and the fence
/// still holds their rows for this pass, so they need not wait out their lease. A flush that committed
/// before the end, its answer lost, records nothing the second time (the fence no longer holds them).
final class RecordWriter: @unchecked Sendable {  // every var is read and written under `condition`
    let store: QueueStore
    private let condition = NSCondition()
    private var queue = RecordBatch()
    private var writing = false
    private var closed = false
    private var finished = false
    private var error: (any Error)?
    private var results: [(RecordBatch, Set<UUID>)] = []
    /// The recipients of the flush being written, noted as it is taken from the queue.
    private var writingRecipients: Set<UUID> = []
    /// The pauses before each new try of a flush lost to contention.
    let retryDelays: [TimeInterval]
    /// Opens the writer's connection again when it ends; nil: a flush whose connection ended fails.
    let reconnector: Reconnector?

    init(store: QueueStore, retryDelays: [TimeInterval] = [0.2, 0.5, 1, 2], reconnector: Reconnector? = nil) {
        self.store = store
        self.retryDelays = retryDelays
        self.reconnector = reconnector
        let thread = Thread { [self] in run() }
        thread.name = "herald record writer"
        thread.start()
    }

    /// True once a flush failed: start no new request.
    var failed: Bool { condition.withLock { error != nil } }

    /// The recipients whose records were submitted and are not yet known written (their transaction
    /// has not committed): a pipelined pass's next claim leaves them out, so the rate limits of a later
    /// batch read their sends.
    var recipientsInFlight: Set<UUID> {
        condition.withLock {
            queue.rows.isEmpty ? writingRecipients
                : writingRecipients.union(queue.rows.lazy.compactMap(\.recipient))
        }
    }

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

    /// Waits until nothing submitted waits in the queue (one flush may still be being written): keeps a
    /// pipelined pass at most one batch ahead of its records.
    func waitUntilPickedUp() {
        condition.withLock {
            while !queue.isEmpty && error == nil && !finished { condition.wait() }
        }
    }

    /// Waits until everything submitted so far is written (or a flush failed).
    func waitUntilIdle() {
        condition.withLock {
            while (!queue.isEmpty || writing) && error == nil && !finished { condition.wait() }
        }
    }

    /// The flushes written since the last call, with the ids each recorded; leaves the thread running.
    func takeResults() -> [(RecordBatch, Set<UUID>)] {
        condition.withLock {
            defer { results = [] }
            return results
        }
    }

    private func run() {
        while true {
            let batch: RecordBatch? = condition.withLock {
                while queue.isEmpty && !closed { condition.wait() }
                if queue.isEmpty { return nil }
                defer {
                    queue = RecordBatch()
                    writing = true
                    condition.broadcast()  // waitUntilPickedUp
                }
                // Taken from the queue and noted as being written in one step: a claim that reads the
                // recipients in flight finds these in one or the other, never in neither.
                writingRecipients = Set(queue.rows.lazy.compactMap(\.recipient))
                return queue
            }
            guard let batch else { break }
            do {
                let recorded = try write(batch)
                condition.withLock {
                    results.append((batch, recorded))
                    writingRecipients = []
                    writing = false
                    condition.broadcast()  // waitUntilIdle
                }
            } catch {
                condition.withLock {
                    self.error = error
                    queue = RecordBatch()
                    writingRecipients = []
                    writing = false
                    condition.broadcast()
                }
            }
        }
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }

    /// Records `batch`, again after each pause of `retryDelays` while it is lost to contention
    /// (`PGError.isContention`), and again on a new connection when its connection ended.
    private func write(_ batch: RecordBatch) throws -> Set<UUID> {
        var delays = retryDelays[...]
        while true {
            do {
                guard let reconnector else { return try store.record(batch) }
                return try reconnector.retrying(store.db, "records") { try store.record(batch) }
            } catch let error as PGError where error.isContention && !delays.isEmpty {
                // Rolled back whole: nothing of it was written, and the fence still holds its rows.
                Thread.sleep(forTimeInterval: delays.removeFirst())
            }
        }
    }
}
