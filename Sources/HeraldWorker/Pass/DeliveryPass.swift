import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `deliver` phase: claim a batch, decide each row, send, record — batch after batch until the
/// batch budget, the deadline, an empty queue or a stop signal.
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
    let renderer: Renderer
    var summary: Summary
    var rng = SystemRandomNumberGenerator()
    private var lastProgress = -1.0  // the first batch always shows
    /// Providers that answered "too many requests, wait": not called again before the time they gave.
    var throttledUntil: [Provider: Date] = [:]
    /// Providers whose requests mostly fail in this pass are not called again (failover instead).
    var breaker = CircuitBreaker()
    /// The pass's clock (`clock.elapsed`) when the batch being sent was claimed: no request starts once
    /// the rest of its lease could not cover a whole send, so no row is still being sent when another
    /// pass may take it over (a batch's requests can queue for connections, and fail over, well past
    /// one send timeout).
    var batchClaimedAt: Double = 0
    /// Each provider's answers in this pass, to tell a configuration slip from dead destinations.
    var passHealth = PassHealth()
    /// Opens the second connection a pipelined pass records on (`Runner` sets it); nil: no pipeline,
    /// every batch is claimed, decided and recorded one after the other.
    var openRecordConnection: (() throws -> PGConnection)?
    /// The writer a pipelined pass keeps across batches, once a full batch shows there is more to do.
    private var pipeline: RecordWriter?
    /// The channel of each row decided and not yet counted (its record may still be being written).
    private var channelOf: [UUID: String] = [:]
    /// The recipient of each row handed to the pipeline and not yet known written: the next claim
    /// leaves these recipients out.
    private var recipientInFlight: [UUID: UUID] = [:]

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
    }

    var routableChannels: [String] { routes.routable.map(\.rawValue) }

    func run() throws {
        let channels = routableChannels
        summary.unroutable = try store.countUnroutable(now: clock.now(), channels: channels)
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

        if options.dryRun {
            let budget = options.batchSize * (options.drain ? 100 : (options.maxBatches ?? 1))
            let items = try store.peekDue(limit: budget, now: clock.now(), channels: channels)
            summary.batches = items.isEmpty ? 0 : 1
            try decide(items.map { Claimed(item: $0, maxAttempts: Int.max) }, dryRun: true)
            return
        }

        // A pipelined pass records batch N on its own connection while it claims and decides batch
        // N+1 (the claim then leaves out recipients whose records are still on their way).
        defer { try? closePipeline() }  // a claim that threw: still wait for (and count) the records
        while true {
            if let pipeline {
                pipeline.waitUntilPickedUp()  // at most one batch ahead of its records
                countPipelined()
                if pipeline.failed { break }  // closing it throws the error
            }
            if StopSignal.requested {
                summary.interrupted = true
                logger.notice("stop requested: claiming nothing more")
                break
            }
            if clock.elapsed >= options.deadline {
                logger.notice("deadline reached: claiming nothing more", metadata: ["deadline_s": "\(options.deadline)"])
                break
            }
            if let max = options.maxBatches, summary.batches >= max { break }
            batchClaimedAt = clock.elapsed
            var (claimed, contended) = try store.claim(limit: options.batchSize, now: clock.now(), channels: channels,
                                                       leaseSeconds: options.leaseSeconds,
                                                       excluding: Set(recipientInFlight.values))
            // Due rows whose recipients another pass is claiming or holding: wait a moment for them
            // rather than take the queue for empty (a few tries; their pass records them meanwhile).
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
                batchClaimedAt = clock.elapsed
                (claimed, contended) = try store.claim(limit: options.batchSize, now: clock.now(), channels: channels,
                                                       leaseSeconds: options.leaseSeconds,
                                                       excluding: Set(recipientInFlight.values))
            }
            if claimed.isEmpty { break }
            let anotherBatch = options.maxBatches.map { summary.batches + 1 < $0 } ?? true
            if pipeline == nil, anotherBatch, claimed.count >= options.batchSize, let open = openRecordConnection {
                // A full batch, and the budget allows another: the next claim overlaps this batch's records.
                do {
                    pipeline = RecordWriter(store: QueueStore(db: try open(), passId: store.passId, shard: store.shard))
                } catch {
                    openRecordConnection = nil
                    logger.warning("no second connection for pipelined records; recording in line", metadata: [
                        "error": .string("\(error)")])
                }
            }
            summary.batches += 1
            logger.debug("claimed batch", metadata: ["rows": "\(claimed.count)", "batch": "\(summary.batches)"])
            try decide(claimed, dryRun: false)
            showProgress()
        }
        try closePipeline()
        if options.progress { BestEffortOutput.standardError("\n") }
    }

    /// Counts the pipelined flushes written so far.
    private func countPipelined() {
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
    private func closePipeline() throws {
        guard let writer = pipeline else { return }
        pipeline = nil
        defer { writer.store.db.close() }
        for (batch, recorded) in try writer.finish() { countPipelined(batch, recorded) }
    }

    // MARK: - One batch

    /// A row being sent: what the fold will need, gathered as its destinations answer.
    struct InFlight {
        var sent: SentRow
        var expected: Int
        var inbox: InboxRecord?
        var done: Bool { sent.answers.count + sent.unsent.count >= expected }
    }

    /// What became of one job: the provider's answer, or no request at all.
    enum JobResult {
        case answered(provider: Provider, ClassifiedResponse)
        /// Never sent; may be tried again from `until` (nil: at once).
        case notSent(until: Date?, reason: String)
        /// A transient failure after which the destination moved to the channel's next provider:
        /// recorded as a delivery attempt, not as the destination's outcome.
        case failedOver(provider: Provider, ClassifiedResponse)
        /// The answer was lost with its connection and the request goes again at once on a new one:
        /// recorded as a delivery attempt, and the row charged a try.
        case answerLost(provider: Provider, ClassifiedResponse)
    }

    /// One batch: the plan (pure, `DeliveryPlanner`), the records known before any request, the sends,
    /// and each row's fold (pure, `DeliveryFold`) as its last answer arrives.
    func decide(_ batch: [Claimed], dryRun: Bool) throws {
        let now = clock.now()
        let ctx = try store.loadContext(for: batch.map(\.item), now: now)
        var planner = DeliveryPlanner(
            context: DeliveryContext(ctx), routes: routes.facts,
            options: DecisionOptions(maxAge: options.maxAge, rateLimits: options.rateLimits, now: now),
            escalation: options.escalation)
        if dryRun {
            for claimed in batch {
                let row = planner.plan(PlanInput(item: claimed.item, maxAttempts: claimed.maxAttempts))
                printDryRun(row.item, row.result, destinations: row.destinations.count)
            }
            return
        }

        if pipeline == nil { channelOf = [:] }  // the pipeline's rows stay until counted
        for claimed in batch {
            channelOf[claimed.item.id] = claimed.item.channelRaw
            if pipeline != nil { recipientInFlight[claimed.item.id] = claimed.item.recipientUserId }
        }
        var immediate = RecordBatch()
        var flights: [InFlight] = []
        var jobs: [Job] = []

        for claimed in batch {
            // Planned a row at a time: a large batch never holds every row's plan at once.
            let row = planner.plan(PlanInput(item: claimed.item, maxAttempts: claimed.maxAttempts))
            let item = row.item
            switch row.action {
            case .record(let record, let escalation):
                immediate.rows.append(record)
                if let escalation, let next = newNotification(escalating: item, escalation) { immediate.escalations.append(next) }
                if case .fail(let message) = row.result.decision {
                    logger.warning("row failed permanently", metadata: [
                        "queue_id": .string(item.id.lowercased), "error": .string(message)])
                }
            case .send(let todo, let previouslyDelivered):
                guard let prefs = row.prefs, let route = item.channel.flatMap({ routes[$0] }) else {
                    // The plan records rows without a profile or a route; never leave one leased.
                    var r = RowRecord(id: item.id, status: .failed, event: .failed)
                    r.permanent = true
                    r.lastError = "no route for channel '\(item.channelRaw)'"
                    immediate.rows.append(r)
                    continue
                }
                let rendered = renderer.render(item, preferences: prefs, unreadInApp: row.unreadInApp)
                var flight = InFlight(
                    sent: SentRow(item: item, maxAttempts: row.maxAttempts, trail: row.result.trail, title: rendered.title,
                                  body: rendered.body, provider: route.provider, previouslyDelivered: previouslyDelivered,
                                  prefs: prefs),
                    expected: todo.count)
                let index = flights.count  // its place in `flights` if it has anything to send
                for destination in todo {
                    // Wire timestamps (JWT iat, webhook-timestamp) follow the real clock, not --now.
                    // A push token's own locale wins over the profile's (rendered again only when it differs).
                    let own = Renderer.locale(profile: prefs.locale, destination: destination)
                    let text = own == prefs.locale ? rendered
                        : renderer.render(item, preferences: prefs, unreadInApp: row.unreadInApp, destination: destination)
                    let envelope = Envelope(item: item, rendered: text, destination: destination, now: Date())
                    switch route {
                    case .log:
                        outbox.deliver(envelope)
                        flight.sent.answers.append(DestinationAnswer(
                            destination: destination, provider: .log, response: ClassifiedResponse(.delivered(messageId: nil))))
                    case .inbox:
                        flight.inbox = InboxRecord(
                            item: item, rendered: rendered, renderer: renderer, preferences: prefs, unreadInApp: row.unreadInApp)
                        flight.sent.answers.append(DestinationAnswer(
                            destination: destination, provider: .inbox, response: ClassifiedResponse(.delivered(messageId: nil))))
                    case .providers:
                        guard let adapter = route.adapter(for: destination.provider) else {
                            flight.sent.answers.append(DestinationAnswer(
                                destination: destination, provider: destination.provider, response: ClassifiedResponse(
                                    .permanent(code: "no_adapter", message: "no adapter for provider '\(destination.provider.rawValue)'"))))
                            continue
                        }
                        jobs.append(Job(flight: index, envelope: envelope, adapter: adapter, maxAttempts: row.maxAttempts))
                    }
                }
                if flight.done {
                    immediate.append(finish(flight))  // nothing left to send (log, inbox, or nothing new)
                } else {
                    flights.append(flight)
                }
            }
            // Rows whose fate is already known are recorded before any network I/O, a chunk at a
            // time, so a large batch never holds all its records in memory at once.
            if immediate.rows.count >= options.recordChunk * 5 { try flush(&immediate, channelOf: channelOf) }
        }
        try flush(&immediate, channelOf: channelOf)

        guard !jobs.isEmpty else { return }
        // Records are written on a thread of their own while the transport goes on (RecordWriter):
        // the pass's pipeline when it has one, else a writer on the pass's connection.
        let writer = pipeline ?? RecordWriter(store: store)
        var pending = RecordBatch()
        var lastFlush = clock.elapsed
        var held = Set<Int>()  // rows with a refusal that may be a configuration slip: recorded after the verdict
        send(jobs, writer: writer) { job, result in
            switch result {
            case .answered(let provider, let classified):
                flights[job.flight].sent.answers.append(DestinationAnswer(
                    destination: job.envelope.destination, provider: provider, response: classified, resends: job.resends))
                if noteAnswer(job, classified) { held.insert(job.flight) }
            case .notSent(let until, let reason):
                flights[job.flight].sent.unsent.append(UnsentDestination(
                    destination: job.envelope.destination, until: until, reason: reason))
            case .failedOver(let provider, let classified):
                flights[job.flight].sent.failedOver.append(DestinationAnswer(
                    destination: job.envelope.destination, provider: provider, response: classified, resends: job.resends))
                return  // the destination is still on its way
            case .answerLost(let provider, let classified):
                flights[job.flight].sent.lostAnswers.append(DestinationAnswer(
                    destination: job.envelope.destination, provider: provider, response: classified, resends: job.resends))
                summary.resent += 1
                return  // sent again at once
            }
            if flights[job.flight].done && !held.contains(job.flight) {
                pending.append(finish(flights[job.flight]))
                if pending.rows.count >= options.recordChunk || clock.elapsed - lastFlush > 0.25 {
                    writer.submit(pending)
                    pending = RecordBatch()
                    lastFlush = clock.elapsed
                }
            }
        }
        for index in held.sorted() {  // ProviderHealth's verdict is in
            pending.append(finish(flights[index]))
            if pending.rows.count >= options.recordChunk {
                writer.submit(pending)
                pending = RecordBatch()
            }
        }
        writer.submit(pending)
        if writer === pipeline { return }  // counted as its flushes are written
        for (batch, recorded) in try writer.finish() { count(batch, recorded: recorded, channelOf: channelOf) }
    }

    // MARK: - Sending

    /// One send to one destination through one provider's adapter.
    struct Job {
        var flight: Int
        var envelope: Envelope
        var adapter: ProviderAdapter
        var maxAttempts: Int
        /// Times this destination went again after its connection ended before the answer.
        var resends = 0

        /// The row has a try left for this destination: its claim's attempt and each resend are tries.
        var mayResend: Bool { envelope.item.attempts + resends < maxAttempts }
    }

    /// Sends every job concurrently on the shared transport: one request per job for single adapters,
    /// one per `maxBatch` jobs for batch adapters. Each provider is prepared first (access tokens); a
    /// provider that cannot be prepared, or that asked us to slow down earlier in this pass, is not
    /// called — its jobs are retried later. `done` is called once per job as its answer arrives.
    func send(_ jobs: [Job], writer: RecordWriter? = nil, done: (Job, JobResult) -> Void) {
        // Round after round: a destination whose provider failed transiently, or is throttled or
        // broken for this pass, moves to the channel's next provider (push stays with its token's).
        var round = jobs
        while !round.isEmpty {
            var next: [Job] = []
            sendRound(round, writer: writer) { job, result in
                if let moved = failover(job, result) {
                    if case .answered(let provider, let response) = result {
                        done(job, .failedOver(provider: provider, response))
                    }
                    next.append(moved)
                } else {
                    done(job, result)
                }
            }
            round = next
        }
    }

    /// The job moved to the next provider of its channel (`Failover.next`, the rule in the core), or
    /// nil: a permanent answer, a stop signal, push, or no provider left.
    func failover(_ job: Job, _ result: JobResult) -> Job? {
        let failure: Failover.Failure
        switch result {
        case .answered(_, let response):
            switch response.outcome {
            case .retry where response.connectionEnded: return nil  // the connection's end, not the provider's
            case .retry: failure = .transient
            case .refused: failure = .breakerOpen  // the provider refused herald itself: out for the pass
            default: return nil  // delivered, or a permanent answer: stays
            }
        case .notSent(_, let reason):
            guard let kind = Failover.Failure(rawValue: reason), kind == .throttled || kind == .breakerOpen else { return nil }
            failure = kind
        case .failedOver, .answerLost:
            return nil
        }
        guard let channel = job.envelope.item.channel, let route = routes[channel],
              let next = Failover.next(after: job.adapter.provider, failure: failure, order: route.failoverOrder,
                                       pinned: job.envelope.destination.deviceTokenId != nil || job.adapter.provider.issuesDeviceTokens,
                                       open: breaker.open, throttledUntil: throttledUntil, now: clock.now()),
              let adapter = route.adapter(for: next) else { return nil }
        var moved = job
        moved.adapter = adapter
        moved.envelope.destination.provider = next
        return moved
    }

    /// How long rows held back by an open breaker wait: until a later pass (cron's interval).
    static let breakerPause: TimeInterval = 300

    /// Counts an answer for the provider's circuit breaker; logs when it opens. A refusal of herald's own
    /// credentials or configuration opens it at once and makes the pass degraded (exit 4): every
    /// message to that provider would be refused until an operator fixes the setting the answer names.
    func noteForBreaker(_ provider: Provider, _ answer: ClassifiedResponse) {
        if case .refused(let code, let message) = answer.outcome {
            if breaker.trip(provider) {
                // The code and what to look at; the provider's own text (which could quote anything)
                // goes to the rows' last_error and to debug.
                let code = code ?? "no code"
                summary.breakerOpen.insert(provider)
                summary.phaseErrors[Phase.deliver.rawValue] = "\(provider.rawValue) refused herald's credentials or configuration (\(code)); its rows wait with no attempt charged: their last_error says what to fix"
                logger.error("a provider refused herald's credentials or configuration; it is not called again this pass and its rows wait, no attempt charged",
                             metadata: ["provider": .string(provider.rawValue), "code": .string(code)])
                logger.debug("the provider's refusal", metadata: ["provider": .string(provider.rawValue), "error": .string(message)])
            }
            return
        }
        // A "slow down" about one destination (one device, one recipient) says nothing of the provider's health.
        let failed: Bool
        if case .retry = answer.outcome, answer.throttle?.isAboutOneDestination != true { failed = true } else { failed = false }
        if breaker.record(provider, failed: failed) {
            let t = breaker.tally(provider)
            summary.breakerOpen.insert(provider)
            logger.error("circuit breaker open: this provider's requests mostly fail; it is not called again this pass",
                         metadata: ["provider": .string(provider.rawValue), "answers": "\(t.answers)", "failures": "\(t.failures)"])
        }
    }

    func sendRound(_ jobs: [Job], writer: RecordWriter? = nil, done: (Job, JobResult) -> Void) {
        var byProvider: [Provider: [Job]] = [:]
        for job in jobs { byProvider[job.adapter.provider, default: []].append(job) }

        var requests: [HTTPRequest] = []
        var owners: [(jobs: [Job], adapter: ProviderAdapter)] = []
        for (provider, jobs) in byProvider.sorted(by: { $0.key < $1.key }) {
            let adapter = jobs[0].adapter
            let now = clock.now()
            if let until = throttledUntil[provider], until > now {
                // Not sent, so not an attempt: the rows wait until the provider's time.
                for job in jobs { done(job, .notSent(until: until, reason: Failover.Failure.throttled.rawValue)) }
                continue
            }
            if breaker.isOpen(provider) {
                for job in jobs { done(job, .notSent(until: now.addingTimeInterval(Self.breakerPause), reason: Failover.Failure.breakerOpen.rawValue)) }
                continue
            }
            do {
                try adapter.prepare(now: Date(), transport: transport)  // access tokens live in real time
            } catch {
                logger.error("could not prepare a provider; its sends are retried later",
                             metadata: ["provider": .string(provider.rawValue), "error": .string("\(error)")])
                for job in jobs {
                    done(job, .answered(provider: provider,
                                        ClassifiedResponse(.retry(after: nil, code: "prepare_failed", message: "\(error)"))))
                }
                continue
            }
            switch adapter {
            case .single(let a):
                for job in jobs {
                    do {
                        requests.append(try a.request(for: job.envelope))
                        owners.append(([job], adapter))
                    } catch {
                        done(job, .answered(provider: provider, ClassifiedResponse(
                            .permanent(code: "request_build", message: "could not build the request: \(error)"))))
                    }
                }
            case .batch(let a):
                func failed(_ job: Job, _ error: any Error) {
                    done(job, .answered(provider: provider, ClassifiedResponse(
                        .permanent(code: "request_build", message: "could not build the request: \(error)"))))
                }
                var start = 0
                while start < jobs.count {
                    var chunk = Array(jobs[start..<min(start + max(1, a.maxBatch), jobs.count)])
                    start += chunk.count
                    var built = Result { try a.request(for: chunk.map(\.envelope)) }
                    if case .failure = built {
                        // A message that cannot be built (a data field or a token too big) fails alone:
                        // each is tried by itself, and the others go in one request without it.
                        chunk = chunk.filter { job in
                            do {
                                _ = try a.request(for: [job.envelope])
                                return true
                            } catch {
                                failed(job, error)
                                return false
                            }
                        }
                        guard !chunk.isEmpty else { continue }
                        built = Result { try a.request(for: chunk.map(\.envelope)) }
                    }
                    switch built {
                    case .success(let request):
                        requests.append(request)
                        owners.append((chunk, adapter))
                    case .failure(let error):
                        for job in chunk { failed(job, error) }
                    }
                }
            }
        }
        guard !requests.isEmpty else { return }

        // After a stop signal or a failed record flush, no new request starts; those never started
        // are returned to the queue without an attempt charged.
        // A provider whose breaker opened during this round starts nothing more either.
        let leaseEnds = batchClaimedAt + Double(options.leaseSeconds) - routes.longestSendTimeout - 1
        let unstarted = transport.perform(requests, shouldStart: { index in
            !StopSignal.requested && !(writer?.failed ?? false) && !breaker.isOpen(owners[index].adapter.provider)
                && clock.elapsed < leaseEnds
        }, resendAfterLostAnswer: { index, error in
            // Losing a health alert is worse than a copy the device folds away (every push carries a
            // collapse id): sent again while each of its rows has a try left, each try charged.
            guard owners[index].jobs.allSatisfy(\.mayResend) else { return false }
            let owner = owners[index]
            let answers = answers(owner, .failure(error))
            for (i, job) in owner.jobs.enumerated() {
                done(job, .answerLost(provider: owner.adapter.provider, answers[i]))
                owners[index].jobs[i].resends += 1
            }
            return true
        }) { index, response in
            let owner = owners[index]
            let now = clock.now()
            for (job, answer) in zip(owner.jobs, answers(owner, response)) {
                if !answer.connectionEnded {  // a connection's end says nothing of the provider
                    throttle(owner.adapter.provider, after: answer, now: now)
                    noteForBreaker(owner.adapter.provider, answer)
                }
                done(job, .answered(provider: owner.adapter.provider, answer))
            }
        }
        if !unstarted.isEmpty {
            let reason = StopSignal.requested ? "interrupted" : (writer?.failed ?? false) ? "record_failed"
                : clock.elapsed >= leaseEnds ? "lease_ending" : Failover.Failure.breakerOpen.rawValue
            logger.notice("requests not started; their rows return to the queue with no attempt charged",
                          metadata: ["requests": "\(unstarted.count)", "reason": .string(reason)])
            // A broken provider's rows wait for a later pass; the others are due again at once.
            let until = reason == Failover.Failure.breakerOpen.rawValue ? clock.now().addingTimeInterval(Self.breakerPause) : nil
            for index in unstarted {
                for job in owners[index].jobs { done(job, .notSent(until: until, reason: reason)) }
            }
        }
    }

    /// One answer per job of a request: the adapter's classification (providers' dates, such as
    /// Retry-After as an HTTP date, are in real time), marked when the connection ended under it.
    func answers(_ owner: (jobs: [Job], adapter: ProviderAdapter), _ result: Result<HTTPResponse, TransportError>)
        -> [ClassifiedResponse] {
        let classified = owner.adapter.classify(result, envelopes: owner.jobs.map(\.envelope), now: Date())
        let ended: Bool
        if case .failure(let error) = result { ended = error.isConnectionEnd } else { ended = false }
        return owner.jobs.indices.map { i in
            var answer = i < classified.count ? classified[i]
                : ClassifiedResponse(.retry(after: nil, code: "missing_answer", message: "the provider's answer did not cover this message"))
            answer.connectionEnded = ended
            return answer
        }
    }

    /// A provider-wide "slow down" with a wait (the adapter says whom a 429/503 is about) holds that
    /// provider back for the rest of the pass. One about a single destination only retries that row.
    func throttle(_ provider: Provider, after answer: ClassifiedResponse, now: Date) {
        guard case .provider(let after?)? = answer.throttle else { return }
        let until = now.addingTimeInterval(after)
        if until > (throttledUntil[provider] ?? .distantPast) {
            throttledUntil[provider] = until
            logger.warning("provider asked to slow down; not calling it again this pass before the time it gave",
                           metadata: ["provider": .string(provider.rawValue), "until": .string(ISO8601.string(until))])
        }
    }

    /// Writes a flush and counts what was recorded. Rows this pass no longer holds are reported.
    func flush(_ records: inout RecordBatch, channelOf: [UUID: String]) throws {
        guard !records.isEmpty else { return }
        if let pipeline {
            pipeline.submit(records)
        } else {
            count(records, recorded: try store.record(records), channelOf: channelOf)
        }
        records = RecordBatch()
    }

    /// Counts a written flush in the summary; rows the fenced update did not record are reported.
    func count(_ records: RecordBatch, recorded: Set<UUID>, channelOf: [UUID: String]) {
        var lost = 0
        for row in records.rows {
            if recorded.contains(row.id) {
                summary.count(row, channel: channelOf[row.id] ?? "?")
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

    // MARK: - Outcomes

    /// A row's records once every destination has answered: the health verdict applied to the answers,
    /// then `DeliveryFold`; the escalation it names becomes a new row.
    func finish(_ flight: InFlight) -> RecordBatch {
        var sent = flight.sent
        sent.answers = sent.answers.map { answer in
            var a = answer
            a.response = applyVerdict(provider: a.provider, destination: a.destination, a.response)
            return a
        }
        let folded = DeliveryFold.fold(sent, escalation: options.escalation, now: clock.now(),
                                       random: Double.random(in: 0..<1, using: &rng))
        var out = RecordBatch()
        out.rows = [folded.row]
        out.deliveries = folded.deliveries
        out.tickets = folded.tickets
        out.deactivations = folded.deactivations
        out.optOuts = folded.optOuts
        out.forecastsSent = folded.forecastSent.map { [$0] } ?? []
        if let inbox = flight.inbox { out.inbox.append(inbox) }
        if let step = folded.escalation, let next = newNotification(escalating: sent.item, step) { out.escalations.append(next) }
        return out
    }

    /// The row an escalation enqueues: the same notification on the next channel, linked to the original.
    /// Its preferences, quiet hours and limits apply to it as to any row; its dedupe key makes it once
    /// per channel.
    func newNotification(escalating item: QueueItem, _ step: EscalationStep) -> NewNotification? {
        guard let kind = item.kind else { return nil }
        var n = NewNotification(
            recipient: item.recipientUserId, member: item.memberUserId, alertStateId: item.alertStateId,
            channel: step.channel.rawValue, kind: kind, severity: item.severity, priority: item.priority,
            payload: .object(item.payload ?? [:]), scheduledAt: clock.now(), dedupeKey: step.dedupeKey, reason: step.reason)
        n.escalatedFrom = item.id
        n.group = item.notificationGroup  // still one notification for the rate limits
        return n
    }

    // MARK: - Output

    func printDryRun(_ item: QueueItem, _ result: DecisionResult, destinations: Int) {
        var line: [String: JSONValue] = [
            "dry_run": true, "id": .string(item.id.uuidString.lowercased()),
            "channel": .string(item.channelRaw), "kind": .string(item.kindRaw),
            "destinations": .number(Double(destinations)), "trail": result.trail,
        ]
        switch result.decision {
        case .send: line["decision"] = "send"; summary.sent += 1
        case .skip(let r): line["decision"] = "skip"; line["reason"] = .string(r.rawValue); summary.skipped += 1
        case .deferUntil(let d, let r):
            line["decision"] = "defer"; line["reason"] = .string(r.rawValue)
            line["until"] = .string(ISO8601.string(d)); summary.deferred += 1
        case .fail(let m): line["decision"] = "fail"; line["error"] = .string(m); summary.failed += 1
        }
        summary.processed += 1
        print(JSONValue.object(line).jsonText)
    }

    func showProgress() {
        guard options.progress else { return }
        let t = clock.elapsed
        guard t - lastProgress > 0.2 else { return }
        lastProgress = t
        let rate = t > 0 ? Double(summary.processed) / t : 0
        let line = "\rherald: \(summary.processed) rows (\(summary.sent) sent, \(summary.skipped) skipped, "
            + "\(summary.deferred) deferred, \(summary.failed) failed), \(Int(rate)) rows/s   "
        BestEffortOutput.standardError(line)
    }
}
