import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// A flush written: its records, and the rows the fenced update recorded, for the driver to count.
struct WrittenFlush {
    var records: RecordBatch
    var recorded: Set<UUID>
}

/// The recording step: where a batch's records go and what is known written. It owns the pipeline (the
/// `RecordWriter` a draining pass keeps on a second connection across batches, so batch N is recorded
/// while batch N+1 is claimed and decided), which knows the recipients whose records are still on
/// their way (the next claim leaves them out), and the flushes written and not yet counted.
final class Recorder {
    let store: QueueStore
    let logger: Logger
    /// Opens the pass's connections again when they end; nil: a flush whose connection ended fails.
    var reconnector: Reconnector?
    /// Opens the second connection a pipelined pass records on; nil: no pipeline, every batch is
    /// claimed, decided and recorded one after the other.
    var openRecordConnection: (() throws -> PGConnection)?
    /// The writer a pipelined pass keeps across batches, once a full batch shows there is more to do.
    private(set) var pipeline: RecordWriter?
    private var written: [WrittenFlush] = []

    init(store: QueueStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// The recipients whose records are on their way: the next claim leaves them out.
    var recipientsInFlight: Set<UUID> { pipeline?.recipientsInFlight ?? [] }
    /// A pipelined flush failed: start no new request, claim no new batch.
    var failed: Bool { pipeline?.failed ?? false }

    /// Writes records known before any request (the pipeline's, or in line on the pass's connection).
    func flush(_ records: inout RecordBatch) throws {
        guard !records.isEmpty else { return }
        if let pipeline {
            pipeline.submit(records)
        } else {
            note(records, recorded: try store.record(records))
        }
        records = RecordBatch()
    }

    /// The writer a batch's sends record through: the pipeline, or one on the pass's connection.
    func writer() -> RecordWriter { pipeline ?? RecordWriter(store: store, reconnector: reconnector) }

    /// The batch's sends are done: an in-line writer's records are waited for (a pipeline's are counted
    /// as its flushes are written).
    func endBatch(_ writer: RecordWriter) throws {
        if writer === pipeline { return }
        for (records, recorded) in try writer.finish() { note(records, recorded: recorded) }
    }

    /// The flushes written since the last call.
    func takeWritten() -> [WrittenFlush] {
        defer { written = [] }
        return written
    }

    /// Waits until the pipeline took what was submitted (at most one batch ahead of its records).
    func waitUntilPickedUp() {
        guard let pipeline else { return }
        pipeline.waitUntilPickedUp()
        collectPipelined()
    }

    /// Waits until the pipeline wrote everything submitted: our own records may be what holds the rows
    /// a claim could not take.
    func waitUntilIdle() {
        guard let pipeline else { return }
        pipeline.waitUntilIdle()
        collectPipelined()
    }

    /// A full batch, and the budget allows another: the next claim overlaps this batch's records, on a
    /// second connection.
    func openPipelineIfWorthIt(anotherBatch: Bool, claimedFull: Bool) {
        guard pipeline == nil, anotherBatch, claimedFull, let open = openRecordConnection else { return }
        do {
            pipeline = RecordWriter(store: QueueStore(db: try open(), passId: store.passId, shard: store.shard),
                                    reconnector: reconnector)
        } catch {
            openRecordConnection = nil
            logger.warning("no second connection for pipelined records; recording in line", metadata: [
                "error": .string("\(error)")])
        }
    }

    /// Waits for the pipeline's last records and closes its connection; throws a failed flush's error
    /// (its rows stay leased and come back when the lease expires).
    func close() throws {
        guard let writer = pipeline else { return }
        pipeline = nil
        defer { writer.store.db.close() }
        for (records, recorded) in try writer.finish() { note(records, recorded: recorded) }
    }

    private func collectPipelined() {
        guard let pipeline else { return }
        for (records, recorded) in pipeline.takeResults() { note(records, recorded: recorded) }
    }

    private func note(_ records: RecordBatch, recorded: Set<UUID>) {
        written.append(WrittenFlush(records: records, recorded: recorded))
    }
}

/// Gathers a batch's records as its rows finish and hands them to the record writer in chunks: at
/// `chunk` rows, or a quarter of a second after the last flush while sends are in flight.
struct RecordChunker {
    let writer: RecordWriter
    let chunk: Int
    let clock: PassClock
    private var pending = RecordBatch()
    private var lastFlush: Double

    init(writer: RecordWriter, chunk: Int, clock: PassClock) {
        self.writer = writer
        self.chunk = chunk
        self.clock = clock
        lastFlush = clock.elapsed
    }

    /// Adds a row's records; flushes a full chunk, or (`flushing`) whatever waited long enough.
    mutating func add(_ records: RecordBatch, flushing: Bool = true) {
        pending.append(records)
        if pending.rows.count >= chunk || (flushing && clock.elapsed - lastFlush > 0.25) {
            writer.submit(pending)
            pending = RecordBatch()
            lastFlush = clock.elapsed
        }
    }

    /// Hands over what is left.
    mutating func close() {
        writer.submit(pending)
        pending = RecordBatch()
    }
}
