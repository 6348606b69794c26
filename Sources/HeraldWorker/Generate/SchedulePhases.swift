import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The `prompts` phase (seed 002): for each user with prompt settings and no schedule for their local
/// date, place N prompts across their waking window (one per segment, centre ± 30 %, reproducible per
/// user and date) and enqueue those still ahead, each with `run_after` at its instant. Once per day:
/// `prompt_schedules` records the day, and dedupe keys make a repeat a no-op.
struct PromptPhase {
    let db: PGConnection
    let passId: String
    let now: Date

    func run() throws -> Int {
        var rows: [NewNotification] = []
        var days: [JSONValue] = []
        for row in try db.query("""
            select s.user_id, s.prompts_per_day, s.waking_hour_start, s.waking_hour_end, p.timezone
              from prompt_settings s join user_profiles p on p.user_id = s.user_id
             where s.enabled and not exists (
               select 1 from prompt_schedules ps
                where ps.user_id = s.user_id and ps.local_date = (\(now)::timestamptz at time zone p.timezone)::date)
            """) {
            guard let user = row["user_id"].uuid, let zone = row["timezone"].string.flatMap(Zone.named),
                  let n = row["prompts_per_day"].int, let start = row["waking_hour_start"].int,
                  let end = row["waking_hour_end"].int else { continue }
            let date = Zone.localDate(now, in: zone)
            let instants = PromptSchedule.instants(user: user, date: date, count: n, wakingStartHour: start,
                                                   wakingEndHour: end, zone: zone)
            days.append(["user_id": .string(user.lowercased), "local_date": .string(date.description), "prompts": .number(Double(n))])
            for (i, at) in instants.enumerated() where at >= now {
                rows.append(NewNotification(
                    recipient: user, member: user, channel: Channel.push.rawValue, kind: .prompt, priority: .normal,
                    payload: ["index": .number(Double(i + 1)), "of": .number(Double(n)), "date": .string(date.description)],
                    scheduledAt: at, dedupeKey: "prompt:\(user.lowercased):\(date):\(i + 1)", reason: "prompt_schedule"))
            }
        }
        guard !days.isEmpty else { return 0 }
        return try db.transaction { db in
            try db.execute("""
                insert into prompt_schedules (user_id, local_date, prompts)
                select user_id, local_date, prompts from jsonb_to_recordset(\(JSONValue.array(days).pgJSONText)::jsonb)
                  as x(user_id uuid, local_date date, prompts int)
                on conflict do nothing
                """)
            return try Enqueuer.insert(rows, db: db, passId: passId).count
        }
    }
}

/// The `reminders` phase (seed 001): daily reminders at a local time and one-off reminders at an
/// instant become queue rows when due, once each. Critical reminders are marked critical, so quiet
/// hours at `critical_only` and the rate limits let them through.
struct ReminderPhase {
    let db: PGConnection
    let passId: String
    let now: Date

    func run() throws -> Int {
        var rows: [NewNotification] = []
        var daily: [JSONValue] = []
        var once: [UUID] = []
        for row in try db.query("""
            select r.id, r.user_id, r.schedule, r.reminder_type, r.title, r.body, r.title_ar, r.body_ar,
                   r.local_time::text as local_time, r.at, r.critical, r.channel,
                   r.last_enqueued_for::text as last, p.timezone
              from reminders r join user_profiles p on p.user_id = r.user_id
             where r.enabled and ((r.schedule = 'daily') or (r.schedule = 'once' and r.enqueued_at is null and r.at <= \(now)))
            """) {
            guard let id = row["id"].uuid, let user = row["user_id"].uuid else { continue }
            var payload: [String: JSONValue] = ["reminder_type": .string(row["reminder_type"].string ?? "")]
            for key in ["title", "body", "title_ar", "body_ar"] { if let v = row[key].string { payload[key] = .string(v) } }
            let critical = row["critical"].bool ?? false
            func notification(at: Date, key: String) -> NewNotification {
                NewNotification(recipient: user, member: user, channel: row["channel"].string ?? "push", kind: .reminder,
                                severity: critical ? .critical : nil, priority: critical ? .high : .normal,
                                payload: .object(payload), scheduledAt: at, dedupeKey: key,
                                reason: row["schedule"].string == "daily" ? "daily_reminder" : "one_off_reminder")
            }
            if row["schedule"].string == "daily" {
                guard let zone = row["timezone"].string.flatMap(Zone.named),
                      let time = row["local_time"].string.flatMap(LocalTime.init),
                      let due = ReminderSchedule.dailyDue(now: now, zone: zone, time: time,
                                                          lastEnqueuedFor: row["last"].string.flatMap(LocalDate.init)) else { continue }
                payload["date"] = .string(due.date.description)
                rows.append(notification(at: due.at, key: "reminder:\(id.lowercased):\(due.date)"))
                daily.append(["id": .string(id.lowercased), "date": .string(due.date.description)])
            } else if let at = row["at"].date {
                rows.append(notification(at: at, key: "reminder:\(id.lowercased)"))
                once.append(id)
            }
        }
        guard !rows.isEmpty else { return 0 }
        return try db.transaction { db in
            if !daily.isEmpty {
                try db.execute("""
                    update reminders r set last_enqueued_for = x.date, updated_at = now()
                      from jsonb_to_recordset(\(JSONValue.array(daily).pgJSONText)::jsonb) as x(id uuid, date date)
                     where r.id = x.id
                    """)
            }
            if !once.isEmpty {
                try db.execute("update reminders set enqueued_at = now(), updated_at = now() where id = any(\(once)::uuid[])")
            }
            return try Enqueuer.insert(rows, db: db, passId: passId).count
        }
    }
}
