import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The `patterns` phase (seed 000, DESIGN §5): for each user with metrics newer than their last
/// evaluation, evaluate every configured metric, upsert or resolve their episodes, and — unless in
/// shadow mode — tell the family's admins when an episode's level rises.
///
/// Users are taken in batches with SKIP LOCKED on `pattern_evaluations`, so concurrent passes split
/// the work; each batch is one transaction, so a user's episodes, notifications and raised levels
/// commit together. Dedupe keys (episode + level + recipient + channel) make a repeat a no-op.
struct PatternPhase {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger
    var shadowMode = false
    var thresholdsVersion = "v1"
    var batchSize = 1000

    struct Result {
        var users = 0
        var episodesOpened = 0
        var episodesResolved = 0
        var enqueued = 0
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
        // Users whose newest metrics are newer than their last evaluation. New users get a row first.
        try db.execute("""
            insert into pattern_evaluations (user_id, evaluated_through)
            select distinct m.user_id, '-infinity'::timestamptz from wearable_daily_metrics m
             where not exists (select 1 from pattern_evaluations e where e.user_id = m.user_id)
            on conflict (user_id) do nothing
            """)
        // Each candidate's latest metric date (L) and newest update come with it, once per pass.
        var marks: [UUID: (latest: LocalDate, newest: Date)] = [:]
        var candidates: [UUID] = []
        for row in try db.query("""
            select e.user_id, m.latest::text as latest, m.newest from pattern_evaluations e
              join (select user_id, max(updated_at) as newest, max(metric_date) as latest
                      from wearable_daily_metrics group by user_id) m
                on m.user_id = e.user_id
             where m.newest > e.evaluated_through
            """) {
            guard let user = row[0].uuid, let latest = row[1].string.flatMap(LocalDate.init), let newest = row[2].date else { continue }
            marks[user] = (latest, newest)
            candidates.append(user)
        }
        guard !candidates.isEmpty else { return result }
        // Concurrent passes start at different places, so they rarely wait on each other's locks.
        let offset = Int.random(in: 0..<candidates.count)
        candidates = Array(candidates[offset...] + candidates[..<offset])

        var start = 0
        while start < candidates.count {
            if StopSignal.requested { break }
            let chunk = Array(candidates[start..<min(start + batchSize, candidates.count)])
            start += batchSize
            let r = try db.transaction { db in try evaluate(chunk, marks: marks, thresholds: thresholds, db: db) }
            result.users += r.users
            result.episodesOpened += r.episodesOpened
            result.episodesResolved += r.episodesResolved
            result.enqueued += r.enqueued
        }
        return result
    }

    /// One batch of users, inside one transaction.
    func evaluate(_ chunk: [UUID], marks: [UUID: (latest: LocalDate, newest: Date)], thresholds: [PatternThreshold],
                  db: PGConnection) throws -> Result {
        var result = Result()
        let locked = try db.query("""
            select user_id, evaluated_through from pattern_evaluations
             where user_id = any(\(chunk)::uuid[]) for update skip locked
            """)
        var evaluatedThrough: [UUID: Date] = [:]
        for row in locked { if let id = row["user_id"].uuid { evaluatedThrough[id] = row["evaluated_through"].date ?? .distantPast } }
        guard !evaluatedThrough.isEmpty else { return result }
        let users = Array(evaluatedThrough.keys)

        // The 120 days ending at each user's latest metric date, every configured metric at once.
        let metrics = Array(Set(thresholds.map(\.metric))).sorted()
        let columns = metrics.map { "m.\(SQL.quoteIdentifier($0))::float8 as \(SQL.quoteIdentifier($0))" }.joined(separator: ", ")
        var series: [UUID: [String: [(LocalDate, Double)]]] = [:]
        var latest: [UUID: LocalDate] = [:]
        var newest: [UUID: Date] = [:]
        // Their rows in one plain read (the planner serves `= any(…)` from the (user_id, metric_date)
        // index; a join to per-user windows or a window function costs several times more), cut to each
        // user's 120 days below. L and the newest update were read with the candidates.
        for user in users {
            if let m = marks[user] {
                latest[user] = m.latest
                newest[user] = m.newest
            }
        }
        guard let earliestLatest = latest.values.min() else { return result }
        let rows = try db.query("""
            select user_id, (metric_date - date '1970-01-01') as d, \(unescaped: columns) from wearable_daily_metrics m
             where user_id = any(\(users)::uuid[])
               and metric_date > \(earliestLatest.adding(days: -PatternEvaluator.windowDays).description)::date
             order by user_id, metric_date
            """)
        // Columns by position: this loop reads hundreds of thousands of cells.
        let metricColumns = metrics.map { m in rows.columns.firstIndex(of: m) ?? -1 }
        var current: UUID?
        var values: [[(LocalDate, Double)]] = Array(repeating: [], count: metrics.count)
        func finishUser() {
            guard let user = current else { return }
            series[user] = Dictionary(uniqueKeysWithValues: zip(metrics, values))
            values = Array(repeating: [], count: metrics.count)
        }
        for row in rows {
            // Days since 1970 arrive as an integer: no date text to parse for every row.
            guard let user = row[0].uuid, let days = row[1].int, let l = latest[user],
                  case let day = LocalDate(daysSinceEpoch: days),
                  day > l.adding(days: -PatternEvaluator.windowDays) else { continue }
            if user != current {
                finishUser()
                current = user
            }
            for (i, column) in metricColumns.enumerated() where column >= 0 {
                if let v = row[column].double { values[i].append((day, v)) }
            }
        }
        finishUser()
        // Another pass may have evaluated these users between our candidate list and our lock.
        let due = users.filter { u in (newest[u] ?? .distantPast) > (evaluatedThrough[u] ?? .distantPast) }
        guard !due.isEmpty else { return result }
        result.users = due.count

        var stored: [UUID: [String: [StoredEpisode]]] = [:]
        for row in try db.query("""
            select id, user_id, metric_type, pattern_type, active_since::text as since, current_level, last_notified_level
              from pattern_alert_state where user_id = any(\(due)::uuid[]) and episode_status = 'active'
            """) {
            guard let id = row["id"].uuid, let user = row["user_id"].uuid,
                  let since = row["since"].string.flatMap(LocalDate.init) else { continue }
            let key = (row["metric_type"].string ?? "") + "/" + (row["pattern_type"].string ?? "")
            stored[user, default: [:]][key, default: []].append(StoredEpisode(
                id: id, activeSince: since, level: row["current_level"].int ?? 3,
                lastNotifiedLevel: row["last_notified_level"].int ?? 0))
        }

        // Decide everything in memory.
        var resolve: [UUID] = []
        var upserts: [JSONValue] = []
        for user in due {
            guard let l = latest[user] else { continue }
            for t in thresholds {
                let key = t.metric + "/" + t.pattern.rawValue
                let evaluation = PatternEvaluator.evaluate(series[user]?[t.metric] ?? [], latest: l, threshold: t)
                let plan = Episodes.plan(active: stored[user]?[key] ?? [], evaluation: evaluation)
                resolve += plan.resolve
                if let e = plan.upsert {
                    if plan.continuing == nil { result.episodesOpened += 1 }
                    upserts.append([
                        "user_id": .string(user.lowercased), "metric_type": .string(t.metric),
                        "pattern_type": .string(t.pattern.rawValue), "active_since": .string(e.activeSince.description),
                        "current_level": .number(Double(e.level)), "severity": .string(e.severity.rawValue),
                        "baseline_value": .number(e.baseline), "recent_value": .number(e.recent),
                        "deviation_percent": .number(e.deviationPercent), "last_evaluated_date": .string(l.description),
                        "notify_level": plan.notifyLevel.map { .number(Double($0)) } ?? .null,
                    ])
                }
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
            // Which upserted episodes should be told about, keyed the way the upsert returns them.
            var wantsNotice = Set<String>()
            for case .object(let o) in upserts where o["notify_level"] != .null {
                wantsNotice.insert([o["user_id"], o["metric_type"], o["pattern_type"], o["active_since"]]
                    .map { $0?.stringValue ?? "" }.joined(separator: "/"))
            }
            for row in try db.query("""
                insert into pattern_alert_state as s (user_id, metric_type, pattern_type, episode_status, active_since,
                    current_level, severity, baseline_value, recent_value, deviation_percent, last_evaluated_date,
                    thresholds_version)
                select user_id, metric_type, pattern_type, 'active', active_since, current_level, severity,
                       baseline_value, recent_value, deviation_percent, last_evaluated_date, \(thresholdsVersion)
                  from jsonb_to_recordset(\(JSONValue.array(upserts).jsonText)::jsonb) as x(
                    user_id uuid, metric_type text, pattern_type text, active_since date, current_level int,
                    severity text, baseline_value numeric, recent_value numeric, deviation_percent numeric,
                    last_evaluated_date date)
                on conflict (user_id, metric_type, pattern_type, active_since) do update
                  set episode_status = 'active', resolved_at = null, current_level = excluded.current_level,
                      severity = excluded.severity, baseline_value = excluded.baseline_value,
                      recent_value = excluded.recent_value, deviation_percent = excluded.deviation_percent,
                      last_evaluated_date = excluded.last_evaluated_date, updated_at = now()
                returning s.id, s.user_id, s.metric_type, s.pattern_type, s.active_since::text as active_since,
                          s.current_level, s.severity, s.baseline_value::float8 as baseline_value,
                          s.recent_value::float8 as recent_value, s.deviation_percent::float8 as deviation_percent,
                          s.last_notified_level
                """) {
                guard let id = row["id"].uuid, let member = row["user_id"].uuid, let level = row["current_level"].int,
                      level > (row["last_notified_level"].int ?? 0) else { continue }
                let key = [member.lowercased, row["metric_type"].string ?? "", row["pattern_type"].string ?? "",
                           row["active_since"].string ?? ""].joined(separator: "/")
                guard wantsNotice.contains(key) else { continue }
                var payload: [String: JSONValue] = [
                    "metric_type": .string(row["metric_type"].string ?? ""),
                    "pattern_type": .string(row["pattern_type"].string ?? ""),
                    "level": .number(Double(level)),
                    "severity": .string(row["severity"].string ?? ""),
                    "active_since": .string(row["active_since"].string ?? ""),
                ]
                for key in ["baseline_value", "recent_value", "deviation_percent"] {
                    if let v = row[key].double { payload[key] = .number((v * 100).rounded() / 100) }
                }
                toNotify.append((id, member, level, Severity(level: level), payload))
            }
        }

        if !shadowMode && !toNotify.isEmpty {
            result.enqueued = try notifyAdmins(toNotify, db: db)
            try db.execute("""
                update pattern_alert_state s set last_notified_level = greatest(s.last_notified_level, x.level), updated_at = now()
                  from jsonb_to_recordset(\(JSONValue.array(toNotify.map { ["id": .string($0.episode.lowercased), "level": .number(Double($0.level))] }).jsonText)::jsonb)
                       as x(id uuid, level int)
                 where s.id = x.id
                """)
        }

        let through = JSONValue.array(due.compactMap { u in
            newest[u].map { ["user_id": .string(u.lowercased), "through": .string(ISO8601.string($0))] }
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
