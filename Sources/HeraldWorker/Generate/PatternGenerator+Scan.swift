import Foundation
import HeraldCore
import HeraldPostgres

/// The scan of the patterns phase: which users have metrics to evaluate since the last complete
/// scan, and the watermark (`pattern_scan_state.scanned_through`) that moves once they all are.
extension PatternGenerator {
    /// What one run works from: the thresholds, the candidates and their marks, and the times that
    /// bound the scan.
    ///
    ///     let scan = try startScan(thresholds: thresholds)
    ///     scan.users        // the candidates, in the order this pass takes them
    ///     scan.marks[user]  // (latest: their latest metric date, newest: their newest update)
    struct Scan {
        let thresholds: [PatternThreshold]
        /// The metrics the thresholds read (`metrics(of:)`).
        let metrics: [String]
        /// The candidates, rotated from a random place: concurrent passes start at different places,
        /// so they rarely wait on each other's locks.
        let users: [UUID]
        /// Candidates with no `pattern_evaluations` row yet.
        let firstSeen: [UUID]
        /// Each candidate's latest metric date (L) and newest update.
        let marks: [UUID: (latest: LocalDate, newest: Date)]
        /// Each candidate's latest metric date alone, as `MetricWindows` takes it.
        let latest: [UUID: LocalDate]
        /// The scan's start on the database's clock (the clock of updated_at): the watermark once
        /// every candidate has been evaluated.
        let start: Date
        /// Updates before it have surely committed: `lateCommitMargin` before `start`.
        let settled: Date
    }

    /// Reads where the last complete scan got to and the candidates since (`candidatesQuery`, less
    /// `rescanMargin`). Throws when `pattern_scan_state` has no row (the schema is not migrated).
    func startScan(thresholds: [PatternThreshold]) throws -> Scan {
        // Where the last complete scan got to, and the database's clock now (the clock of updated_at).
        guard let mark = try db.query("""
                select scanned_through, scanned_through = '-infinity' as first_scan, now() as now from pattern_scan_state
                """).first,
              let scannedThrough = mark["scanned_through"].date, let scanStart = mark["now"].date else {
            throw PGError(message: "pattern_scan_state has no row: run herald migrate", isConnectionFailure: false)
        }
        var marks: [UUID: (latest: LocalDate, newest: Date)] = [:]
        var candidates: [UUID] = []
        var firstSeen: [UUID] = []
        for row in try db.query(Self.candidatesQuery(since: scannedThrough.addingTimeInterval(-Self.rescanMargin),
                                                     wholeTable: mark["first_scan"].bool == true)) {
            guard let user = row[0].uuid, let latest = row[1].string.flatMap(LocalDate.init), let newest = row[2].date else { continue }
            marks[user] = (latest, newest)
            candidates.append(user)
            if row[3].bool == true { firstSeen.append(user) }
        }
        if !candidates.isEmpty {
            let offset = Int.random(in: 0..<candidates.count)
            candidates = Array(candidates[offset...] + candidates[..<offset])
        }
        return Scan(thresholds: thresholds, metrics: Self.metrics(of: thresholds), users: candidates, firstSeen: firstSeen,
                    marks: marks, latest: marks.mapValues(\.latest), start: scanStart,
                    settled: scanStart.addingTimeInterval(-Self.lateCommitMargin))
    }

    /// Users with metrics updated after `since` whose newest update is newer than their last
    /// evaluation: their id, their latest metric date (L) as text, that newest update, and whether
    /// they have no `pattern_evaluations` row yet.
    ///
    /// The updated_at index keeps this proportional to what changed: an aggregate over the rows
    /// updated since, and each such user's L from the (user_id, metric_date) index. When the pass
    /// scans for the first time (`wholeTable`), every row is read anyway, so one aggregate over the
    /// table gives both the newest update and L, without an index probe per user; it selects the same
    /// users (those with a row updated after `since`) and the same values. Either may run in parallel
    /// workers: a statement that also writes never could, so first-seen users get their row in a
    /// statement of their own (`addFirstSeen`).
    static func candidatesQuery(since: Date, wholeTable: Bool) -> SQL {
        if wholeTable {
            return """
                with users as (
                  select user_id, max(updated_at) as newest, max(metric_date) as latest
                    from wearable_daily_metrics group by user_id
                )
                select c.user_id, c.latest::text as latest, c.newest, e.user_id is null as first_seen from users c
                  left join pattern_evaluations e on e.user_id = c.user_id
                 where c.newest > \(since) and (e.user_id is null or c.newest > e.evaluated_through)
                """
        }
        return """
            with changed as (
              select user_id, max(updated_at) as newest from wearable_daily_metrics
               where updated_at > \(since)
               group by user_id
            )
            select c.user_id, l.latest::text as latest, c.newest, e.user_id is null as first_seen from changed c
              left join pattern_evaluations e on e.user_id = c.user_id
              cross join lateral (select max(metric_date) as latest from wearable_daily_metrics w
                                   where w.user_id = c.user_id) l
             where e.user_id is null or c.newest > e.evaluated_through
            """
    }

    /// How far back of the watermark a pass still looks: a writer's rows carry the time its transaction
    /// began, so rows committed after a scan may be older than it. Transactions open longer than this
    /// are not expected of an app that writes daily metrics.
    static let rescanMargin: TimeInterval = 3600

    /// How long after a scan a user whose newest row is that recent is evaluated once more: rows of
    /// a writer's transaction still open at the scan carry its start time and may commit after it.
    /// A user's `evaluated_through` is never set later than the scan less this margin.
    static let lateCommitMargin: TimeInterval = 120

    /// Gives users seen for the first time their `pattern_evaluations` row (never evaluated), which
    /// the batches then lock.
    func addFirstSeen(_ users: [UUID]) throws {
        guard !users.isEmpty else { return }
        try db.execute("""
            insert into pattern_evaluations (user_id, evaluated_through)
            select u, '-infinity'::timestamptz from unnest(\(users)::uuid[]) as u
            on conflict (user_id) do nothing
            """)
    }

    /// Moves the watermark to the scan's start once every candidate has been evaluated, by this pass
    /// or, for those another pass held locked (`skipped`), by that one (already committed). Otherwise
    /// it stays, and the next pass looks at the same rows again.
    func advanceScan(_ scan: Scan, unlessPending skipped: [UUID]) throws {
        if !skipped.isEmpty {
            for row in try db.query("""
                select user_id, evaluated_through from pattern_evaluations where user_id = any(\(skipped)::uuid[])
                """) {
                guard let user = row[0].uuid, let through = row[1].date, let newest = scan.marks[user]?.newest,
                      through >= min(newest, scan.settled) else { return }
            }
        }
        try db.execute("""
            update pattern_scan_state set scanned_through = greatest(scanned_through, \(scan.start)), updated_at = now()
            """)
    }
}
