import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The `patterns` phase (pattern alerts from wearable metrics): for each user with metrics newer than
/// their last evaluation, evaluate every configured metric, upsert or resolve their episodes, and —
/// unless in shadow mode — tell the family's admins when an episode's level rises.
///
/// Candidates come from the metrics updated since the last complete scan (`pattern_scan_state`),
/// found through the updated_at index (`PatternGenerator+Scan`). They are taken in batches with SKIP
/// LOCKED on `pattern_evaluations`, so concurrent passes split the work; each batch is one
/// transaction, so a user's episodes, notifications and raised levels commit together
/// (`PatternGenerator+Evaluate`, `PatternGenerator+Alerts`). Dedupe keys (episode + level + recipient +
/// channel) make a repeat a no-op. The metrics are read in segments of one or more batches, each one
/// streamed statement, and evaluated where they are read: while one segment's batches are planned and
/// written, the next ones are read and evaluated on two more connections, taking turns
/// (`PatternGenerator+ReadAhead`, `MetricPrefetcher`).
///
///     var phase = PatternGenerator(db: db, passId: passId, now: now, logger: logger)
///     phase.readerURL = databaseURL
///     let result = try phase.run()   // result.users, result.episodesOpened, result.enqueued, …
struct PatternGenerator {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger
    var shadowMode = false
    var thresholdsVersion = "v1"
    var batchSize = 1000
    /// Where connections of their own read and evaluate the next segments' metrics while this one
    /// plans and writes the current segment; nil reads each chunk on `db`, in turn.
    var readerURL: String?
    /// How many such connections take turns (at `readerURL`).
    var readers = 2
    /// The most users whose metrics one statement reads; nil: `MetricWindows.maxUsers` shared by the readers.
    var readUsers: Int?

    struct Result {
        var users = 0
        var episodesOpened = 0
        var episodesResolved = 0
        var enqueued = 0
        /// Users whose metrics held a value no rule can use: not evaluated.
        var failedUsers = 0
        /// Candidates another pass held locked (SKIP LOCKED): not evaluated here.
        var skipped: [UUID] = []

        /// Adds the counts of one batch (not its `skipped`).
        mutating func add(_ batch: Result) {
            users += batch.users
            failedUsers += batch.failedUsers
            episodesOpened += batch.episodesOpened
            episodesResolved += batch.episodesResolved
            enqueued += batch.enqueued
        }
    }

    func run() throws -> Result {
        var result = Result()
        let thresholds = try thresholds()
        guard !thresholds.isEmpty else {
            try checkVersionExists()
            logger.warning("no pattern thresholds configured", metadata: ["version": .string(thresholdsVersion)])
            return result
        }
        let scan = try startScan(thresholds: thresholds)
        let chunks = stride(from: 0, to: scan.users.count, by: batchSize).map {
            Array(scan.users[$0..<min($0 + batchSize, scan.users.count)])
        }
        let segments = readSegments(chunks: chunks.count, metrics: scan.metrics.count)
        var ahead = ReadAhead(self, segments: segments, chunks: chunks, scan: scan)
        defer { ahead.close() }
        ahead.startFirst()
        // Users seen for the first time get their row, while the first segments are read.
        try addFirstSeen(scan.firstSeen)

        var skipped: [UUID] = []
        for (index, segment) in segments.enumerated() {
            if StopSignal.requested { return result }
            let evaluations = ahead.take(index)
            for chunk in chunks[segment] {
                if StopSignal.requested { return result }
                let batch = try db.transaction { db in
                    try evaluate(chunk, evaluations: evaluations, scan: scan, db: db)
                }
                result.add(batch)
                skipped += batch.skipped
            }
        }
        try advanceScan(scan, unlessPending: skipped)
        return result
    }

    /// The segments the chunks' metrics are read in (`readSegments`), each one streamed statement, by
    /// `readers` connections of their own taking turns: while this one plans and writes a segment's
    /// chunks, the next segments are read and evaluated beside it. One reader alone was the pass's path
    /// (its server scanning while its thread parsed, then evaluated, the next read waiting for both);
    /// two keep both cores busy. They share the windows' memory budget, so the pass's peak stays that
    /// of one reader. Nothing overlaps the first read nor the last writes: both are of one chunk.
    func readSegments(chunks: Int, metrics: Int) -> [Range<Int>] {
        Self.readSegments(chunks, chunkSize: batchSize,
                          readUsers: readUsers ?? max(1, MetricWindows.maxUsers(metrics: metrics) / max(1, readers)))
    }
}
