import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The `patterns` phase (seed 000, DESIGN §5): for each user with metrics newer than their last
/// evaluation, evaluate every configured metric, upsert or resolve their episodes, and — unless in
/// shadow mode — tell the family's admins when an episode's level rises.
///
/// Candidates come from the metrics updated since the last complete scan (`pattern_scan_state`),
/// found through the updated_at index. They are taken in batches with SKIP LOCKED on
/// `pattern_evaluations`, so concurrent passes split the work; each batch is one transaction, so a
/// user's episodes, notifications and raised levels commit together. Dedupe keys (episode + level +
/// recipient + channel) make a repeat a no-op. The metrics are read in segments of one or more
/// batches, each one streamed statement, and evaluated where they are read: while one segment's
/// batches are planned and written, the next ones are read and evaluated on two more connections,
/// taking turns (`MetricPrefetcher`).
struct PatternPhase {
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
    }

    /// The configured thresholds whose metric is a numeric column of wearable_daily_metrics.
    func thresholds() throws -> [PatternThreshold] {
        // The catalog itself, not information_schema's views: those cost a pass with nothing to do
        // 2–4 ms on their own.
        let columns = Set(try db.query("""
            select a.attname::text as column_name from pg_attribute a
             where a.attrelid = to_regclass('wearable_daily_metrics') and a.attnum > 0 and not a.attisdropped
               and a.atttypid = any(array['numeric', 'integer', 'bigint', 'smallint', 'real', 'double precision']::regtype[])
            """).compactMap { $0["column_name"].string })
        var out: [PatternThreshold] = []
        for row in try db.query("""
            select metric_type, pattern_type, deviation_percent::float8 as t, min_abs_change::float8 as m
              from pattern_thresholds where version = \(thresholdsVersion) and enabled order by metric_type, pattern_type
            """) {
            guard let metric = row["metric_type"].string, let pattern = row["pattern_type"].string.flatMap(PatternType.init) else { continue }
            guard columns.contains(metric) else {
                logger.warning("pattern threshold names a metric that is not a numeric column of wearable_daily_metrics; skipped",
                               metadata: ["metric": .string(metric), "version": .string(thresholdsVersion)])
                continue
            }
            out.append(PatternThreshold(metric: metric, pattern: pattern, deviationPercent: row["t"].double ?? 20,
                                        minAbsChange: row["m"].double ?? 0))
        }
        return out
    }

    /// Throws `UnknownThresholdsVersion` when no row of `pattern_thresholds`, enabled or not, has
    /// `thresholdsVersion`: a typo in HERALD_THRESHOLDS_VERSION would otherwise stop every pattern
    /// alert with a mere warning. (A version whose rows are all disabled is a choice, not a slip.)
    func checkVersionExists() throws {
        guard try db.query("select 1 as one from pattern_thresholds where version = \(thresholdsVersion) limit 1").isEmpty
        else { return }
        let known = try db.query("select distinct version from pattern_thresholds order by version limit 11")
            .compactMap { $0["version"].string }
        throw UnknownThresholdsVersion(version: thresholdsVersion, known: known)
    }

    func run() throws -> Result {
        var result = Result()
        let thresholds = try thresholds()
        guard !thresholds.isEmpty else {
            try checkVersionExists()
            logger.warning("no pattern thresholds configured", metadata: ["version": .string(thresholdsVersion)])
            return result
        }
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
        // Concurrent passes start at different places, so they rarely wait on each other's locks.
        if !candidates.isEmpty {
            let offset = Int.random(in: 0..<candidates.count)
            candidates = Array(candidates[offset...] + candidates[..<offset])
        }

        let metrics = Self.metrics(of: thresholds)
        let latest = marks.mapValues(\.latest)
        let settled = scanStart.addingTimeInterval(-Self.lateCommitMargin)
        let chunks = stride(from: 0, to: candidates.count, by: batchSize).map {
            Array(candidates[$0..<min($0 + batchSize, candidates.count)])
        }
        // The chunks' metrics are read in segments, each one streamed statement, by `readers`
        // connections of their own taking turns: while this one plans and writes a segment's chunks,
        // the next segments are read and evaluated beside it. One reader alone was the pass's path (its
        // server scanning while its thread parsed, then evaluated, the next read waiting for both); two
        // keep both cores busy. They share the windows' memory budget, so the pass's peak stays that of
        // one reader. Nothing overlaps the first read nor the last writes: both are of one chunk.
        let segments = Self.readSegments(chunks.count, chunkSize: batchSize,
                                         readUsers: readUsers ?? max(1, MetricWindows.maxUsers(metrics: metrics.count) / max(1, readers)))
        var ahead: [MetricPrefetcher] = []
        if segments.count > 1, let readerURL {
            ahead = (0..<min(max(1, readers), segments.count)).map {
                MetricPrefetcher(url: readerURL, applicationName: "herald \(passId) (metrics \($0 + 1))")
            }
        }
        defer { ahead.forEach { $0.close() } }
        func users(of segment: Range<Int>) -> [UUID] { chunks[segment].flatMap { $0 } }
        /// Segment k is read by reader k mod n, once that reader's previous segment was taken.
        func startRead(_ k: Int) {
            guard !ahead.isEmpty, k < segments.count else { return }
            ahead[k % ahead.count].start(users: users(of: segments[k]), latest: latest, thresholds: thresholds)
        }
        for k in ahead.indices { startRead(k) }

        // Users seen for the first time get their row, while the first segments are read.
        if !firstSeen.isEmpty {
            try db.execute("""
                insert into pattern_evaluations (user_id, evaluated_through)
                select u, '-infinity'::timestamptz from unnest(\(firstSeen)::uuid[]) as u
                on conflict (user_id) do nothing
                """)
        }

        var skipped: [UUID] = []
        for (index, segment) in segments.enumerated() {
            if StopSignal.requested { return result }
            var evaluations: PatternEvaluations?
            if !ahead.isEmpty {
                do {
                    evaluations = try ahead[index % ahead.count].take()
                    startRead(index + ahead.count)
                } catch {
                    logger.warning("a connection for metric reads failed; reading on the pass's connection",
                                   metadata: ["error": .string("\(error)")])
                    ahead.forEach { $0.close() }
                    ahead = []
                }
            }
            for chunk in chunks[segment] {
                if StopSignal.requested { return result }
                let r = try db.transaction { db in
                    try evaluate(chunk, evaluations: evaluations, metrics: metrics, marks: marks, latest: latest,
                                 thresholds: thresholds, settled: settled, db: db)
                }
                result.users += r.users
                result.failedUsers += r.failedUsers
                result.episodesOpened += r.episodesOpened
                result.episodesResolved += r.episodesResolved
                result.enqueued += r.enqueued
                skipped += r.skipped
            }
        }
        try advanceScan(to: scanStart, unlessPending: skipped, marks: marks, settled: settled)
        return result
    }

    /// The metrics the thresholds read, each once, sorted.
    static func metrics(of thresholds: [PatternThreshold]) -> [String] {
        Array(Set(thresholds.map(\.metric))).sorted()
    }

    /// The chunks of each metric read, as ranges of chunk indices: the first alone, then as many as
    /// `readUsers` users allow (at least one).
    ///
    ///     PatternPhase.segments(10, chunkSize: 1000, readUsers: 3276)   // [0..<1, 1..<4, 4..<7, 7..<10]
    static func segments(_ chunks: Int, chunkSize: Int, readUsers: Int) -> [Range<Int>] {
        guard chunks > 0 else { return [] }
        let per = max(1, readUsers / max(1, chunkSize))
        return [0..<1] + stride(from: 1, to: chunks, by: per).map { $0..<min($0 + per, chunks) }
    }

    /// The reads in the order the phase makes them: `segments`, with the last chunk read on its own
    /// too. The pass starts writing after a read of one chunk and ends with the writes of one chunk;
    /// in between, each segment's writes overlap the next one's read.
    ///
    ///     PatternPhase.readSegments(10, chunkSize: 1000, readUsers: 3276)   // [0..<1, 1..<4, 4..<7, 7..<9, 9..<10]
    static func readSegments(_ chunks: Int, chunkSize: Int, readUsers: Int) -> [Range<Int>] {
        var out = segments(chunks, chunkSize: chunkSize, readUsers: readUsers)
        if let last = out.last, last.count > 1 {
            out[out.count - 1] = last.lowerBound..<last.upperBound - 1
            out.append(last.upperBound - 1..<last.upperBound)
        }
        return out
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
    /// statement of their own.
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

    /// Moves the watermark to `scanStart` once every candidate has been evaluated, by this pass or,
    /// for those another pass held locked, by that one (already committed). Otherwise it stays, and
    /// the next pass looks at the same rows again.
    func advanceScan(to scanStart: Date, unlessPending skipped: [UUID],
                     marks: [UUID: (latest: LocalDate, newest: Date)], settled: Date) throws {
        if !skipped.isEmpty {
            for row in try db.query("""
                select user_id, evaluated_through from pattern_evaluations where user_id = any(\(skipped)::uuid[])
                """) {
                guard let user = row[0].uuid, let through = row[1].date, let newest = marks[user]?.newest,
                      through >= min(newest, settled) else { return }
            }
        }
        try db.execute("""
            update pattern_scan_state set scanned_through = greatest(scanned_through, \(scanStart)), updated_at = now()
            """)
    }

    /// One batch of users, inside one transaction. `evaluations`, read before the lock, must hold
    /// every user of `chunk` (they are read after the candidates, so they are at least as new as
    /// `marks`); nil reads and evaluates them here.
    /// `settled`: updates before it have surely committed; a user's `evaluated_through` goes no
    /// later, so one whose newest update is more recent is evaluated once more by a later pass.
    func evaluate(_ chunk: [UUID], evaluations: PatternEvaluations?, metrics: [String],
                  marks: [UUID: (latest: LocalDate, newest: Date)], latest: [UUID: LocalDate],
                  thresholds: [PatternThreshold], settled: Date, db: PGConnection) throws -> Result {
        var result = Result()
        let locked = try db.query("""
            select user_id, evaluated_through from pattern_evaluations
             where user_id = any(\(chunk)::uuid[]) for update skip locked
            """)
        var evaluatedThrough: [UUID: Date] = [:]
        for row in locked { if let id = row["user_id"].uuid { evaluatedThrough[id] = row["evaluated_through"].date ?? .distantPast } }
        result.skipped = chunk.filter { evaluatedThrough[$0] == nil }
        guard !evaluatedThrough.isEmpty else { return result }
        let users = Array(evaluatedThrough.keys)
        guard let earliestLatest = users.compactMap({ latest[$0] }).min() else { return result }
        let days = PatternEvaluator.windowDays

        // Another pass may have evaluated these users between our candidate list and our lock.
        let due = users.filter { u in (marks[u]?.newest ?? .distantPast) > (evaluatedThrough[u] ?? .distantPast) }
        guard !due.isEmpty else { return result }
        result.users = due.count
        let evaluations = try evaluations ?? PatternEvaluations(
            MetricWindows.read(users: due, latest: latest, metrics: metrics, db: db), latest: latest, thresholds: thresholds)

        // Their episodes, and what today's values make of them, decided in memory.
        let store = EpisodeStore(db: db, now: now, thresholdsVersion: thresholdsVersion)
        let stored = try store.load(users: due, since: earliestLatest.adding(days: -days))
        var resolve: [UUID] = []
        var writes: [EpisodeStore.Write] = []
        if !evaluations.poisoned.isEmpty {
            // One user's corrupt row fails that user's evaluation, not the phase. They count as
            // evaluated through their newest row, so a corrected row (a newer update) is evaluated again.
            result.failedUsers = evaluations.poisoned.count
            logger.warning("metrics that are not finite numbers (NaN, infinite, or beyond float8); those users were not evaluated",
                           metadata: ["users": .stringConvertible(evaluations.poisoned.count),
                                      "examples": .string(evaluations.poisoned.prefix(3).map(\.lowercased).joined(separator: ","))])
        }
        for user in due where !evaluations.poisoned.contains(user) {
            guard let l = latest[user], let evaluated = evaluations[user] else { continue }
            for (t, evaluation) in zip(thresholds, evaluated) {
                let episodes = stored[user]?[t.metric + "/" + t.pattern.rawValue] ?? EpisodeStore.Stored()
                let plan = Episodes.plan(active: episodes.active, resolved: episodes.resolved, evaluation: evaluation)
                resolve += plan.resolve
                guard let e = plan.upsert else { continue }
                if plan.continuing == nil { result.episodesOpened += 1 }
                // In shadow mode nothing is told, so no level counts as notified.
                writes.append(EpisodeStore.Write(user: user, threshold: t, evaluation: e, latest: l,
                                                 notifiedLevel: shadowMode ? nil : plan.notifyLevel))
            }
        }
        result.episodesResolved = resolve.count
        try store.resolve(resolve)
        let ids = try store.upsert(writes)
        let notices = writes.compactMap { w -> (episode: UUID, member: UUID, level: Int, payload: [String: JSONValue])? in
            guard let level = w.notifiedLevel, let id = ids[w.key] else { return nil }
            return (id, w.user, level, Self.alertPayload(w))
        }
        if !notices.isEmpty {
            result.enqueued = try notifyAdmins(notices, db: db)
        }

        var evaluated: [UUID] = [], through: [Date] = []
        for u in due {
            guard let mark = marks[u] else { continue }
            evaluated.append(u)
            through.append(min(mark.newest, settled))
        }
        try db.execute("""
            update pattern_evaluations e set evaluated_through = x.through, evaluated_at = now(),
                   thresholds_version = \(thresholdsVersion)
              from unnest(\(evaluated)::uuid[], \(through)::timestamptz[]) as x(user_id, through)
             where e.user_id = x.user_id
            """)
        return result
    }

    /// What the app gets with an alert: metric, pattern, level, severity, and day L's baseline,
    /// recent value and deviation (rounded to hundredths). The lock screen shows none of it by default.
    static func alertPayload(_ w: EpisodeStore.Write) -> [String: JSONValue] {
        let level = w.notifiedLevel ?? w.evaluation.level
        var payload: [String: JSONValue] = [
            "metric_type": .string(w.threshold.metric),
            "pattern_type": .string(w.threshold.pattern.rawValue),
            "level": .number(Double(level)),
            "severity": .string(Severity(level: level).rawValue),
            "active_since": .string(w.evaluation.activeSince.description),
        ]
        for (key, v) in [("baseline_value", w.evaluation.baseline), ("recent_value", w.evaluation.recent),
                         ("deviation_percent", w.evaluation.deviationPercent)] {
            payload[key] = .number((v * 100).rounded() / 100)
        }
        return payload
    }

    /// One row per family admin (other than the member) per channel the admin has enabled.
    func notifyAdmins(_ episodes: [(episode: UUID, member: UUID, level: Int, payload: [String: JSONValue])],
                      db: PGConnection) throws -> Int {
        let members = Array(Set(episodes.map(\.member)))
        var admins: [UUID: [(admin: UUID, channels: [Channel])]] = [:]
        for row in try db.query("""
            select distinct fm.user_id as member, a.user_id as admin, p.notify_push, p.notify_in_app,
                   p.champion_notify_email, p.champion_notify_sms, p.notify_whatsapp
              from family_members fm
              join family_members a on a.family_id = fm.family_id and a.role = 'admin' and a.user_id <> fm.user_id
              join user_profiles p on p.user_id = a.user_id
             where fm.user_id = any(\(members)::uuid[])
            """) {
            guard let member = row["member"].uuid, let admin = row["admin"].uuid else { continue }
            var channels: [Channel] = []
            if row["notify_push"].bool == true { channels.append(.push) }
            if row["notify_in_app"].bool == true { channels.append(.inApp) }
            if row["champion_notify_email"].bool == true { channels.append(.email) }
            if row["champion_notify_sms"].bool == true { channels.append(.sms) }
            if row["notify_whatsapp"].bool == true { channels.append(.whatsapp) }
            admins[member, default: []].append((admin, channels))
        }
        var rows: [NewNotification] = []
        for e in episodes {
            for (admin, channels) in admins[e.member] ?? [] {
                for channel in channels {
                    var payload = e.payload
                    payload["member_user_id"] = .string(e.member.lowercased)
                    rows.append(NewNotification(
                        recipient: admin, member: e.member, alertStateId: e.episode, channel: channel.rawValue,
                        kind: .patternAlert, severity: Severity(level: e.level),
                        priority: Severity(level: e.level) == .critical ? .high : .normal,
                        payload: .object(payload), scheduledAt: now,
                        dedupeKey: "alert:\(e.episode.lowercased):\(e.level):\(admin.lowercased):\(channel.rawValue)",
                        reason: "pattern_level_\(e.level)",
                        // One notification per admin and level, whatever the number of channels.
                        group: "alert:\(e.episode.lowercased):\(e.level):\(admin.lowercased)"))
                }
            }
        }
        return try Enqueuer.insert(rows, db: db, passId: passId).count
    }
}

/// HERALD_THRESHOLDS_VERSION names a version no row of `pattern_thresholds` has: the patterns phase
/// fails (`phase_errors`, exit 4) and delivery goes on.
struct UnknownThresholdsVersion: Error, CustomStringConvertible {
    let version: String
    /// The versions the table has (at most 11 were read: 10 are named).
    let known: [String]

    var description: String {
        let names = known.prefix(10).map { "'\($0.prefix(40))'" }.joined(separator: ", ")
        let more = known.count > 10 ? ", …" : ""
        return "HERALD_THRESHOLDS_VERSION is '\(version.prefix(40))', which no row of pattern_thresholds has "
            + (known.isEmpty ? "(the table is empty)" : "(its versions: \(names)\(more))")
            + ": no pattern is evaluated until it names one of them"
    }
}
