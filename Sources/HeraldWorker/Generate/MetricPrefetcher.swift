import Foundation
import HeraldCore
import HeraldPostgres

/// Reads the next chunk's metric windows on a connection and a thread of its own while the pattern
/// phase evaluates and writes the current chunk on the pass's connection, so the two overlap.
/// The connection is opened, used and closed on that thread only.
///
///     let reader = MetricPrefetcher(url: url, applicationName: "herald p-1 (metrics)")
///     defer { reader.close() }
///     reader.start(users: next, latest: latest, metrics: metrics)
///     … evaluate and write the current chunk …
///     let windows = try reader.take()     // waits for the read; its error if it failed
final class MetricPrefetcher: @unchecked Sendable {  // every var is read and written under `condition`
    private struct Request: Sendable {
        var users: [UUID]
        var latest: [UUID: LocalDate]
        var metrics: [String]
    }

    private let condition = NSCondition()
    private var request: Request?
    private var outcome: Result<MetricWindows, any Error>?
    private var closed = false

    init(url: String, applicationName: String) {
        let thread = Thread { [self] in run(url: url, applicationName: applicationName) }
        thread.name = "herald metric reader"
        thread.start()
    }

    /// Starts reading `users`' windows; the previous result must have been taken.
    func start(users: [UUID], latest: [UUID: LocalDate], metrics: [String]) {
        condition.withLock {
            precondition(request == nil && outcome == nil, "MetricPrefetcher: take() the previous read first")
            request = Request(users: users, latest: latest, metrics: metrics)
            condition.broadcast()
        }
    }

    /// The windows of the last `start`, once read.
    func take() throws -> MetricWindows {
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
            let result = Result<MetricWindows, any Error> {
                if db == nil { db = try PGConnection(url, applicationName: applicationName) }
                return try MetricWindows.read(users: next.users, latest: next.latest, metrics: next.metrics, db: db!)
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
