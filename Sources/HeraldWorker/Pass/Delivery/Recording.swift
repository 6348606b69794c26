import Foundation
import HeraldCore
import Logging

/// Gathers a batch's records as its rows finish and hands them to the record writer in chunks: at
/// `chunk` rows, or a quarter of a second after the last flush while sends are in flight.
struct Recorder {
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

extension DeliveryPass {
    /// Writes a flush and counts what was recorded. Rows this pass no longer holds are reported.
    func flush(_ records: inout RecordBatch, channelOf: [UUID: RowChannel]) throws {
        guard !records.isEmpty else { return }
        if let pipeline {
            pipeline.submit(records)
        } else {
            count(records, recorded: try store.record(records), channelOf: channelOf)
        }
        records = RecordBatch()
    }

    /// Counts a written flush in the summary; rows the fenced update did not record are reported.
    func count(_ records: RecordBatch, recorded: Set<UUID>, channelOf: [UUID: RowChannel]) {
        var lost = 0
        for row in records.rows {
            if recorded.contains(row.id) {
                summary.count(row, channel: channelOf[row.id])
            } else {
                lost += 1
            }
        }
        if lost > 0 {
            logger.warning("rows were taken over by another pass after this pass's lease expired; their outcome was not recorded here",
                           metadata: ["rows": "\(lost)"])
        }
        summary.deliveries += records.deliveries.count
        for d in records.deliveries where recorded.contains(d.queueId) { summary.count(d) }
    }
}
