import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP

/// One request on its way: the jobs it carries and the adapter that built it.
struct Request {
    var jobs: [Job]
    var adapter: any ProviderAdapter
    var http: HTTPRequest
    var provider: Provider { adapter.provider }
}

extension DeliveryPass {
    /// Sends every job concurrently on the shared transport, round after round: a destination whose
    /// provider failed transiently, or is throttled or broken for the pass, moves to the channel's next
    /// provider (`SendGate.next`; push stays with its token's). `done` is called once per job result.
    func send(_ jobs: [Job], writer: RecordWriter? = nil, done: (Job, JobResult) -> Void) {
        var round = jobs
        while !round.isEmpty {
            var next: [Job] = []
            sendRound(round, writer: writer) { job, result in
                if let moved = failover(job, result) {
                    if case .answered(let provider, let answer) = result { done(job, .failedOver(provider: provider, answer)) }
                    next.append(moved)
                } else {
                    done(job, result)
                }
            }
            round = next
        }
    }

    /// The job moved to the next provider of its channel, or nil: it stays.
    func failover(_ job: Job, _ result: JobResult) -> Job? {
        guard let channel = job.envelope.item.channel, let route = routes[channel] else { return nil }
        let provider = job.adapter.provider
        let pinned = job.envelope.destination.deviceTokenId != nil || provider.issuesDeviceTokens
        let next: Provider?
        switch result {
        case .answered(_, let answer):
            next = gate.next(after: answer, from: provider, order: route.failoverOrder, pinned: pinned, now: clock.now())
        case .notSent(_, let reason):
            next = gate.next(afterHold: reason, from: provider, order: route.failoverOrder, pinned: pinned, now: clock.now())
        case .failedOver, .answerLost:
            next = nil
        }
        guard let next, let adapter = route.adapter(for: next) else { return nil }
        var moved = job
        moved.adapter = adapter
        moved.envelope.destination.provider = next
        return moved
    }

    /// One round: the requests the gate admits, performed at once, each started when its provider's
    /// quota allows (`Pacer`: until then it waits, keeping its place). A request the gate refuses to start (stop
    /// signal, failed record flush, the lease ending, the provider's breaker opening) is not sent: its
    /// rows return to the queue with no attempt charged. An answer lost with its connection goes again
    /// at once while its rows have tries left.
    func sendRound(_ jobs: [Job], writer: RecordWriter? = nil, done: (Job, JobResult) -> Void) {
        var requests = build(jobs, done: done)
        guard !requests.isEmpty else { return }
        var refused: [Int: ReleaseReason] = [:]
        var flying = Set<Int>()  // started and not yet answered: each holds a place in its provider's pace
        pacer.settled()
        let unstarted = transport.perform(requests.map(\.http), decide: { index in
            let provider = requests[index].provider
            if flying.remove(index) != nil { pacer.answered(provider) }  // its connection ended: asked again
            refused[index] = gate.refusal(provider, elapsed: clock.elapsed,
                                          stopping: StopSignal.requested, recordFailed: writer?.failed ?? false)
            guard refused[index] == nil else { return .refuse }
            switch pacer.take(provider, cost: requests[index].jobs.count, now: clock.elapsed) {
            case .go:
                flying.insert(index)
                return .start
            case .wait(let seconds): return .wait(seconds: seconds)
            case .full: return .wait(seconds: 0.1)  // asked again as soon as a transfer finishes
            }
        }, resendAfterLostAnswer: { index, error in
            // Losing a health alert is worse than a copy the device folds away (every push carries a
            // collapse id): sent again while each of its rows has a try left, each try charged.
            guard requests[index].jobs.allSatisfy(\.mayResend) else { return false }
            let request = requests[index]
            for (i, answer) in answers(request, .failure(error)).enumerated() {
                done(request.jobs[i], .answerLost(provider: request.provider, answer))
                requests[index].jobs[i].resends += 1
            }
            return true
        }) { index, result in
            let request = requests[index]
            if flying.remove(index) != nil { pacer.answered(request.provider) }
            for (job, answer) in zip(request.jobs, answers(request, result)) {
                for event in gate.learn(answer, from: request.provider, now: clock.now()) { report(event) }
                done(job, .answered(provider: request.provider, answer))
            }
        }
        release(unstarted.map { (requests[$0], refused[$0] ?? .interrupted) }, done: done)
    }

    /// Rows of requests never started go back to the queue with no attempt charged: a broken provider's
    /// for a later pass, the others due again at once.
    func release(_ unstarted: [(Request, ReleaseReason)], done: (Job, JobResult) -> Void) {
        guard !unstarted.isEmpty else { return }
        let reasons = Dictionary(grouping: unstarted, by: \.1).mapValues(\.count)
        logger.notice("requests not started; their rows return to the queue with no attempt charged", metadata: [
            "requests": "\(unstarted.count)",
            "reason": .string(reasons.keys.map(\.rawValue).sorted().joined(separator: ",")),
        ])
        let now = clock.now()
        for (request, reason) in unstarted {
            for job in request.jobs { done(job, .notSent(until: gate.retryTime(reason, now: now), reason: reason)) }
        }
    }

    /// The requests for a round's jobs, per provider in a fixed order: a provider the gate holds back
    /// (throttled, breaker open) or that cannot be prepared (access tokens) sends nothing; the others'
    /// jobs go in requests of at most `maxBatch` envelopes (fewer when the provider's quota is small:
    /// `Pacer.largestRequest`).
    func build(_ jobs: [Job], done: (Job, JobResult) -> Void) -> [Request] {
        var requests: [Request] = []
        for (provider, jobs) in Dictionary(grouping: jobs, by: \.adapter.provider).sorted(by: { $0.key < $1.key }) {
            let adapter = jobs[0].adapter
            if case .hold(let until, let reason) = gate.admit(provider, now: clock.now()) {
                for job in jobs { done(job, .notSent(until: until, reason: reason)) }
                continue
            }
            do {
                try adapter.prepare(now: clock.wire(), transport: transport)  // access tokens live in real time
            } catch {
                logger.error("could not prepare a provider; its sends are retried later",
                             metadata: ["provider": .string(provider.rawValue), "error": .string("\(error)")])
                for job in jobs {
                    done(job, .answered(provider: provider, ClassifiedResponse(
                        .retry(after: nil, code: "prepare_failed", message: "\(error)"))))
                }
                continue
            }
            let largest = pacer.largestRequest(provider, adapterMax: adapter.maxBatch)
            var start = 0
            while start < jobs.count {
                let chunk = Array(jobs[start..<min(start + largest, jobs.count)])
                start += chunk.count
                requests += requestsFor(chunk, adapter: adapter, done: done)
            }
        }
        return requests
    }

    /// One request for a chunk of jobs. A message that cannot be built (a data field or a token too big)
    /// fails alone: each is tried by itself, and the others go in one request without it.
    func requestsFor(_ chunk: [Job], adapter: any ProviderAdapter, done: (Job, JobResult) -> Void) -> [Request] {
        func failed(_ job: Job, _ error: any Error) {
            done(job, .answered(provider: adapter.provider, ClassifiedResponse(
                .permanent(code: "request_build", message: "could not build the request: \(error)"))))
        }
        if let http = try? adapter.request(for: chunk.map(\.envelope)) {
            return [Request(jobs: chunk, adapter: adapter, http: http)]
        }
        let buildable = chunk.filter { job in
            do {
                _ = try adapter.request(for: [job.envelope])
                return true
            } catch {
                failed(job, error)
                return false
            }
        }
        guard !buildable.isEmpty else { return [] }
        do {
            return [Request(jobs: buildable, adapter: adapter, http: try adapter.request(for: buildable.map(\.envelope)))]
        } catch {
            for job in buildable { failed(job, error) }
            return []
        }
    }

    /// One answer per job of a request: the adapter's, with its declared follow-ups (providers' dates,
    /// such as Retry-After as an HTTP date, are in real time), marked when the connection ended under it.
    func answers(_ request: Request, _ result: Result<HTTPResponse, TransportError>) -> [ClassifiedResponse] {
        let ended: Bool
        if case .failure(let error) = result { ended = error.isConnectionEnd } else { ended = false }
        return request.adapter.answers(result, envelopes: request.jobs.map(\.envelope), now: clock.wire()).map { answer in
            var a = answer
            a.connectionEnded = ended
            return a
        }
    }

    /// Logs what an answer taught the gate, and counts it in the summary. A refusal of herald's own
    /// credentials or configuration makes the pass degraded (exit 4): every message to that provider
    /// would be refused until an operator fixes the setting the answer names.
    func report(_ event: SendGate.Event) {
        switch event {
        case .throttled(let provider, let until):
            logger.warning("provider asked to slow down; not calling it again this pass before the time it gave",
                           metadata: ["provider": .string(provider.rawValue), "until": .string(ISO8601.string(until))])
        case .breakerOpened(let provider, let answers, let failures):
            summary.breakerOpen.insert(provider)
            logger.error("circuit breaker open: this provider's requests mostly fail; it is not called again this pass",
                         metadata: ["provider": .string(provider.rawValue), "answers": "\(answers)", "failures": "\(failures)"])
        case .refused(let provider, let code, let message):
            // The code and what to look at; the provider's own text (which could quote anything) goes to
            // the rows' last_error and to debug.
            let code = code ?? "no code"
            summary.breakerOpen.insert(provider)
            summary.credentialsRefused.insert(provider)
            summary.phaseErrors[.phase(.deliver)] = "\(provider.rawValue) refused herald's credentials or configuration (\(code)); its rows wait with no attempt charged: their last_error says what to fix"
            logger.error("a provider refused herald's credentials or configuration; it is not called again this pass and its rows wait, no attempt charged",
                         metadata: ["provider": .string(provider.rawValue), "code": .string(code)])
            logger.debug("the provider's refusal", metadata: ["provider": .string(provider.rawValue), "error": .string(message)])
        }
    }
}
