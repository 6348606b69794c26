import Foundation
import HeraldCore
import HeraldPostgres

/// Reads a coming segment's metric windows (`MetricWindows.read`, streamed) and evaluates them
/// (`PatternEvaluations`) on a connection and a thread of its own, while the pattern phase plans and
/// writes the current segment on the pass's connection, so the two overlap; the phase keeps two,
/// taking turns. The connection is opened (with the pass's timeouts, so a read that hangs ends), used
/// and closed on that thread only.
///
///     let reader = MetricPrefetcher(url: url, applicationName: "herald p-1 (metrics)")
///     defer { reader.close() }
///     reader.start(users: next, latest: latest, thresholds: thresholds)
///     … evaluate and write the current segment …
///     let evaluations = try reader.take()     // waits for the read; its error if it failed
final class MetricPrefetcher: @unchecked Sendable {  // every var is read and written under `condition`
    private struct Request: Sendable {
        var users: [UUID]
        var latest: [UUID: LocalDate]
        var thresholds: [PatternThreshold]
    }

    private let condition = NSCondition()
    private var request: Request?
    private var outcome: Result<PatternEvaluations, any Error>?
    private var closed = false

    init(url: String, applicationName: String) {
        let thread = Thread { [self] in run(url: url, applicationName: applicationName) }
        thread.name = "herald metric reader"
        thread.start()
    }

    /// Starts reading `users`' windows; the previous result must have been taken.
    func start(users: [UUID], latest: [UUID: LocalDate], thresholds: [PatternThreshold]) {
        condition.withLock {
            precondition(request == nil && outcome == nil, "MetricPrefetcher: take() the previous read first")
            request = Request(users: users, latest: latest, thresholds: thresholds)
            condition.broadcast()
        }
    }

    /// The evaluations of the last `start`, once read and evaluated.
    func take() throws -> PatternEvaluations {
        try condition.withLock {
            while outcome == nil { condition.wait() }
            defer { outcome = nil }
            return try outcome!.get()
        }
    }

    /// Ends the thread and closes its connection; a read in progress finishes first.
    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    private func run(url: String, applicationName: String) {
        var db: PGConnection?
        defer { db?.close() }
        while true {
            let next: Request? = condition.withLock {
                while request == nil && !closed { condition.wait() }
                return request
            }
            guard let next else { return }  // closed
            let result = Result<PatternEvaluations, any Error> {
                if db == nil { db = try Runner.connect(url, applicationName: applicationName) }
                let windows = try MetricWindows.read(users: next.users, latest: next.latest,
                                                     metrics: PatternGenerator.metrics(of: next.thresholds), db: db!)
                return PatternEvaluations(windows, latest: next.latest, thresholds: next.thresholds)
            }
            if case .failure = result { db?.close(); db = nil }
            condition.withLock {
                request = nil
                outcome = result
                condition.broadcast()
            }
        }
    }
}
