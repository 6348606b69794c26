import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The claiming step: the next batch, or why there is none. Due rows whose recipients another pass is
/// claiming or holding are waited for a moment (a few tries; their pass records them meanwhile) rather
/// than the queue taken for empty. It owns what the follower asks of the last claim: whether due rows
/// were left, and when the batch's lease started.
final class Claimer {
    let store: QueueStore
    let options: PassOptions
    let clock: PassClock
    let logger: Logger
    let channels: [Channel]
    /// The last claim found due rows it could not take (their recipients held by another pass): a
    /// follower looks again soon instead of waiting for a notification.
    private(set) var leftDueRows = false
    /// The pass's elapsed seconds when the last batch was claimed: its lease started then.
    private(set) var claimedAt = 0.0

    init(store: QueueStore, options: PassOptions, clock: PassClock, logger: Logger, channels: [Channel]) {
        self.store = store
        self.options = options
        self.clock = clock
        self.logger = logger
        self.channels = channels
    }

    enum Claim {
        case rows([Claimed])
        /// The batch budget is spent, the deadline passed, the queue has nothing due, or the
        /// pipeline's records failed.
        case none
        /// A stop signal came: the pass is interrupted.
        case stopped
    }

    /// The next batch, after `batches` claimed so far in this pass.
    func next(after batches: Int, recorder: Recorder) throws -> Claim {
        recorder.waitUntilPickedUp()  // at most one batch ahead of its records
        if recorder.failed { return .none }  // closing it throws the error
        if StopSignal.requested {
            logger.notice("stop requested: claiming nothing more")
            return .stopped
        }
        if clock.elapsed >= options.deadline {
            logger.notice("deadline reached: claiming nothing more", metadata: ["deadline_s": "\(options.deadline)"])
            return .none
        }
        if let max = options.maxBatches, batches >= max { return .none }
        var inFlight = recorder.recipientsInFlight
        var (claimed, contended) = try claimOnce(excluding: inFlight)
        var tries = 0
        while claimed.isEmpty && contended && tries < 20 && !StopSignal.requested && clock.elapsed < options.deadline {
            tries += 1
            if !inFlight.isEmpty {
                recorder.waitUntilIdle()  // our own records first: they may be what holds the rows
                if recorder.failed { break }
            } else {
                usleep(50_000)
            }
            inFlight = recorder.recipientsInFlight
            (claimed, contended) = try claimOnce(excluding: inFlight)
        }
        leftDueRows = claimed.isEmpty && contended
        return claimed.isEmpty ? .none : .rows(claimed)
    }

    /// One claim; the batch's lease starts with it.
    private func claimOnce(excluding recipients: Set<UUID>) throws -> (rows: [Claimed], contended: Bool) {
        claimedAt = clock.elapsed
        return try store.claim(limit: options.batchSize, now: clock.now(), channels: channels,
                               leaseSeconds: options.leaseSeconds, excluding: recipients)
    }
}
