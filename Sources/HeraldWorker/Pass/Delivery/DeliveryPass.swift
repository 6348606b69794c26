import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `deliver` phase: claim a batch, plan each row, pass the sends through the gate, send, fold each
/// row's answers, record — batch after batch until the batch budget, the deadline, an empty queue or a
/// stop signal. Each step is a file of its own in this folder:
///
///     ClaimLoop.swift     claim (waiting out contention), the pipelined record connection
///     Planning.swift      DeliveryPlanner's plan per row, rendered, routed: records and sends
///     Sending.swift       requests per provider through the SendGate, failover rounds, resends
///     Folding.swift       the configuration watch's verdict, then DeliveryFold, per row
///     Recording.swift     record flushes as answers arrive, and their count in the summary
///
/// Network I/O happens only between transactions: the claim commits before the first request, and each
/// record flush is its own short transaction.
final class DeliveryPass {
    let store: QueueStore
    let routes: ChannelRoutes
    let transport: HTTPTransport
    let options: PassOptions
    let clock: PassClock
    let logger: Logger
    let outbox: Outbox
    var renderer: Renderer
    /// The notification types (`notification_types`), read when the phase starts and at each round of
    /// a follower (`loadTypes`).
    var types = NotificationTypes.builtIn
    var summary: Summary
    var rng = SystemRandomNumberGenerator()
    var lastProgress = -1.0  // the first batch always shows
    /// Throttles, the circuit breaker and the batch's lease: whether and where each request goes.
    var gate: SendGate
    /// Each provider's quota, its share of it for this pass: when each request may start.
    var pacer: Pacer
    /// Each provider's answers in this pass, to tell a configuration slip from dead destinations.
    var watch = ConfigurationWatch()
    /// Opens the second connection a pipelined pass records on (`Runner` sets it); nil: no pipeline,
    /// every batch is claimed, decided and recorded one after the other.
    var openRecordConnection: (() throws -> PGConnection)?
    /// Opens a connection of the pass again when it ends (`Runner` sets it); nil: a connection that
    /// ends ends the phase.
    var reconnector: Reconnector?
    /// The writer a pipelined pass keeps across batches, once a full batch shows there is more to do.
    var pipeline: RecordWriter?
    /// The channel of each row decided and not yet counted (its record may still be being written).
    var channelOf: [UUID: RowChannel] = [:]
    /// The recipient of each row handed to the pipeline and not yet known written: the next claim
    /// leaves these recipients out.
    var recipientInFlight: [UUID: UUID] = [:]
    /// The last claim found due rows it could not take (their recipients held by another pass): a
    /// follower looks again soon instead of waiting for a notification.
    var leftDueRows = false

    init(store: QueueStore, routes: ChannelRoutes, transport: HTTPTransport, options: PassOptions,
         clock: PassClock, logger: Logger, outbox: Outbox, summary: Summary) {
        self.store = store
        self.routes = routes
        self.transport = transport
        self.options = options
        self.clock = clock
        self.logger = logger
        self.outbox = outbox
        self.renderer = Renderer(options: options.render)
        self.summary = summary
        self.gate = SendGate(leaseSeconds: options.leaseSeconds, longestSend: routes.longestSendTimeout)
        self.pacer = Pacer(quotas: options.quotas, largestRequests: routes.largestRequests, shares: options.quotaShares)
    }

    var routableChannels: [Channel] { routes.routable }

    func run() throws {
        try loadTypes()
        try onPassConnection { try countHeldBack() }
        if options.dryRun {
            let budget = options.batchSize * (options.drain ? 100 : (options.maxBatches ?? 1))
            let items = try store.peekDue(limit: budget, now: clock.now(), channels: routableChannels)
            summary.batches = items.isEmpty ? 0 : 1
            try dryRun(items.map { Claimed(item: $0, maxAttempts: Int.max) })
            return
        }
        try drainDue()
        if options.progress { BestEffortOutput.standardError("\n") }
    }

    /// Reads `notification_types` for the decisions and the rendering that follow: a type an app adds
    /// is known from the next round on.
    func loadTypes() throws {
        types = try onPassConnection { try store.loadTypes() }
        renderer.options.types = types
    }

    /// Claims and delivers batch after batch until `claimNext` says stop (the batch budget, the
    /// deadline, a stop signal, nothing due), and waits for the last records. A follower calls it at
    /// each wake-up.
    ///
    /// When the pass's connection ends meanwhile, it is opened again (`Reconnector`), the rows the pass
    /// claimed and never sent go back to the queue at once (`QueueStore.releaseHeld`: by then no send
    /// is in flight, and every record was written or given up on), and the drain goes on.
    func drainDue() throws {
        var restores = 0
        while true {
            do {
                try drainOnce()
                return
            } catch let error as PGError where error.isConnectionFailure && restores < Reconnector.triesPerWork {
                guard let reconnector else { throw error }
                restores += 1
                recipientInFlight = [:]
                try reconnector.restore(store.db, "pass", after: error)
                let released = try reconnector.retrying(store.db, "pass") { try store.releaseHeld() }
                if released > 0 {
                    logger.notice("rows claimed and not sent when the connection ended return to the queue, no attempt charged",
                                  metadata: ["rows": "\(released)"])
                }
            }
        }
    }

    /// One drain, on the connections as they are.
    private func drainOnce() throws {
        // A pipelined pass records batch N on its own connection while it claims and decides batch
        // N+1 (the claim then leaves out recipients whose records are still on their way).
        defer { try? closePipeline() }  // a claim that threw: still wait for (and count) the records
        while let batch = try claimNext() {
            summary.batches += 1
            logger.debug("claimed batch", metadata: ["rows": "\(batch.count)", "batch": "\(summary.batches)"])
            try deliver(batch)
            showProgress()
        }
        try closePipeline()
    }

    /// Runs a read on the pass's connection, again on a new connection when that one ends under it.
    func onPassConnection<T>(_ body: () throws -> T) throws -> T {
        guard let reconnector else { return try body() }
        return try reconnector.retrying(store.db, "pass", body)
    }

    /// Due rows the pass will not claim: their channel has no route, or an operator paused them.
    func countHeldBack() throws {
        summary.unroutable = try store.countUnroutable(now: clock.now(), channels: routableChannels)
        if !summary.unroutable.isEmpty {
            logger.warning("due rows wait for channels with no adapter; they stay pending", metadata: [
                "unroutable": .dictionary(summary.unroutable.mapValues { .stringConvertible($0) }),
                "hint": "configure the channel's provider, or set HERALD_CHANNEL_<CHANNEL>=log",
            ])
        }
        summary.paused = try store.countPaused(now: clock.now())
        if !summary.paused.isEmpty {
            logger.notice("due rows held back by an operator's pause; they stay pending", metadata: [
                "paused": .dictionary(summary.paused.mapValues { .stringConvertible($0) })])
        }
    }

    /// One batch: the plan (pure, `DeliveryPlanner`) and the records known before any request, then the
    /// sends through the gate, each row folded (pure, `DeliveryFold`) and recorded as its last answer
    /// arrives.
    func deliver(_ batch: [Claimed]) throws {
        if pipeline == nil { channelOf = [:] }  // the pipeline's rows stay until counted
        for claimed in batch {
            channelOf[claimed.item.id] = RowChannel(claimed.item.channelRaw)
            if pipeline != nil { recipientInFlight[claimed.item.id] = claimed.item.recipientUserId }
        }
        var work = try plan(batch)
        guard !work.jobs.isEmpty else { return }
        // Records are written on a thread of their own while the transport goes on (RecordWriter):
        // the pass's pipeline when it has one, else a writer on the pass's connection.
        let writer = pipeline ?? RecordWriter(store: store, reconnector: reconnector)
        var recorder = Recorder(writer: writer, chunk: options.recordChunk, clock: clock)
        var held = Set<Int>()  // rows with a refusal that may be a configuration slip: recorded after the verdict
        send(work.jobs, writer: writer) { job, result in
            if case .answerLost = result { summary.resent += 1 }
            guard work.flights[job.flight].take(job, result) else { return }  // still on its way
            if case .answered(let provider, let answer) = result,
               watch.note(answer, from: provider, check: job.adapter.configurationCheck) {
                held.insert(job.flight)
            }
            if work.flights[job.flight].done && !held.contains(job.flight) {
                recorder.add(finish(work.flights[job.flight]))
            }
        }
        for index in held.sorted() { recorder.add(finish(work.flights[index]), flushing: false) }  // the verdict is in
        recorder.close()
        if writer === pipeline { return }  // counted as its flushes are written
        for (batch, recorded) in try writer.finish() { count(batch, recorded: recorded, channelOf: channelOf) }
    }
}
