import Foundation
import HeraldCore
import HeraldPostgres

/// Adaptive frequency's reads: each person's logs and doses of the period, counted in the database, so
/// what the phase reads is bounded by people × days however many dose events an app inserted.
extension ReminderGenerator {
    /// The adherence of each person and the frequency it recommends, from three queries for all of
    /// them: their logs of the period's days, their judged doses counted per day (`DoseDay`), and their
    /// latest judged doses (`AdherenceAnalyzer.consistentDoses` each). `rowsRead` counts the rows read.
    func score(_ people: [UUID: (zone: TimeZone, current: NotificationFrequency)], rowsRead: inout Int) throws
        -> [UUID: (frequency: NotificationFrequency, score: AdherenceScore)] {
        guard !people.isEmpty else { return [:] }
        let users = Array(people.keys)
        let since = now.addingTimeInterval(-Double(AdherenceAnalyzer.periodDays + 2) * 86_400)
        var logs: [UUID: Set<LocalDate>] = [:]
        for row in try db.query("""
            select user_id, log_date::text as d from daily_logs
             where user_id = any(\(users)::uuid[]) and log_date >= (\(since)::timestamptz at time zone 'UTC')::date - 1
               and log_date <= (\(now)::timestamptz at time zone 'UTC')::date + 1
            """) {
            rowsRead += 1
            if let u = row["user_id"].uuid, let d = row["d"].string.flatMap(LocalDate.init) { logs[u, default: []].insert(d) }
        }
        var days: [UUID: [DoseDay]] = [:], latest: [UUID: [DoseRecord]] = [:]
        for row in try db.query(Self.doseDaysQuery(users, now: now)) {
            rowsRead += 1
            guard let u = row["user_id"].uuid, let day = row["utc_day"].int else { continue }
            days[u, default: []].append(DoseDay(
                utcDay: day, judged: row["judged"].int ?? 0, missed: row["missed"].int ?? 0,
                onTime: row["on_time"].int ?? 0, partial: row["partial"].int ?? 0,
                partialMinutes: row["partial_minutes"].double ?? 0))
        }
        for row in try db.query(Self.latestDosesQuery(users, now: now)) {
            rowsRead += 1
            if let u = row["user_id"].uuid, let at = row["scheduled_at"].date {
                latest[u, default: []].append(DoseRecord(scheduledAt: at, takenAt: row["taken_at"].date))
            }
        }
        var out: [UUID: (frequency: NotificationFrequency, score: AdherenceScore)] = [:]
        for (user, p) in people {
            let tally = DoseTally(days: days[user] ?? [], latest: latest[user] ?? [])
            let s = AdherenceAnalyzer.score(today: Zone.localDate(now, in: p.zone), logDates: logs[user] ?? [], tally: tally)
            out[user] = (AdherenceAnalyzer.recommend(s, current: p.current), s)
        }
        return out
    }

    /// The doses the score judges at `now` (`DoseTally.isJudged`), of a `dose_events` aliased `e`.
    static func judged(at now: Date) -> SQL {
        let from = now.addingTimeInterval(-Double(AdherenceAnalyzer.periodDays + 1) * 86_400)
        let judgedBy = now.addingTimeInterval(-AdherenceAnalyzer.zeroCreditMinutes * 60)
        return "e.scheduled_at >= \(from) and e.scheduled_at <= \(now) and (e.taken_at is not null or e.scheduled_at <= \(judgedBy))"
    }

    /// Per person and UTC day, their judged doses counted as `DoseDay` counts them: a row per person and
    /// day of the period, whatever the number of doses.
    static func doseDaysQuery(_ users: [UUID], now: Date) -> SQL {
        let onTime = AdherenceAnalyzer.onTimeMinutes, zero = AdherenceAnalyzer.zeroCreditMinutes
        return """
            select user_id, utc_day, count(*)::int as judged, count(*) filter (where off is null)::int as missed,
                   count(*) filter (where off <= \(onTime))::int as on_time,
                   count(*) filter (where off > \(onTime) and off < \(zero))::int as partial,
                   coalesce(sum(off) filter (where off > \(onTime) and off < \(zero)), 0)::float8 as partial_minutes
              from (select e.user_id, floor(extract(epoch from e.scheduled_at) / 86400)::int as utc_day,
                           (abs(extract(epoch from e.taken_at) - extract(epoch from e.scheduled_at)) / 60)::float8 as off
                      from dose_events e
                     where e.user_id = any(\(users)::uuid[]) and \(judged(at: now))) d
             group by user_id, utc_day
            """
    }

    /// Each person's latest judged doses, `AdherenceAnalyzer.consistentDoses` at most, read backwards
    /// along `dose_events_user_scheduled`.
    static func latestDosesQuery(_ users: [UUID], now: Date) -> SQL {
        """
        select u.user_id, e.scheduled_at, e.taken_at
          from unnest(\(users)::uuid[]) as u(user_id)
          cross join lateral (
            select e.scheduled_at, e.taken_at from dose_events e
             where e.user_id = u.user_id and \(judged(at: now))
             order by e.scheduled_at desc limit \(AdherenceAnalyzer.consistentDoses)) e
        """
    }
}
