import Foundation
import HeraldCore
import HeraldPostgres

/// `pattern_alert_state` as the patterns phase reads and writes it, for users it holds locked (so
/// what it reads stays true until the transaction commits).
///
///     let store = EpisodeStore(db: db, now: now, thresholdsVersion: "v1")
///     let stored = try store.load(users: due, since: earliest)
///     try store.resolve(plan.resolve)
///     let ids = try store.upsert(writes)   // the episode id of each write that notifies
struct EpisodeStore {
    let db: PGConnection
    let now: Date
    let thresholdsVersion: String

    /// A user's stored episodes of one metric and pattern.
    struct Stored {
        var active: [StoredEpisode] = []
        var resolved: [StoredEpisode] = []
    }

    /// One episode to write: (user, metric, pattern)'s evaluation on day L.
    struct Write {
        var user: UUID
        var threshold: PatternThreshold
        var evaluation: EpisodeEvaluation
        var latest: LocalDate
        /// The level the admins are told of; `last_notified_level` rises to it. Nil: nobody is told.
        var notifiedLevel: Int?

        /// How the row is known before it has an id.
        var key: String {
            [user.lowercased, threshold.metric, threshold.pattern.rawValue, evaluation.activeSince.description]
                .joined(separator: "/")
        }
    }

    /// The users' active episodes and the resolved ones that started after `since` (a run inside the
    /// window could start on such a day again), by user and "metric/pattern".
    func load(users: [UUID], since: LocalDate) throws -> [UUID: [String: Stored]] {
        var out: [UUID: [String: Stored]] = [:]
        for row in try db.query("""
            select id, user_id, metric_type, pattern_type, active_since::text as since, current_level,
                   last_notified_level, episode_status = 'active' as active
              from pattern_alert_state
             where user_id = any(\(users)::uuid[])
               and (episode_status = 'active' or active_since > \(since.description)::date)
            """) {
            guard let id = row["id"].uuid, let user = row["user_id"].uuid,
                  let activeSince = row["since"].string.flatMap(LocalDate.init) else { continue }
            let key = (row["metric_type"].string ?? "") + "/" + (row["pattern_type"].string ?? "")
            let episode = StoredEpisode(id: id, activeSince: activeSince, level: row["current_level"].int ?? 3,
                                        lastNotifiedLevel: row["last_notified_level"].int ?? 0)
            if row["active"].bool == true {
                out[user, default: [:]][key, default: Stored()].active.append(episode)
            } else {
                out[user, default: [:]][key, default: Stored()].resolved.append(episode)
            }
        }
        return out
    }

    /// Marks active episodes resolved.
    func resolve(_ ids: [UUID]) throws {
        guard !ids.isEmpty else { return }
        try db.execute("""
            update pattern_alert_state set episode_status = 'resolved', resolved_at = \(now), updated_at = now()
             where id = any(\(ids)::uuid[]) and episode_status = 'active'
            """)
    }

    /// Inserts new episodes and updates continuing (or reopened) ones, raising `last_notified_level`
    /// to each write's `notifiedLevel`, in one statement. Returns the episode id of every write that
    /// notifies, by its `key`: the queue rows refer to it.
    ///
    /// The writes are bound as one typed array per column to `unnest(…)` (``Columns``): no jsonb
    /// document to build here or to parse there. Numbers travel as the text jsonb would have read
    /// (`JSONValue.numberText`), so a value is stored as it was before, down to its `numeric` scale;
    /// one that is not finite is stored as null, as jsonb's null was.
    func upsert(_ writes: [Write]) throws -> [String: UUID] {
        guard !writes.isEmpty else { return [:] }
        let c = Columns(writes)
        let notifying = Set(writes.filter { $0.notifiedLevel != nil }.map(\.key))
        var ids: [String: UUID] = [:]
        for row in try db.query("""
            insert into pattern_alert_state as s (user_id, metric_type, pattern_type, episode_status, active_since,
                current_level, severity, baseline_value, recent_value, deviation_percent, last_evaluated_date,
                thresholds_version, last_notified_level)
            select user_id, metric_type, pattern_type, 'active', active_since, current_level, severity,
                   baseline_value, recent_value, deviation_percent, last_evaluated_date, \(thresholdsVersion),
                   notified_level
              from unnest(\(c.users)::uuid[], \(c.metrics)::text[], \(c.patterns)::text[], \(c.since)::date[],
                          \(c.levels)::int[], \(c.severities)::text[], \(c.baselines)::numeric[], \(c.recents)::numeric[],
                          \(c.deviations)::numeric[], \(c.evaluatedDates)::date[], \(c.notifiedLevels)::int[])
                   as x(user_id, metric_type, pattern_type, active_since, current_level, severity, baseline_value,
                        recent_value, deviation_percent, last_evaluated_date, notified_level)
            on conflict (user_id, metric_type, pattern_type, active_since) do update
              set episode_status = 'active', resolved_at = null, current_level = excluded.current_level,
                  severity = excluded.severity, baseline_value = excluded.baseline_value,
                  recent_value = excluded.recent_value, deviation_percent = excluded.deviation_percent,
                  last_evaluated_date = excluded.last_evaluated_date,
                  last_notified_level = greatest(s.last_notified_level, excluded.last_notified_level),
                  updated_at = now()
            returning s.id, s.user_id, s.metric_type, s.pattern_type, s.active_since::text as active_since
            """) where !notifying.isEmpty {
            let key = [row["user_id"].string ?? "", row["metric_type"].string ?? "", row["pattern_type"].string ?? "",
                       row["active_since"].string ?? ""].joined(separator: "/")
            if notifying.contains(key), let id = row["id"].uuid { ids[key] = id }
        }
        return ids
    }

    /// The writes as one array per column, in order (see ``upsert(_:)``).
    struct Columns {
        var users: [UUID] = [], metrics: [String] = [], patterns: [String] = [], since: [String] = []
        var levels: [Int32] = [], severities: [String] = []
        var baselines = PGNullableArray<String>(), recents = PGNullableArray<String>(), deviations = PGNullableArray<String>()
        var evaluatedDates: [String] = [], notifiedLevels: [Int32] = []

        init(_ writes: [Write]) {
            for w in writes {
                let e = w.evaluation
                users.append(w.user)
                metrics.append(w.threshold.metric)
                patterns.append(w.threshold.pattern.rawValue)
                since.append(e.activeSince.description)
                levels.append(Int32(clamping: e.level))
                severities.append(e.severity.rawValue)
                baselines.append(JSONValue.numberText(e.baseline))
                recents.append(JSONValue.numberText(e.recent))
                deviations.append(JSONValue.numberText(e.deviationPercent))
                evaluatedDates.append(w.latest.description)
                notifiedLevels.append(Int32(clamping: w.notifiedLevel ?? 0))
            }
        }
    }
}
