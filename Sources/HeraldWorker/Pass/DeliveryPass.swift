import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
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
    var throttledUntil: [String: Date] = [:]
    /// Providers whose requests mostly fail in this pass are not called again (failover instead).
    var breaker = CircuitBreaker()
    /// Each provider's answers in this pass, to tell a configuration slip from dead destinations.
    var passHealth = PassHealth()

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

        while true {
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
            var (claimed, contended) = try store.claim(limit: options.batchSize, now: clock.now(), channels: channels,
                                                       leaseSeconds: options.leaseSeconds)
            // Due rows whose recipients another pass is claiming or holding: wait a moment for them
            // rather than take the queue for empty (a few tries; their pass records them meanwhile).
            var tries = 0
            while claimed.isEmpty && contended && tries < 20 && !StopSignal.requested && clock.elapsed < options.deadline {
                tries += 1
                usleep(50_000)
                (claimed, contended) = try store.claim(limit: options.batchSize, now: clock.now(), channels: channels,
                                                       leaseSeconds: options.leaseSeconds)
            }
            if claimed.isEmpty { break }
            summary.batches += 1
            logger.debug("claimed batch", metadata: ["rows": "\(claimed.count)", "batch": "\(summary.batches)"])
            try decide(claimed, dryRun: false)
            showProgress()
        }
        if options.progress { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    // MARK: - One batch

    /// A row being sent: what the decision said, and the outcome of each destination so far.
    struct InFlight {
        var claimed: Claimed
        var trail: JSONValue
        var rendered: RenderedNotification
        var provider: String
        var expected: Int
        /// Per destination: the provider that handled it and what it said.
        var results: [(destination: Destination, provider: String, response: ClassifiedResponse)] = []
        /// Destinations whose request never left this process (stop signal, a failed record flush, a
        /// provider throttled for the pass): no attempt is charged for them.
        var unsent: [(destination: Destination, until: Date?, reason: String)] = []
        /// Attempts that failed transiently before the destination moved to another provider.
        var failedOver: [(destination: Destination, provider: String, response: ClassifiedResponse)] = []
        var inbox: InboxRecord?
        var previouslyDelivered: Bool
        /// The recipient's preferences, for escalation.
        var prefs: Preferences?
        var done: Bool { results.count + unsent.count >= expected }
    }

    /// What became of one job: the provider's answer, or no request at all.
    enum JobResult {
        case answered(provider: String, ClassifiedResponse)
        /// Never sent; may be tried again from `until` (nil: at once).
        case notSent(until: Date?, reason: String)
        /// A transient failure after which the destination moved to the channel's next provider:
        /// recorded as a delivery attempt, not as the destination's outcome.
        case failedOver(provider: String, ClassifiedResponse)
    }

    func decide(_ batch: [Claimed], dryRun: Bool) throws {
        let now = clock.now()
        let ctx = try store.loadContext(for: batch.map(\.item), now: now)
        var decider = Decider(
            options: DecisionOptions(maxAge: options.maxAge, rateLimits: options.rateLimits, now: now),
            history: ctx.history)

        let channelOf = Dictionary(batch.map { ($0.item.id, $0.item.channelRaw) }, uniquingKeysWith: { a, _ in a })
        var immediate = RecordBatch()
        var flights: [InFlight] = []
        var jobs: [Job] = []

        for claimed in batch {
            let item = claimed.item
            let prefs = ctx.profiles[item.recipientUserId]
            let route = item.channel.flatMap { routes[$0] }
            let destinations = prefs.map { self.destinations(for: item, prefs: $0, route: route, ctx: ctx) } ?? []
            let context = DecisionContext(
                preferences: prefs, alert: item.alertStateId.flatMap { ctx.alerts[$0] },
                destinations: destinations, unreadInApp: ctx.unreadInApp[item.recipientUserId] ?? 0)

            let result = decider.decide(item, context)
            if dryRun {
                printDryRun(item, result, destinations: destinations.count)
                continue
            }

            switch result.decision {
            case .fail(let message):
                var r = RowRecord(id: item.id, status: .failed, event: "failed")
                r.permanent = true
                r.lastError = message
                r.reason = "invalid_row"
                r.details = result.trail
                immediate.rows.append(r)
                logger.warning("row failed permanently", metadata: [
                    "queue_id": .string(item.id.lowercased), "error": .string(message)])
            case .skip(let reason):
                var r = RowRecord(id: item.id, status: .skipped, event: reason == .superseded ? "superseded" : "skipped")
                r.skipReason = reason.rawValue
                r.reason = reason.rawValue
                r.details = result.trail
                immediate.rows.append(r)
                // A critical notification with nowhere to go on its channel tries the next one.
                if reason == .noDestination, let prefs, let next = escalation(of: item, prefs: prefs, because: reason.rawValue) {
                    immediate.escalations.append(next)
                }
            case .deferUntil(let until, let reason):
                var r = RowRecord(id: item.id, status: .pending, event: "deferred")
                r.runAfter = until
                r.attemptsDelta = -1
                r.reason = reason.rawValue
                r.details = result.trail
                immediate.rows.append(r)
            case .send:
                guard let prefs, let route else {
                    // decide() fails rows without a profile or a known channel; never leave one leased.
                    var r = RowRecord(id: item.id, status: .failed, event: "failed")
                    r.permanent = true
                    r.lastError = "no route for channel '\(item.channelRaw)'"
                    immediate.rows.append(r)
                    continue
                }
                let rendered = renderer.render(item, preferences: prefs,
                                               unreadInApp: ctx.unreadInApp[item.recipientUserId] ?? 0)
                let already = ctx.delivered[item.id] ?? []
                let todo = destinations.filter { !already.contains(storedAddress($0)) }
                var flight = InFlight(claimed: claimed, trail: result.trail, rendered: rendered,
                                      provider: route.provider, expected: todo.count,
                                      previouslyDelivered: !already.isEmpty)
                flight.prefs = prefs
                let index = flights.count  // its place in `flights` if it has anything to send
                for destination in todo {
                    // Wire timestamps (JWT iat, webhook-timestamp) follow the real clock, not --now.
                    // A push token's own locale wins over the profile's (rendered again only when it differs).
                    let own = Renderer.locale(profile: prefs.locale, destination: destination)
                    let text = own == prefs.locale ? rendered
                        : renderer.render(item, preferences: prefs, unreadInApp: ctx.unreadInApp[item.recipientUserId] ?? 0,
                                          destination: destination)
                    let envelope = Envelope(item: item, rendered: text, destination: destination, now: Date())
                    switch route {
                    case .log:
                        outbox.deliver(envelope)
                        flight.results.append((destination, "log", ClassifiedResponse(.delivered(messageId: nil))))
                    case .inbox:
                        flight.inbox = InboxRecord(
                            item: item, rendered: rendered, renderer: renderer, preferences: prefs,
                            unreadInApp: ctx.unreadInApp[item.recipientUserId] ?? 0)
                        flight.results.append((destination, "inbox", ClassifiedResponse(.delivered(messageId: nil))))
                    case .providers:
                        guard let adapter = route.adapter(for: destination.provider) else {
                            flight.results.append((destination, destination.provider, ClassifiedResponse(
                                .permanent(code: "no_adapter", message: "no adapter for provider '\(destination.provider)'"))))
                            continue
                        }
                        jobs.append(Job(flight: index, envelope: envelope, adapter: adapter))
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
        if dryRun { return }
        try flush(&immediate, channelOf: channelOf)

        guard !jobs.isEmpty else { return }
        // Records are written on a thread of their own while the transport goes on (RecordWriter).
        let writer = RecordWriter(store: store)
        var pending = RecordBatch()
        var lastFlush = clock.elapsed
        var held = Set<Int>()  // rows with a refusal that may be a configuration slip: recorded after the verdict
        send(jobs, writer: writer) { job, result in
            switch result {
            case .answered(let provider, let classified):
                flights[job.flight].results.append((job.envelope.destination, provider, classified))
                if noteAnswer(job, classified) { held.insert(job.flight) }
            case .notSent(let until, let reason):
                flights[job.flight].unsent.append((job.envelope.destination, until, reason))
            case .failedOver(let provider, let classified):
                flights[job.flight].failedOver.append((job.envelope.destination, provider, classified))
                return  // the destination is still on its way
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
        for (batch, recorded) in try writer.finish() { count(batch, recorded: recorded, channelOf: channelOf) }
    }

    // MARK: - Sending

    /// One send to one destination through one provider's adapter.
    struct Job {
        var flight: Int
        var envelope: Envelope
        var adapter: ProviderAdapter
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

    /// The job moved to the next provider of its channel, when `result` is a transient failure, a
    /// throttle or an open breaker and the channel has one; nil otherwise (a permanent answer, a
    /// stop signal, push, or no provider left).
    func failover(_ job: Job, _ result: JobResult) -> Job? {
        switch result {
        case .answered(_, let response):
            guard case .retry = response.outcome else { return nil }
        case .notSent(_, let reason):
            guard reason == "throttled" || reason == "breaker_open" else { return nil }
        case .failedOver:
            return nil
        }
        guard job.envelope.destination.deviceTokenId == nil, let channel = job.envelope.item.channel,
              let route = routes[channel] else { return nil }
        var provider = job.adapter.provider
        let now = clock.now()
        while let candidate = route.provider(after: provider) {
            provider = candidate
            if breaker.isOpen(candidate) { continue }
            if let until = throttledUntil[candidate], until > now { continue }
            guard let adapter = route.adapter(for: candidate) else { continue }
            var moved = job
            moved.adapter = adapter
            moved.envelope.destination.provider = candidate
            return moved
        }
        return nil
    }

    /// How long rows held back by an open breaker wait: until a later pass (cron's interval).
    static let breakerPause: TimeInterval = 300

    /// Counts an answer for the provider's circuit breaker; logs when it opens.
    func noteForBreaker(_ provider: String, _ answer: ClassifiedResponse) {
        let failed: Bool
        if case .retry = answer.outcome { failed = true } else { failed = false }
        if breaker.record(provider, failed: failed) {
            let t = breaker.tally(provider)
            summary.breakerOpen.insert(provider)
            logger.error("circuit breaker open: this provider's requests mostly fail; it is not called again this pass",
                         metadata: ["provider": .string(provider), "answers": "\(t.answers)", "failures": "\(t.failures)"])
        }
    }

    func sendRound(_ jobs: [Job], writer: RecordWriter? = nil, done: (Job, JobResult) -> Void) {
        var byProvider: [String: [Job]] = [:]
        for job in jobs { byProvider[job.adapter.provider, default: []].append(job) }

        var requests: [HTTPRequest] = []
        var owners: [(jobs: [Job], adapter: ProviderAdapter)] = []
        for (provider, jobs) in byProvider.sorted(by: { $0.key < $1.key }) {
            let adapter = jobs[0].adapter
            let now = clock.now()
            if let until = throttledUntil[provider], until > now {
                // Not sent, so not an attempt: the rows wait until the provider's time.
                for job in jobs { done(job, .notSent(until: until, reason: "throttled")) }
                continue
            }
            if breaker.isOpen(provider) {
                for job in jobs { done(job, .notSent(until: now.addingTimeInterval(Self.breakerPause), reason: "breaker_open")) }
                continue
            }
            do {
                try adapter.prepare(now: Date(), transport: transport)  // access tokens live in real time
            } catch {
                logger.error("could not prepare a provider; its sends are retried later",
                             metadata: ["provider": .string(provider), "error": .string("\(error)")])
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
                var start = 0
                while start < jobs.count {
                    let chunk = Array(jobs[start..<min(start + max(1, a.maxBatch), jobs.count)])
                    start += chunk.count
                    do {
                        requests.append(try a.request(for: chunk.map(\.envelope)))
                        owners.append((chunk, adapter))
                    } catch {
                        for job in chunk {
                            done(job, .answered(provider: provider, ClassifiedResponse(
                                .permanent(code: "request_build", message: "could not build the request: \(error)"))))
                        }
                    }
                }
            }
        }
        guard !requests.isEmpty else { return }

        // After a stop signal or a failed record flush, no new request starts; those never started
        // are returned to the queue without an attempt charged.
        // A provider whose breaker opened during this round starts nothing more either.
        let unstarted = transport.perform(requests, shouldStart: { index in
            !StopSignal.requested && !(writer?.failed ?? false) && !breaker.isOpen(owners[index].adapter.provider)
        }) { index, response in
            let owner = owners[index]
            let now = clock.now()
            // Providers' dates (Retry-After as an HTTP date) are in real time.
            let answers: [ClassifiedResponse]
            switch owner.adapter {
            case .single(let a): answers = [a.classify(response, now: Date())]
            case .batch(let a): answers = a.classify(response, envelopes: owner.jobs.map(\.envelope), now: Date())
            }
            for (i, job) in owner.jobs.enumerated() {
                let answer = i < answers.count ? answers[i]
                    : ClassifiedResponse(.retry(after: nil, code: "missing_answer", message: "the provider's answer did not cover this message"))
                throttle(owner.adapter.provider, after: answer, now: now)
                noteForBreaker(owner.adapter.provider, answer)
                done(job, .answered(provider: owner.adapter.provider, answer))
            }
        }
        if !unstarted.isEmpty {
            let reason = StopSignal.requested ? "interrupted" : (writer?.failed ?? false) ? "record_failed" : "breaker_open"
            logger.notice("requests not started; their rows return to the queue with no attempt charged",
                          metadata: ["requests": "\(unstarted.count)", "reason": .string(reason)])
            // A broken provider's rows wait for a later pass; the others are due again at once.
            let until = reason == "breaker_open" ? clock.now().addingTimeInterval(Self.breakerPause) : nil
            for index in unstarted {
                for job in owners[index].jobs { done(job, .notSent(until: until, reason: reason)) }
            }
        }
    }

    /// A provider-wide "slow down" with a wait (the adapter says whom a 429/503 is about) holds that
    /// provider back for the rest of the pass. One about a single destination only retries that row.
    func throttle(_ provider: String, after answer: ClassifiedResponse, now: Date) {
        guard case .provider(let after?)? = answer.throttle else { return }
        let until = now.addingTimeInterval(after)
        if until > (throttledUntil[provider] ?? .distantPast) {
            throttledUntil[provider] = until
            logger.warning("provider asked to slow down; not calling it again this pass before the time it gave",
                           metadata: ["provider": .string(provider), "until": .string(ISO8601.string(until))])
        }
    }

    /// Writes a flush and counts what was recorded. Rows this pass no longer holds are reported.
    func flush(_ records: inout RecordBatch, channelOf: [UUID: String]) throws {
        guard !records.isEmpty else { return }
        count(records, recorded: try store.record(records), channelOf: channelOf)
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

    /// Folds a row's per-destination outcomes into its record: sent when any destination got it (now or
    /// on an earlier attempt), retried while any transient failure remains and attempts are left, failed
    /// for good otherwise.
    func finish(_ flight: InFlight) -> RecordBatch {
        let item = flight.claimed.item
        let now = clock.now()
        var out = RecordBatch()
        var flight = flight
        flight.results = flight.results.map { ($0.destination, $0.provider,
                                               applyVerdict(provider: $0.provider, destination: $0.destination, $0.response)) }

        for (destination, provider, response) in flight.failedOver + flight.results {
            var d = DeliveryRecord(
                queueId: item.id, attempt: item.attempts, channel: item.channelRaw, provider: provider,
                destination: storedAddress(destination), deviceTokenId: destination.deviceTokenId,
                outcome: response.outcome.label, httpStatus: response.httpStatus, errorCode: response.outcome.code,
                messageId: nil, error: response.outcome.message, latencyMs: response.latencyMs)
            if case .delivered(let id) = response.outcome {
                d.messageId = id
                // Expo's ticket is only an acceptance: its receipt is checked by a later pass.
                if provider == "expo", let id {
                    out.tickets.append(ReceiptTicket(queueId: item.id, provider: provider, ticketId: id,
                                                     deviceTokenId: destination.deviceTokenId, createdAt: now))
                }
            }
            out.deliveries.append(d)
            if case .destinationInvalid(let code, let message) = response.outcome {
                let reason = "\(provider) \(code ?? ""): \(message)"
                if let token = destination.deviceTokenId {
                    out.deactivations.append(TokenDeactivation(deviceTokenId: token, reason: reason))
                } else if let channel = item.channel, [.sms, .whatsapp, .email].contains(channel) {
                    out.optOuts.append(ChannelOptOut(userId: item.recipientUserId, channel: channel, reason: reason))
                }
            }
        }
        if let inbox = flight.inbox { out.inbox.append(inbox) }

        let outcomes = flight.results.map(\.response.outcome)
        let delivered = outcomes.compactMap { o -> String?? in
            if case .delivered(let id) = o { return .some(id) } else { return nil }
        }
        let retries = outcomes.filter { if case .retry = $0 { return true } else { return false } }
        let failures = outcomes.filter {
            switch $0 { case .permanent, .destinationInvalid: return true; default: return false }
        }
        let messages = (retries + failures).compactMap(\.message)

        var r: RowRecord
        let reached = !delivered.isEmpty || flight.previouslyDelivered
        let attemptsLeft = item.attempts < flight.claimed.maxAttempts
        if !flight.unsent.isEmpty && retries.isEmpty {
            // Some destinations were never sent to (and nothing failed transiently): back to the
            // queue, the attempt given back; the destinations already delivered are not sent again.
            r = RowRecord(id: item.id, status: .pending, event: "released")
            r.attemptsDelta = -1
            r.runAfter = flight.unsent.compactMap(\.until).max() ?? now
            r.reason = flight.unsent[0].reason
            r.details = ["not_sent": .number(Double(flight.unsent.count)),
                         "delivered": .number(Double(delivered.count))]
        } else if let firstRetry = retries.first, attemptsLeft {
            // Transient failures remain: try again later (only the destinations not yet delivered).
            r = RowRecord(id: item.id, status: .failed, event: "failed")
            let retryAfter = retries.compactMap { o -> Double? in
                if case .retry(let after, _, _) = o { return after } else { return nil }
            }.max()
            let delay = Backoff.delay(attempt: item.attempts, retryAfter: retryAfter,
                                      random: Double.random(in: 0..<1, using: &rng))
            r.runAfter = max(now.addingTimeInterval(delay), flight.unsent.compactMap(\.until).max() ?? now)
            r.reason = firstRetry.code ?? "retry"
            r.lastError = messages.first
            r.details = ["retry_in_s": .number(delay.rounded()), "attempt": .number(Double(item.attempts))]
        } else if reached {
            // Some destination got it, now or on an earlier attempt: sent, with what failed noted.
            r = RowRecord(id: item.id, status: .sent, event: "sent")
            r.sentAt = now
            (r.title, r.body) = (flight.rendered.title, flight.rendered.body)  // notification_history
            r.providerMessageId = delivered.compactMap { $0 }.first
            r.lastError = messages.isEmpty ? nil : "some destinations failed: " + messages.joined(separator: "; ")
            r.details = flight.trail
            // The provider that actually delivered (push: the token's; email: after any failover).
            r.reason = flight.results.first(where: { if case .delivered = $0.response.outcome { true } else { false } })?.provider
                ?? flight.provider
            if item.kind == .dailyForecast, let date = item.payload?["date"]?.stringValue.flatMap(LocalDate.init) {
                out.forecastsSent.append(ForecastSent(queueId: item.id, userId: item.recipientUserId, date: date))
            }
        } else if !retries.isEmpty {
            r = RowRecord(id: item.id, status: .failed, event: "failed")
            r.permanent = true
            r.reason = "attempts_exhausted"
            r.lastError = "gave up after \(item.attempts) attempts: \(messages.first ?? "transient failure")"
        } else {
            r = RowRecord(id: item.id, status: .failed, event: "failed")
            r.permanent = true
            let allInvalid = !outcomes.isEmpty && outcomes.allSatisfy {
                if case .destinationInvalid = $0 { return true } else { return false }
            }
            r.reason = allInvalid ? "destinations_invalid" : (failures.first?.code ?? "permanent")
            r.lastError = messages.isEmpty ? "nothing was delivered" : messages.joined(separator: "; ")
        }
        // Failed for good without reaching anyone: a critical notification tries the next channel.
        if r.status == .failed && r.permanent && !reached, let prefs = flight.prefs,
           let next = escalation(of: item, prefs: prefs, because: r.reason ?? "failed") {
            out.escalations.append(next)
        }
        out.rows.append(r)
        return out
    }

    /// The same notification on the next channel of the escalation chain that the recipient has
    /// enabled, when `item` is critical and its chain has one; nil otherwise. Its preferences, quiet
    /// hours and limits apply to it as to any row; its dedupe key makes it once per channel.
    func escalation(of item: QueueItem, prefs: Preferences, because why: String) -> NewNotification? {
        let policy = options.escalation
        guard policy.applies(to: item.severity, channel: item.channel, kind: item.kindRaw),
              let channel = item.channel, let kind = item.kind,
              let next = policy.next(after: channel, kind: item.kindRaw, prefs: prefs,
                                     aboutAnotherMember: item.isAboutAnotherMember) else { return nil }
        var n = NewNotification(
            recipient: item.recipientUserId, member: item.memberUserId, alertStateId: item.alertStateId,
            channel: next.rawValue, kind: kind, severity: item.severity, priority: item.priority,
            payload: .object(item.payload ?? [:]), scheduledAt: clock.now(),
            dedupeKey: EscalationPolicy.dedupeKey(from: item.id, to: next), reason: "escalated_\(why)")
        n.escalatedFrom = item.id
        return n
    }

    // MARK: - Destinations

    /// Where a row's channel reaches its recipient. Decided before sending, so a recipient without any
    /// is skipped as `no_destination`.
    func destinations(for item: QueueItem, prefs: Preferences, route: ChannelRoute?, ctx: BatchContext) -> [Destination] {
        guard let channel = item.channel, let route else { return [] }
        switch channel {
        case .push:
            // Every active token whose provider this run can reach (all of them on the log adapter).
            let tokens = ctx.deviceTokens[item.recipientUserId] ?? []
            if case .providers = route { return tokens.filter { route.adapter(for: $0.provider) != nil } }
            return tokens
        case .sms, .whatsapp:
            return prefs.phoneE164.map { [Destination(provider: route.provider, address: $0)] } ?? []
        case .email:
            return prefs.email.map { [Destination(provider: route.provider, address: $0)] } ?? []
        case .webhook:
            if case .single(let adapter as WebhookAdapter)? = route.adapter(for: "webhook") {
                return [Destination(provider: "webhook", address: adapter.url)]
            }
            return [Destination(provider: route.provider, address: "webhook")]
        case .inApp:
            return [Destination(provider: "inbox", address: item.recipientUserId.uuidString.lowercased())]
        }
    }

    /// A destination as stored in `notification_deliveries`: URLs lose their userinfo, query string and
    /// fragment (which may carry a receiver's secret).
    func storedAddress(_ d: Destination) -> String { d.storableAddress }

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
        FileHandle.standardError.write(Data(line.utf8))
    }
}
