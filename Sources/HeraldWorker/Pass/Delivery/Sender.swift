import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import Logging

/// One request on its way: the jobs it carries and the adapter that built it.
struct Request {
    var jobs: [Job]
    var adapter: any ProviderAdapter
    var http: HTTPRequest
    var provider: Provider { adapter.provider }
}

/// What the sends of a pass did, for the driver to add to the summary.
struct SendCounts {
    var resent = 0
    var breakerOpen: Set<Provider> = []
    var credentialsRefused: Set<Provider> = []
    /// The delivery's error when a provider refused herald's credentials (the last such refusal).
    var refusal: String?
    var configSuspect: [Provider: Int] = [:]
}

/// The sending step: requests per provider through the answer policy's gate, each started when its
/// provider's quota allows, failover rounds, resends; each result decided by the `AnswerPolicy` (pure)
/// and kept in the batch's `Flights`. It owns what lasts across the pass's batches: the gate (throttles,
/// breakers, the lease), the configuration watch, each provider's pace.
final class Sender {
    let transport: HTTPTransport
    let routes: ChannelRoutes
    let escalation: EscalationPolicy
    let clock: PassClock
    let logger: Logger
    /// The gate and the configuration watch: what each answer means for its destination and its row.
    var policy: AnswerPolicy
    /// Each provider's quota, its share of it for this pass: when each request may start.
    var pacer: Pacer
    /// The retries' jitter: seeded once from the system's generator, so passes spread their retries
    /// apart, then drawn without a system call for each row (`getrandom` was one a settled row).
    private var rng = SplitMix64(seed: UInt64.random(in: .min ... .max))
    private var counts = SendCounts()

    init(transport: HTTPTransport, routes: ChannelRoutes, options: PassOptions, clock: PassClock, logger: Logger) {
        self.transport = transport
        self.routes = routes
        self.escalation = options.escalation
        self.clock = clock
        self.logger = logger
        policy = AnswerPolicy(gate: SendGate(leaseSeconds: options.leaseSeconds, longestSend: routes.longestSendTimeout))
        pacer = Pacer(quotas: options.quotas, largestRequests: routes.largestRequests, shares: options.quotaShares)
    }

    /// A batch was claimed at the pass's `elapsed` seconds: its lease starts then.
    func batchClaimed(at elapsed: Double) { policy.gate.batchClaimed(at: elapsed) }

    /// What the sends did since the last call.
    func takeCounts() -> SendCounts {
        defer { counts = SendCounts() }
        return counts
    }

    /// Sends every job concurrently on the shared transport, round after round: a destination the
    /// policy moves on (its provider failed transiently, or is throttled or broken for the pass) goes to
    /// the channel's next provider in the next round. A row is settled and its records handed to
    /// `records` when its last destination has its last word and it is not held for the configuration
    /// verdict; the held rows once every send is done.
    func send(_ jobs: [Job], flights: inout Flights, recordFailed: () -> Bool, into records: inout RecordChunker) {
        var round = jobs
        while !round.isEmpty {
            var next: [Job] = []
            sendRound(round, recordFailed: recordFailed) { job, outcome in
                if let moved = take(job, outcome, flights: &flights, record: { records.add(settle($0)) }) {
                    next.append(moved)
                }
            }
            round = next
        }
        for row in flights.heldRows { records.add(settle(row), flushing: false) }  // the verdict is in
    }

    /// One result of one job, as the policy decides it: signals logged and counted, the result kept in
    /// its row; returns the job moved to its next provider, or nil.
    private func take(_ job: Job, _ outcome: AnswerPolicy.Outcome, flights: inout Flights,
                      record: (InFlight) -> Void) -> Job? {
        let route = job.envelope.item.channel.flatMap { routes[$0] }
        let decision = policy.decide(outcome, flights.facts(job, order: route?.failoverOrder ?? []), now: clock.now())
        for signal in decision.signals { report(signal) }
        var moved: Job?
        switch decision.step {
        case .failOver(let provider):
            // The failover order holds only providers with an adapter.
            if let adapter = route?.adapter(for: provider) {
                moved = job
                moved?.adapter = adapter
                moved?.envelope.destination.provider = provider
            }
        case .resend: counts.resent += 1
        case .wait, .hold, .record: break
        }
        if let row = flights.take(job, outcome, decision.step) { record(row) }
        return moved
    }

    /// One round: the requests the gate admits, performed at once, each started when its provider's
    /// quota allows (`Pacer`: until then it waits, keeping its place). A request the gate refuses to
    /// start (stop signal, failed record flush, the lease ending, the provider's breaker opening) is not
    /// sent: its rows return to the queue with no attempt charged. An answer lost with its connection
    /// goes again at once while its rows have tries left (`AnswerPolicy.resends`).
    func sendRound(_ jobs: [Job], recordFailed: () -> Bool, done: (Job, AnswerPolicy.Outcome) -> Void) {
        var requests = build(jobs, done: done)
        guard !requests.isEmpty else { return }
        var refused: [Int: ReleaseReason] = [:]
        var flying = Set<Int>()  // started and not yet answered: each holds a place in its provider's pace
        pacer.settled()
        let unstarted = transport.perform(requests.map(\.http), decide: { index in
            let provider = requests[index].provider
            if flying.remove(index) != nil { pacer.answered(provider) }  // its connection ended: asked again
            refused[index] = policy.gate.refusal(provider, elapsed: clock.elapsed, stopping: StopSignal.requested,
                                                 recordFailed: recordFailed())
            guard refused[index] == nil else { return .refuse }
            switch pacer.take(provider, cost: requests[index].jobs.count, now: clock.elapsed) {
            case .go:
                flying.insert(index)
                return .start
            case .wait(let seconds): return .wait(seconds: seconds)
            case .full: return .wait(seconds: 0.1)  // asked again as soon as a transfer finishes
            }
        }, resendAfterLostAnswer: { index, error in
            guard AnswerPolicy.resends(triesLeft: requests[index].jobs.map(\.mayResend)) else { return false }
            let request = requests[index]
            for (i, answer) in answers(request, .failure(error)).enumerated() {
                done(request.jobs[i], .lost(answer))
                requests[index].jobs[i].resends += 1
            }
            return true
        }) { index, result in
            let request = requests[index]
            if flying.remove(index) != nil { pacer.answered(request.provider) }
            for (job, answer) in zip(request.jobs, answers(request, result)) { done(job, .answered(answer)) }
        }
        release(unstarted.map { (requests[$0], refused[$0] ?? .interrupted) }, done: done)
    }

    /// Rows of requests never started go back to the queue with no attempt charged: a broken provider's
    /// for a later pass, the others due again at once.
    func release(_ unstarted: [(Request, ReleaseReason)], done: (Job, AnswerPolicy.Outcome) -> Void) {
        guard !unstarted.isEmpty else { return }
        let reasons = Dictionary(grouping: unstarted, by: \.1).mapValues(\.count)
        logger.notice("requests not started; their rows return to the queue with no attempt charged", metadata: [
            "requests": "\(unstarted.count)",
            "reason": .string(reasons.keys.map(\.rawValue).sorted().joined(separator: ",")),
        ])
        let now = clock.now()
        for (request, reason) in unstarted {
            for job in request.jobs { done(job, policy.unstarted(reason, now: now)) }
        }
    }

    /// Logs what an answer taught the gate, and counts it. A refusal of herald's own credentials or
    /// configuration makes the pass degraded (exit 4): every message to that provider would be refused
    /// until an operator fixes the setting the answer names.
    func report(_ event: SendGate.Event) {
        switch event {
        case .throttled(let provider, let until):
            logger.warning("provider asked to slow down; not calling it again this pass before the time it gave",
                           metadata: ["provider": .string(provider.rawValue), "until": .string(ISO8601.string(until))])
        case .breakerOpened(let provider, let answers, let failures):
            counts.breakerOpen.insert(provider)
            logger.error("circuit breaker open: this provider's requests mostly fail; it is not called again this pass",
                         metadata: ["provider": .string(provider.rawValue), "answers": "\(answers)", "failures": "\(failures)"])
        case .refused(let provider, let code, let message):
            // The code and what to look at; the provider's own text (which could quote anything) goes to
            // the rows' last_error and to debug.
            let code = code ?? "no code"
            counts.breakerOpen.insert(provider)
            counts.credentialsRefused.insert(provider)
            counts.refusal = "\(provider.rawValue) refused herald's credentials or configuration (\(code)); its rows wait with no attempt charged: their last_error says what to fix"
            logger.error("a provider refused herald's credentials or configuration; it is not called again this pass and its rows wait, no attempt charged",
                         metadata: ["provider": .string(provider.rawValue), "code": .string(code)])
            logger.debug("the provider's refusal", metadata: ["provider": .string(provider.rawValue), "error": .string(message)])
        }
    }

    /// A row's records once every destination had its last word (`AnswerPolicy.settle`: the
    /// configuration watch's verdict, then `DeliveryFold`); the escalation it names becomes a new row.
    func settle(_ flight: InFlight) -> RecordBatch {
        let now = clock.now()
        let settled = policy.settle(flight.sent, escalation: escalation, now: now,
                                    random: Double.random(in: 0..<1, using: &rng))
        for provider in settled.firstReports { reportSuspect(provider) }
        for provider in settled.rewritten { counts.configSuspect[provider, default: 0] += 1 }
        let folded = settled.folded
        var out = RecordBatch()
        out.rows = [folded.row]
        out.deliveries = folded.deliveries
        out.tickets = folded.tickets
        out.deactivations = folded.deactivations
        out.optOuts = folded.optOuts
        out.forecastsSent = folded.forecastSent.map { [$0] } ?? []
        if let inbox = flight.inbox { out.inbox.append(inbox) }
        if let step = folded.escalation { out.escalations.append(NewNotification(escalating: flight.sent.item, step, at: now)) }
        return out
    }

    /// The first time the verdict rewrites a provider's answers in the pass.
    private func reportSuspect(_ provider: Provider) {
        guard let check = policy.watch.check(provider) else { return }
        let t = policy.watch.health.tally(provider)
        logger.error("most of a provider's destinations were refused at once: a configuration slip is suspected; they are retried, not deactivated", metadata: [
            "provider": .string(provider.rawValue), "answers": "\(t.answers)", "refused": "\(t.suspicious)",
            "code": .string(t.commonCode ?? "?"), "check": .string(check.hint),
        ])
    }
}
