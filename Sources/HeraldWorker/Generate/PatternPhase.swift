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
/// recipient + channel) make a repeat a no-op. While a batch is evaluated and written, the next
/// batch's metrics are read on a second connection (`MetricPrefetcher`).
struct PatternPhase {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger
    var shadowMode = false
    var thresholdsVersion = "v1"
    var batchSize = 1000
    /// Where a second connection reads the next chunk's metrics while this one evaluates and writes
    /// the current chunk; nil reads each chunk on `db`, in turn.
    var readerURL: String?

    struct Result {
        var users = 0
        var episodesOpened = 0
        var episodesResolved = 0
        var enqueued = 0
        /// Candidates another pass held locked (SKIP LOCKED): not evaluated here.
        var skipped: [UUID] = []
    }

    /// The configured thresholds whose metric is a numeric column of wearable_daily_metrics.
    func thresholds() throws -> [PatternThreshold] {
        let columns = Set(try db.query("""
            select column_name from information_schema.columns
             where table_name = 'wearable_daily_metrics' and table_schema = current_schema()
               and data_type in ('numeric', 'integer', 'bigint', 'smallint', 'real', 'double precision')
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

    func run() throws -> Result {
        var result = Result()
        let thresholds = try thresholds()
        guard !thresholds.isEmpty else {
            logger.warning("no pattern thresholds configured", metadata: ["version": .string(thresholdsVersion)])
            return result
        }
        // Where the last complete scan got to, and the database's clock now (the clock of updated_at).
        guard let mark = try db.query("select scanned_through, now() as now from pattern_scan_state").first,
              let scannedThrough = mark["scanned_through"].date, let scanStart = mark["now"].date else {
            throw PGError(message: "pattern_scan_state has no row: run herald migrate", isConnectionFailure: false)
        }
        // Users with metrics updated since then whose newest update is newer than their last
        // evaluation, with that update and their latest metric date (L); users seen for the first
        // time get their row here. The updated_at index keeps this proportional to what changed.
        var marks: [UUID: (latest: LocalDate, newest: Date)] = [:]
        var candidates: [UUID] = []
        for row in try db.query("""
            with changed as (
              select user_id, max(updated_at) as newest from wearable_daily_metrics
               where updated_at > \(scannedThrough.addingTimeInterval(-Self.rescanMargin))
               group by user_id
            ), first_seen as (
              insert into pattern_evaluations (user_id, evaluated_through)
              select c.user_id, '-infinity'::timestamptz from changed c
               where not exists (select 1 from pattern_evaluations e where e.user_id = c.user_id)
              on conflict (user_id) do nothing
            )
            select c.user_id, l.latest::text as latest, c.newest from changed c
              left join pattern_evaluations e on e.user_id = c.user_id
              cross join lateral (select max(metric_date) as latest from wearable_daily_metrics w
                                   where w.user_id = c.user_id) l
             where e.user_id is null or c.newest > e.evaluated_through
            """) {
            guard let user = row[0].uuid, let latest = row[1].string.flatMap(LocalDate.init), let newest = row[2].date else { continue }
            marks[user] = (latest, newest)
            candidates.append(user)
        }
        // Concurrent passes start at different places, so they rarely wait on each other's locks.
        if !candidates.isEmpty {
            let offset = Int.random(in: 0..<candidates.count)
            candidates = Array(candidates[offset...] + candidates[..<offset])
        }

        let metrics = Array(Set(thresholds.map(\.metric))).sorted()
        let latest = marks.mapValues(\.latest)
        let settled = scanStart.addingTimeInterval(-Self.lateCommitMargin)
        let chunks = stride(from: 0, to: candidates.count, by: batchSize).map {
            Array(candidates[$0..<min($0 + batchSize, candidates.count)])
        }
        // With more than one chunk, the next one's metrics are read while this one is evaluated.
        var reader = chunks.count > 1 ? readerURL.map { MetricPrefetcher(url: $0, applicationName: "herald \(passId) (metrics)") } : nil
        defer { reader?.close() }
        reader?.start(users: chunks[0], latest: latest, metrics: metrics)

        var skipped: [UUID] = []
        for (index, chunk) in chunks.enumerated() {
            if StopSignal.requested { return result }
            var windows: MetricWindows?
            if let prefetcher = reader {
                do {
                    windows = try prefetcher.take()
                    if index + 1 < chunks.count { prefetcher.start(users: chunks[index + 1], latest: latest, metrics: metrics) }
                } catch {
                    logger.warning("the second connection for metric reads failed; reading on the pass's connection",
                                   metadata: ["error": .string("\(error)")])
                    prefetcher.close()
                    reader = nil
                }
            }
            let r = try db.transaction { db in
                try evaluate(chunk, windows: windows, metrics: metrics, marks: marks, latest: latest,
                             thresholds: thresholds, settled: settled, db: db)
            }
            result.users += r.users
            result.episodesOpened += r.episodesOpened
            result.episodesResolved += r.episodesResolved
            result.enqueued += r.enqueued
            skipped += r.skipped
        }
        try advanceScan(to: scanStart, unlessPending: skipped, marks: marks, settled: settled)
        return result
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

    /// One batch of users, inside one transaction. `windows`, read before the lock, must hold every
    /// user of `chunk` (they are read after the candidates, so they are at least as new as `marks`);
    /// nil reads them here.
    /// `settled`: updates before it have surely committed; a user's `evaluated_through` goes no
    /// later, so one whose newest update is more recent is evaluated once more by a later pass.
    func evaluate(_ chunk: [UUID], windows: MetricWindows?, metrics: [String],
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
        let windows = try windows ?? MetricWindows.read(users: due, latest: latest, metrics: metrics, db: db)

        // Their active episodes, and the resolved ones a run inside the window could start on again.
        // These users are locked, so this is the whole truth about them until we commit.
        var active: [UUID: [String: [StoredEpisode]]] = [:]
        var resolved: [UUID: [String: [StoredEpisode]]] = [:]
        for row in try db.query("""
            select id, user_id, metric_type, pattern_type, active_since::text as since, current_level,
                   last_notified_level, episode_status = 'active' as active
              from pattern_alert_state
             where user_id = any(\(due)::uuid[])
               and (episode_status = 'active'
                    or active_since > \(earliestLatest.adding(days: -days).description)::date)
            """) {
            guard let id = row["id"].uuid, let user = row["user_id"].uuid,
                  let since = row["since"].string.flatMap(LocalDate.init) else { continue }
            let key = (row["metric_type"].string ?? "") + "/" + (row["pattern_type"].string ?? "")
            let episode = StoredEpisode(id: id, activeSince: since, level: row["current_level"].int ?? 3,
                                        lastNotifiedLevel: row["last_notified_level"].int ?? 0)
            if row["active"].bool == true {
                active[user, default: [:]][key, default: []].append(episode)
            } else {
                resolved[user, default: [:]][key, default: []].append(episode)
            }
        }

        // Decide everything in memory.
        var resolve: [UUID] = []
        var upserts: [JSONValue] = []
        /// The episodes to tell the admins about, by "user/metric/pattern/active_since".
        var notices: [String: (level: Int, evaluation: EpisodeEvaluation)] = [:]
        for user in due {
            guard let l = latest[user] else { continue }
            for t in thresholds {
                let key = t.metric + "/" + t.pattern.rawValue
                guard let window = windows[user, t.metric] else { continue }
                let evaluation = PatternEvaluator.evaluate(window: window, latest: l, threshold: t)
                let plan = Episodes.plan(active: active[user]?[key] ?? [], resolved: resolved[user]?[key] ?? [],
                                         evaluation: evaluation)
                resolve += plan.resolve
                guard let e = plan.upsert else { continue }
                if plan.continuing == nil { result.episodesOpened += 1 }
                // In shadow mode nothing is told, so no level counts as notified.
                let notify = shadowMode ? nil : plan.notifyLevel
                if let level = notify {
                    notices[[user.lowercased, t.metric, t.pattern.rawValue, e.activeSince.description]
                        .joined(separator: "/")] = (level, e)
                }
                upserts.append([
                    "user_id": .string(user.lowercased), "metric_type": .string(t.metric),
                    "pattern_type": .string(t.pattern.rawValue), "active_since": .string(e.activeSince.description),
                    "current_level": .number(Double(e.level)), "severity": .string(e.severity.rawValue),
                    "baseline_value": .number(e.baseline), "recent_value": .number(e.recent),
                    "deviation_percent": .number(e.deviationPercent), "last_evaluated_date": .string(l.description),
                    "notified_level": .number(Double(notify ?? 0)),
                ])
            }
        }
        result.episodesResolved = resolve.count

        if !resolve.isEmpty {
            try db.execute("""
                update pattern_alert_state set episode_status = 'resolved', resolved_at = \(now), updated_at = now()
                 where id = any(\(resolve)::uuid[]) and episode_status = 'active'
                """)
        }
        var toNotify: [(episode: UUID, member: UUID, level: Int, severity: Severity, payload: [String: JSONValue])] = []
        if !upserts.isEmpty {
            // One statement writes the episodes and the levels about to be notified; the rows to notify
            // come back with their ids (the queue rows refer to them), in the same transaction.
            for row in try db.query("""
                insert into pattern_alert_state as s (user_id, metric_type, pattern_type, episode_status, active_since,
                    current_level, severity, baseline_value, recent_value, deviation_percent, last_evaluated_date,
                    thresholds_version, last_notified_level)
                select user_id, metric_type, pattern_type, 'active', active_since, current_level, severity,
                       baseline_value, recent_value, deviation_percent, last_evaluated_date, \(thresholdsVersion),
                       notified_level
                  from jsonb_to_recordset(\(JSONValue.array(upserts).jsonText)::jsonb) as x(
                    user_id uuid, metric_type text, pattern_type text, active_since date, current_level int,
                    severity text, baseline_value numeric, recent_value numeric, deviation_percent numeric,
                    last_evaluated_date date, notified_level int)
                on conflict (user_id, metric_type, pattern_type, active_since) do update
                  set episode_status = 'active', resolved_at = null, current_level = excluded.current_level,
                      severity = excluded.severity, baseline_value = excluded.baseline_value,
                      recent_value = excluded.recent_value, deviation_percent = excluded.deviation_percent,
                      last_evaluated_date = excluded.last_evaluated_date,
                      last_notified_level = greatest(s.last_notified_level, excluded.last_notified_level),
                      updated_at = now()
                returning s.id, s.user_id, s.metric_type, s.pattern_type, s.active_since::text as active_since
                """) where !notices.isEmpty {
                let key = [row["user_id"].string ?? "", row["metric_type"].string ?? "", row["pattern_type"].string ?? "",
                           row["active_since"].string ?? ""].joined(separator: "/")
                guard let (level, e) = notices[key], let id = row["id"].uuid, let member = row["user_id"].uuid else { continue }
                var payload: [String: JSONValue] = [
                    "metric_type": .string(row["metric_type"].string ?? ""),
                    "pattern_type": .string(row["pattern_type"].string ?? ""),
                    "level": .number(Double(level)),
                    "severity": .string(Severity(level: level).rawValue),
                    "active_since": .string(e.activeSince.description),
                ]
                for (key, v) in [("baseline_value", e.baseline), ("recent_value", e.recent),
                                 ("deviation_percent", e.deviationPercent)] {
                    payload[key] = .number((v * 100).rounded() / 100)
                }
                toNotify.append((id, member, level, Severity(level: level), payload))
            }
        }
        if !toNotify.isEmpty {
            result.enqueued = try notifyAdmins(toNotify, db: db)
        }

        let through = JSONValue.array(due.compactMap { u in
            marks[u].map { ["user_id": .string(u.lowercased), "through": .string(ISO8601.string(min($0.newest, settled)))] }
        }).jsonText
        try db.execute("""
            update pattern_evaluations e set evaluated_through = x.through, evaluated_at = now(),
                   thresholds_version = \(thresholdsVersion)
              from jsonb_to_recordset(\(through)::jsonb) as x(user_id uuid, through timestamptz)
             where e.user_id = x.user_id
            """)
        return result
    }

    /// One row per family admin (other than the member) per channel the admin has enabled.
    func notifyAdmins(_ episodes: [(episode: UUID, member: UUID, level: Int, severity: Severity, payload: [String: JSONValue])],
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
                        kind: .patternAlert, severity: e.severity, priority: e.severity == .critical ? .high : .normal,
                        payload: .object(payload), scheduledAt: now,
                        dedupeKey: "alert:\(e.episode.lowercased):\(e.level):\(admin.lowercased):\(channel.rawValue)",
                        reason: "pattern_level_\(e.level)"))
                }
            }
        }
        return try Enqueuer.insert(rows, db: db, passId: passId).count
    }
}
