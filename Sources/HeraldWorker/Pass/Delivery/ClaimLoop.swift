import Foundation
import HeraldCore
import HeraldPostgres

extension DeliveryPass {
    /// The next batch to deliver, or nil: the batch budget is spent, the deadline passed, a stop signal
    /// came, the queue has nothing due, or the pipeline's records failed. Due rows whose recipients
    /// another pass is claiming or holding are waited for a moment (a few tries; their pass records
    /// them meanwhile) rather than the queue taken for empty.
    func claimNext() throws -> [Claimed]? {
        if let pipeline {
            pipeline.waitUntilPickedUp()  // at most one batch ahead of its records
            countPipelined()
            if pipeline.failed { return nil }  // closing it throws the error
        }
        guard mayClaim() else { return nil }
        var (claimed, contended) = try claimOnce()
        var tries = 0
        while claimed.isEmpty && contended && tries < 20 && !StopSignal.requested && clock.elapsed < options.deadline {
            tries += 1
            if let pipeline, !recipientInFlight.isEmpty {
                pipeline.waitUntilIdle()  // our own records first: they may be what holds the rows
                countPipelined()
                if pipeline.failed { break }
            } else {
                usleep(50_000)
            }
            (claimed, contended) = try claimOnce()
        }
        leftDueRows = claimed.isEmpty && contended
        if claimed.isEmpty { return nil }
        openPipelineIfWorthIt(claimedFull: claimed.count >= options.batchSize)
        return claimed
    }

    /// Whether the pass may claim another batch: no stop signal, the deadline not reached, the batch
    /// budget not spent.
    private func mayClaim() -> Bool {
        if StopSignal.requested {
            summary.interrupted = true
            logger.notice("stop requested: claiming nothing more")
            return false
        }
        if clock.elapsed >= options.deadline {
            logger.notice("deadline reached: claiming nothing more", metadata: ["deadline_s": "\(options.deadline)"])
            return false
        }
        if let max = options.maxBatches, summary.batches >= max { return false }
        return true
    }

    /// One claim; the batch's lease starts with it.
    private func claimOnce() throws -> (rows: [Claimed], contended: Bool) {
        gate.batchClaimed(at: clock.elapsed)
        return try store.claim(limit: options.batchSize, now: clock.now(), channels: routableChannels,
                               leaseSeconds: options.leaseSeconds, excluding: Set(recipientInFlight.values))
    }

    /// A full batch, and the budget allows another: the next claim overlaps this batch's records, on a
    /// second connection.
    private func openPipelineIfWorthIt(claimedFull: Bool) {
        let anotherBatch = options.maxBatches.map { summary.batches + 1 < $0 } ?? true
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

    /// Counts the pipelined flushes written so far.
    func countPipelined() {
        guard let pipeline else { return }
        for (batch, recorded) in pipeline.takeResults() { countPipelined(batch, recorded) }
    }

    private func countPipelined(_ batch: RecordBatch, _ recorded: Set<UUID>) {
        count(batch, recorded: recorded, channelOf: channelOf)
        for row in batch.rows {
            channelOf[row.id] = nil
            recipientInFlight[row.id] = nil
        }
    }

    /// Waits for the pipeline's last records, counts them, closes its connection; throws a failed
    /// flush's error (its rows stay leased and come back when the lease expires).
    func closePipeline() throws {
        guard let writer = pipeline else { return }
        pipeline = nil
        defer { writer.store.db.close() }
        for (batch, recorded) in try writer.finish() { countPipelined(batch, recorded) }
    }
}
