import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `deliver` phase's driver: batch after batch until the batch budget, the deadline, an empty
/// queue or a stop signal, it composes the steps, each a type in this folder that owns its state:
///
///     Claimer        the next batch (waiting out contention); the batch's lease starts with it
///     BatchPlanner   DeliveryPlanner's plan per row, rendered, routed: records known at once, and jobs
///     Sender         requests per provider through the gate, failover rounds, resends; each result
///                    decided by the AnswerPolicy (pure) and kept in the batch's Flights
///     Recorder       where records go (in line, or the pipeline on a second connection), what is written
///
/// The driver only puts the steps in order, and alone changes the summary (DeliveryPass+Summary.swift):
/// the steps return what they did.
/// Network I/O happens only between transactions: the claim commits before the first request, and each
/// record flush is its own short transaction.
final class DeliveryPass {
    let store: QueueStore
    let options: PassOptions
    let clock: PassClock
    let logger: Logger
    let claimer: Claimer
    let planner: BatchPlanner
    let sender: Sender
    let recorder: Recorder
    var summary: Summary
    var lastProgress = -1.0  // the first batch always shows
    /// Opens a connection of the pass again when it ends (`Runner` sets it); nil: a connection that
    /// ends ends the phase. The recorder's own, so its writers reconnect too.
    var reconnector: Reconnector? {
        get { recorder.reconnector }
        set { recorder.reconnector = newValue }
    }

    init(store: QueueStore, routes: ChannelRoutes, transport: HTTPTransport, options: PassOptions,
         clock: PassClock, logger: Logger, outbox: Outbox, summary: Summary) {
        self.store = store
        self.options = options
        self.clock = clock
        self.logger = logger
        self.summary = summary
        claimer = Claimer(store: store, options: options, clock: clock, logger: logger, channels: routes.routable)
        planner = BatchPlanner(store: store, routes: routes, options: options, clock: clock, logger: logger, outbox: outbox)
        sender = Sender(transport: transport, routes: routes, options: options, clock: clock, logger: logger)
        recorder = Recorder(store: store, logger: logger)
    }

    /// The delivery of a pass, wired to it: its connections opened again when they end, and (unless a
    /// dry run) a second connection for pipelined records.
    convenience init(pass: PassContext, summary: Summary) {
        self.init(store: pass.store, routes: pass.config.routes, transport: pass.transport, options: pass.options,
                  clock: pass.clock, logger: pass.logger, outbox: pass.outbox, summary: summary)
        reconnector = pass.reconnector
        if !pass.options.dryRun {
            let (url, name) = (pass.config.databaseURL, "herald \(pass.passId) records")
            recorder.openRecordConnection = { try Runner.connect(url, applicationName: name) }
        }
    }

    var routableChannels: [Channel] { claimer.channels }
    /// The last claim found due rows it could not take (`Claimer.leftDueRows`).
    var leftDueRows: Bool { claimer.leftDueRows }

    func run() throws {
        try loadTypes()
        try onPassConnection { try countHeldBack() }
        if options.dryRun {
            let budget = options.batchSize * (options.drain ? 100 : (options.maxBatches ?? 1))
            let items = try store.peekDue(limit: budget, now: clock.now(), channels: routableChannels)
            summary.batches = items.isEmpty ? 0 : 1
            for row in try planner.dryRun(items.map { Claimed(item: $0, maxAttempts: Int.max) }) {
                countDryRun(row.item, row.result, destinations: row.destinations)
            }
            return
        }
        try drainDue()
        if options.progress { BestEffortOutput.standardError("\n") }
    }

    /// Reads `notification_types` for the decisions and the rendering that follow: a type an app adds
    /// is known from the next round on.
    func loadTypes() throws {
        planner.types = try onPassConnection { try store.loadTypes() }
    }

    /// Claims and delivers batch after batch until the claim says stop (the batch budget, the deadline,
    /// a stop signal, nothing due), and waits for the last records. A follower calls it at each wake-up.
    ///
    /// When the pass's connection ends meanwhile, it is opened again (`Reconnector`), the rows the pass
    /// claimed and never sent go back to the queue at once (`QueueStore.releaseHeld`: by then no send
    /// is in flight, and every record was written or given up on), and the drain goes on.
    func drainDue() throws {
        var restores = 0
        while true {
            do {
                try drainOnce()
                endLeases()
                return
            } catch let error as PGError where error.isConnectionFailure && restores < Reconnector.triesPerWork {
                guard let reconnector else { throw error }
                restores += 1
                try reconnector.restore(store.db, "pass", after: error)
                let released = try reconnector.retrying(store.db, "pass") { try store.releaseHeld() }
                if released > 0 {
                    logger.notice("rows claimed and not sent when the connection ended return to the queue, no attempt charged",
                                  metadata: ["rows": "\(released)"])
                }
            }
        }
    }

    /// Every row the drain claimed is recorded: the pass's note that it holds leases goes (a failure
    /// leaves it, and other passes read the recipients it held until it runs out).
    private func endLeases() {
        do {
            try store.leasesEnded()
        } catch {
            logger.warning("could not note that this pass holds no lease", metadata: ["error": .string("\(error)")])
        }
    }

    /// One drain, on the connections as they are. A pipelined pass records batch N on its own
    /// connection while it claims and decides batch N+1 (the claim then leaves out recipients whose
    /// records are still on their way).
    private func drainOnce() throws {
        defer { try? closeRecorder() }  // a claim that threw: still wait for (and count) the records
        while let batch = try claimNext() {
            summary.batches += 1
            logger.debug("claimed batch", metadata: ["rows": "\(batch.count)", "batch": "\(summary.batches)"])
            try deliver(batch)
            showProgress()
        }
        try closeRecorder()
    }

    /// The next batch, or nil: the batch budget is spent, the deadline passed, a stop signal came, the
    /// queue has nothing due, or the pipeline's records failed.
    private func claimNext() throws -> [Claimed]? {
        defer { count(recorder.takeWritten()) }
        switch try claimer.next(after: summary.batches, recorder: recorder) {
        case .none:
            return nil
        case .stopped:
            summary.interrupted = true
            return nil
        case .rows(let rows):
            sender.batchClaimed(at: claimer.claimedAt)
            recorder.openPipelineIfWorthIt(anotherBatch: options.maxBatches.map { summary.batches + 1 < $0 } ?? true,
                                           claimedFull: rows.count >= options.batchSize)
            return rows
        }
    }

    /// Waits for the pipeline's last records, counts them, closes its connection; throws a failed
    /// flush's error (its rows stay leased and come back when the lease expires).
    private func closeRecorder() throws {
        defer { count(recorder.takeWritten()) }
        try recorder.close()
    }

    /// Runs a read on the pass's connection, again on a new connection when that one ends under it.
    func onPassConnection<T>(_ body: () throws -> T) throws -> T {
        guard let reconnector else { return try body() }
        return try reconnector.retrying(store.db, "pass", body)
    }

    /// One batch: the plan (pure, `DeliveryPlanner`) and the records known before any request, then the
    /// sends, each result decided by the answer policy, each row recorded as its last answer arrives
    /// (a row held for the configuration verdict once the sends are done).
    func deliver(_ batch: [Claimed]) throws {
        defer {
            count(sender.takeCounts())
            count(recorder.takeWritten())
        }
        var work = try planner.plan(batch, settle: sender.settle, flush: recorder.flush)
        guard !work.jobs.isEmpty else { return }
        // Records are written on a thread of their own while the transport goes on (RecordWriter).
        let writer = recorder.writer()
        var chunker = RecordChunker(writer: writer, chunk: options.recordChunk, clock: clock)
        sender.send(work.jobs, flights: &work.flights, recordFailed: { writer.failed }, into: &chunker)
        chunker.close()
        try recorder.endBatch(writer)
    }
}
