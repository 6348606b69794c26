import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The `prompts` phase (scheduled prompts): plans each person's prompts for their local date, and plans
/// the rest of the day again when their settings change.
///
/// - A day with no plan yet, for someone with prompts on: N prompts across the waking window (one per
///   segment, centre ± 30 %, reproducible per user and date, `PromptSchedule`); those still ahead are
///   enqueued, each with `run_after` at its instant.
/// - A day planned under other settings than the person's current ones (prompts per day, waking hours,
///   on or off): the day is planned again. Its prompts not yet sent are withdrawn (the settings'
///   trigger has usually done it already, sql/040), and the new plan's prompts still ahead are enqueued,
///   less the first k, where k prompts of the day have already gone out: the segments they used are
///   spent, so the day never has more than N and nothing already sent is sent again. Turned off, the
///   day keeps what was sent and gets nothing more.
///
/// `prompt_schedules` records each day with the settings it was planned with and its plan number
/// (`revision`); concurrent passes record a plan only against the number they read, so one of them
/// plans, and dedupe keys make a repeat a no-op.
struct PromptGenerator {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger

    struct Result {
        var enqueued = 0
        /// Days planned again because their settings changed.
        var replanned = 0
        /// Prompts not yet sent that a new plan withdrew.
        var withdrawn = 0
        /// People whose time zone herald cannot read (passed over).
        var unknownZones = UnknownZones()
    }

    /// The settings a day is planned with.
    struct Settings: Equatable {
        var prompts: Int
        var wakingStart: Int
        var wakingEnd: Int
        var enabled: Bool
    }

    /// One person's day to plan: their settings now and the plan number this pass makes (0: the day's
    /// first plan).
    struct Day {
        var user: UUID
        var date: LocalDate
        var zone: TimeZone
        var settings: Settings
        var revision: Int

        var json: JSONValue {
            ["user_id": .string(user.lowercased), "local_date": .string(date.description),
             "prompts": .number(Double(settings.prompts)), "waking_hour_start": .number(Double(settings.wakingStart)),
             "waking_hour_end": .number(Double(settings.wakingEnd)), "enabled": .bool(settings.enabled),
             "revision": .number(Double(revision))]
        }
    }

    func run() throws -> Result {
        var result = Result()
        let days = try daysToPlan(unknownZones: &result.unknownZones)
        result.unknownZones.report(.prompts, logger: logger)
        guard !days.isEmpty else { return result }
        try db.transaction { db in
            var rows: [NewNotification] = []
            let first = try recordFirstPlans(days.filter { $0.revision == 0 }, db)
            rows += first.flatMap { plan($0, alreadySent: 0) }
            let again = try recordNewPlans(days.filter { $0.revision > 0 }, db)
            if !again.isEmpty {
                result.replanned = again.count
                result.withdrawn = try withdraw(again, db)
                let sent = try sentCounts(again, db)
                rows += again.flatMap { plan($0, alreadySent: sent[$0.user] ?? 0) }
            }
            result.enqueued = try Enqueuer.insert(rows, db: db, passId: passId).count
        }
        if result.replanned > 0 {
            logger.info("prompt settings changed: the rest of the day planned again", metadata: [
                "people": .stringConvertible(result.replanned), "withdrawn": .stringConvertible(result.withdrawn)])
        }
        return result
    }

    /// People whose local date has no plan (and who have prompts on), or a plan made under settings
    /// they have since changed.
    func daysToPlan(unknownZones: inout UnknownZones) throws -> [Day] {
        var days: [Day] = []
        for row in try db.query("""
            select s.user_id, s.prompts_per_day, s.waking_hour_start, s.waking_hour_end, s.enabled, p.timezone,
                   ps.revision
              from prompt_settings s join user_profiles p on p.user_id = s.user_id
              left join prompt_schedules ps
                on ps.user_id = s.user_id and ps.local_date = (\(now)::timestamptz at time zone p.timezone)::date
             where (ps.user_id is null and s.enabled)
                or (ps.user_id is not null and (s.enabled or ps.enabled is distinct from false)
                    and (ps.prompts, ps.waking_hour_start, ps.waking_hour_end, ps.enabled)
                        is distinct from (s.prompts_per_day, s.waking_hour_start, s.waking_hour_end, s.enabled))
            """) {
            guard let user = row["user_id"].uuid else { continue }
            guard let zone = row["timezone"].string.flatMap(Zone.named) else {
                unknownZones.note(user)
                continue
            }
            guard let n = row["prompts_per_day"].int, let start = row["waking_hour_start"].int,
                  let end = row["waking_hour_end"].int, let enabled = row["enabled"].bool else { continue }
            days.append(Day(user: user, date: Zone.localDate(now, in: zone), zone: zone,
                            settings: Settings(prompts: n, wakingStart: start, wakingEnd: end, enabled: enabled),
                            revision: row["revision"].int.map { $0 + 1 } ?? 0))
        }
        return days
    }

    /// Records the days' first plans; returns the days this pass recorded (another pass may have).
    private func recordFirstPlans(_ days: [Day], _ db: PGConnection) throws -> [Day] {
        guard !days.isEmpty else { return [] }
        let recorded = Set(try db.query("""
            insert into prompt_schedules (user_id, local_date, prompts, waking_hour_start, waking_hour_end, enabled, revision)
            select user_id, local_date, prompts, waking_hour_start, waking_hour_end, enabled, 0
              from jsonb_to_recordset(\(JSONValue.array(days.map(\.json)).pgJSONText)::jsonb)
                as x(user_id uuid, local_date date, prompts int, waking_hour_start int, waking_hour_end int, enabled boolean)
            on conflict do nothing
            returning user_id
            """).compactMap { $0["user_id"].uuid })
        return days.filter { recorded.contains($0.user) }
    }

    /// Records the days' new plans against the plan number read; returns the days this pass recorded.
    /// The update locks each day's row until the commit: a pass planning it at the same time waits,
    /// then finds the number moved on and leaves the day alone.
    private func recordNewPlans(_ days: [Day], _ db: PGConnection) throws -> [Day] {
        guard !days.isEmpty else { return [] }
        let sorted = days.sorted { $0.user.lowercased < $1.user.lowercased }   // as concurrent passes lock them
        let recorded = Set(try db.query("""
            update prompt_schedules ps
               set prompts = x.prompts, waking_hour_start = x.waking_hour_start, waking_hour_end = x.waking_hour_end,
                   enabled = x.enabled, revision = x.revision
              from jsonb_to_recordset(\(JSONValue.array(sorted.map(\.json)).pgJSONText)::jsonb)
                as x(user_id uuid, local_date date, prompts int, waking_hour_start int, waking_hour_end int,
                     enabled boolean, revision int)
             where ps.user_id = x.user_id and ps.local_date = x.local_date and ps.revision = x.revision - 1
            returning ps.user_id
            """).compactMap { $0["user_id"].uuid })
        return days.filter { recorded.contains($0.user) }
    }

    /// Withdraws the prompts not yet sent of the people planned again (sql/040's function).
    private func withdraw(_ days: [Day], _ db: PGConnection) throws -> Int {
        try db.query("""
            select coalesce(sum(herald_withdraw_prompt_rows(u, 'prompt settings changed')), 0)::int as n
              from unnest(\(days.map(\.user))::uuid[]) as u
            """).first?["n"].int ?? 0
    }

    /// How many of each day's prompts have gone out, or are going out now, under its earlier plans.
    private func sentCounts(_ days: [Day], _ db: PGConnection) throws -> [UUID: Int] {
        var counts: [UUID: Int] = [:]
        for row in try db.query("""
            select x.user_id, count(q.id)::int as n
              from jsonb_to_recordset(\(JSONValue.array(days.map(\.json)).pgJSONText)::jsonb)
                as x(user_id uuid, local_date date, revision int)
             cross join lateral herald_prompt_keys(x.user_id, x.local_date, x.revision - 1) as k(key)
              join notification_queue q on q.dedupe_key = k.key and q.recipient_user_id = x.user_id
             where (q.status = 'sent' or \(Lease.live))
             group by x.user_id
            """) {
            if let user = row["user_id"].uuid { counts[user] = row["n"].int ?? 0 }
        }
        return counts
    }

    /// The day's prompts still to enqueue: the plan's prompts at or after now, less its first
    /// `alreadySent`; none when prompts are off.
    func plan(_ day: Day, alreadySent: Int) -> [NewNotification] {
        guard day.settings.enabled else { return [] }
        let s = day.settings
        let instants = PromptSchedule.instants(user: day.user, date: day.date, count: s.prompts, wakingStartHour: s.wakingStart,
                                               wakingEndHour: s.wakingEnd, zone: day.zone)
        return instants.enumerated().compactMap { i, at in
            guard i >= alreadySent, at >= now else { return nil }
            return NewNotification(
                recipient: day.user, member: day.user, channel: Channel.push.rawValue, kind: Kind.prompt.rawValue,
                priority: .normal,
                payload: ["index": .number(Double(i + 1)), "of": .number(Double(s.prompts)), "date": .string(day.date.description)],
                scheduledAt: at, dedupeKey: Self.dedupeKey(day.user, day.date, revision: day.revision, index: i + 1),
                reason: day.revision == 0 ? "prompt_schedule" : "prompt_settings_changed")
        }
    }

    /// `prompt:<user>:<date>:<i>` for a day's first plan, `prompt:<user>:<date>:r<rev>:<i>` for the
    /// next ones (as sql/040's `herald_prompt_keys` lists them).
    static func dedupeKey(_ user: UUID, _ date: LocalDate, revision: Int, index: Int) -> String {
        "prompt:\(user.lowercased):\(date):" + (revision == 0 ? "" : "r\(revision):") + "\(index)"
    }
}
