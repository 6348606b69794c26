import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP

extension Sender {
    /// The requests for a round's jobs, per provider in a fixed order: a provider the gate holds back
    /// (throttled, breaker open) or that cannot be prepared (access tokens) sends nothing; the others'
    /// jobs go in requests of at most `maxBatch` envelopes (fewer when the provider's quota is small:
    /// `Pacer.largestRequest`).
    func build(_ jobs: [Job], done: (Job, AnswerPolicy.Outcome) -> Void) -> [Request] {
        var requests: [Request] = []
        for (provider, jobs) in Dictionary(grouping: jobs, by: \.adapter.provider).sorted(by: { $0.key < $1.key }) {
            let adapter = jobs[0].adapter
            if case .hold(let until, let reason) = policy.gate.admit(provider, now: clock.now()) {
                for job in jobs { done(job, .notSent(until: until, reason: reason)) }
                continue
            }
            do {
                try adapter.prepare(now: clock.wire(), transport: transport)  // access tokens live in real time
            } catch {
                logger.error("could not prepare a provider; its sends are retried later",
                             metadata: ["provider": .string(provider.rawValue), "error": .string("\(error)")])
                for job in jobs {
                    done(job, .notMade(ClassifiedResponse(.retry(after: nil, code: "prepare_failed", message: "\(error)"))))
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
    func requestsFor(_ chunk: [Job], adapter: any ProviderAdapter, done: (Job, AnswerPolicy.Outcome) -> Void) -> [Request] {
        func failed(_ job: Job, _ error: any Error) {
            done(job, .notMade(ClassifiedResponse(
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
}
