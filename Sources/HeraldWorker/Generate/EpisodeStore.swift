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
    func upsert(_ writes: [Write]) throws -> [String: UUID] {
        guard !writes.isEmpty else { return [:] }
        let rows = JSONValue.array(writes.map { w in
            let e = w.evaluation
            return [
                "user_id": .string(w.user.lowercased), "metric_type": .string(w.threshold.metric),
                "pattern_type": .string(w.threshold.pattern.rawValue), "active_since": .string(e.activeSince.description),
                "current_level": .number(Double(e.level)), "severity": .string(e.severity.rawValue),
                "baseline_value": .number(e.baseline), "recent_value": .number(e.recent),
                "deviation_percent": .number(e.deviationPercent), "last_evaluated_date": .string(w.latest.description),
                "notified_level": .number(Double(w.notifiedLevel ?? 0)),
            ]
        })
        let notifying = Set(writes.filter { $0.notifiedLevel != nil }.map(\.key))
        var ids: [String: UUID] = [:]
        for row in try db.query("""
            insert into pattern_alert_state as s (user_id, metric_type, pattern_type, episode_status, active_since,
                current_level, severity, baseline_value, recent_value, deviation_percent, last_evaluated_date,
                thresholds_version, last_notified_level)
            select user_id, metric_type, pattern_type, 'active', active_since, current_level, severity,
                   baseline_value, recent_value, deviation_percent, last_evaluated_date, \(thresholdsVersion),
                   notified_level
              from jsonb_to_recordset(\(rows.pgJSONText)::jsonb) as x(
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
            """) where !notifying.isEmpty {
            let key = [row["user_id"].string ?? "", row["metric_type"].string ?? "", row["pattern_type"].string ?? "",
                       row["active_since"].string ?? ""].joined(separator: "/")
            if notifying.contains(key), let id = row["id"].uuid { ids[key] = id }
        }
        return ids
    }
}
