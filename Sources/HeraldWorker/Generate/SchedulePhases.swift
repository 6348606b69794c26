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
    let logger: Logger

    struct Result {
        var enqueued = 0
        /// People whose time zone herald cannot read (passed over).
        var unknownZones = UnknownZones()
    }

    func run() throws -> Result {
        var result = Result()
        var rows: [NewNotification] = []
        var days: [JSONValue] = []
        for row in try db.query("""
            select s.user_id, s.prompts_per_day, s.waking_hour_start, s.waking_hour_end, p.timezone
              from prompt_settings s join user_profiles p on p.user_id = s.user_id
             where s.enabled and not exists (
               select 1 from prompt_schedules ps
                where ps.user_id = s.user_id and ps.local_date = (\(now)::timestamptz at time zone p.timezone)::date)
            """) {
            guard let user = row["user_id"].uuid else { continue }
            guard let zone = row["timezone"].string.flatMap(Zone.named) else {
                result.unknownZones.note(user)
                continue
            }
            guard let n = row["prompts_per_day"].int, let start = row["waking_hour_start"].int,
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
        result.unknownZones.report(.prompts, logger: logger)
        guard !days.isEmpty else { return result }
        result.enqueued = try db.transaction { db in
            try db.execute("""
                insert into prompt_schedules (user_id, local_date, prompts)
                select user_id, local_date, prompts from jsonb_to_recordset(\(JSONValue.array(days).pgJSONText)::jsonb)
                  as x(user_id uuid, local_date date, prompts int)
                on conflict do nothing
                """)
            return try Enqueuer.insert(rows, db: db, passId: passId).count
        }
        return result
    }
}

/// The `reminders` phase (seed 001): every reminder type becomes queue rows when due, once each.
///
/// | type | due at | payload adds |
/// |---|---|---|
/// | daily | `local_time` (or the profile's `daily_reminder_time`) each local day, or `at` | `date` |
/// | dose | the dose (`at`, or `local_time` each day) less `dose_reminder_advance_minutes` (30) | `dose_at` |
/// | washout | `at` (start) and `ends_at` (end): two rows | `washout_event` |
/// | test_start | `at` | |
///
/// Rows carry the reminder (`reminder_id`, so cancelling withdraws them), its related entity, and
/// `reminder_type` in the payload (the decision's per-type toggle and the rate limits' type). Critical
/// reminders are marked critical: the rate limits let them through and quiet hours defer rather than
/// drop them.
///
/// Adaptive frequency: for people with `adaptive_frequency_enabled` and a daily or dose reminder due,
/// the phase scores their adherence (`AdherenceAnalyzer`) from `daily_logs` and `dose_events`, stores
/// `current_frequency` and the score, and records a reminder it holds back as skipped `adaptive_frequency`.
struct ReminderPhase {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger

    struct Due {
        var reminder: UUID
        var user: UUID
        var type: ReminderType
        var notification: NewNotification
    }

    struct Result {
        var enqueued = 0
        /// People with a daily reminder whose time zone herald cannot read (passed over).
        var unknownZones = UnknownZones()
    }

    /// What the read found due, before anything is written: the rows, and per reminder the marks to
    /// set (`last_enqueued_for`, `enqueued_at`, `end_enqueued_at`) with the columns as they were read.
    struct Plan {
        var due: [Due] = []
        /// One object per reminder acted on: its id, its marks (`date`, `once`, `ends`) and the values
        /// read (`schedule`, `reminder_type`, `at`, `ends_at`, `local_time`, `last`), as text.
        var marks: [UUID: [String: JSONValue]] = [:]
        var adherence: [UUID: (frequency: NotificationFrequency, score: AdherenceScore)] = [:]
        var result = Result()
    }

    func run() throws -> Result {
        let plan = try plan()
        var result = plan.result
        result.enqueued = try write(plan)
        return result
    }

    /// Reads the reminders due at `now` and makes their rows (no lock is held: see `write`).
    func plan() throws -> Plan {
        var plan = Plan()
        var due: [Due] = []
        var adaptive: [UUID: (zone: TimeZone, current: NotificationFrequency)] = [:]
        var unschedulable: [UUID] = []
        for row in try db.query("""
            select r.id, r.user_id, r.schedule, r.reminder_type, r.title, r.body, r.title_ar, r.body_ar,
                   r.local_time::text as own_time,
                   coalesce(r.local_time, case when r.reminder_type = 'daily' then p.daily_reminder_time end)::text as local_time,
                   r.at, r.ends_at, r.enqueued_at, r.end_enqueued_at, r.critical, r.channel,
                   r.related_entity_type, r.related_entity_id, r.last_enqueued_for::text as last, p.timezone,
                   p.dose_reminder_advance_minutes as advance, p.adaptive_frequency_enabled as adaptive,
                   p.current_frequency
              from reminders r join user_profiles p on p.user_id = r.user_id
             where r.enabled and r.cancelled_at is null and (
                   r.schedule = 'daily'
                or (r.schedule = 'once' and r.enqueued_at is null
                    and r.at - case when r.reminder_type = 'dose' then make_interval(mins => p.dose_reminder_advance_minutes)
                                    else interval '0' end <= \(now))
                or (r.reminder_type = 'washout' and r.end_enqueued_at is null and r.ends_at <= \(now)))
            """) {
            guard let id = row["id"].uuid, let user = row["user_id"].uuid else { continue }
            let type = row["reminder_type"].string.flatMap(ReminderType.init(rawValue:)) ?? .daily
            let advance = type == .dose ? Double(row["advance"].int ?? 30) * 60 : 0
            var payload: [String: JSONValue] = ["reminder_type": .string(type.rawValue)]
            for key in ["title", "body", "title_ar", "body_ar", "related_entity_type", "related_entity_id"] {
                if let v = row[key].string { payload[key] = .string(v) }
            }
            let critical = row["critical"].bool ?? false
            func add(at: Date, key: String, reason: String, extra: [String: JSONValue]) {
                var p = payload
                for (k, v) in extra { p[k] = v }
                var n = NewNotification(recipient: user, member: user, channel: row["channel"].string ?? "push",
                                        kind: .reminder, severity: critical ? .critical : nil,
                                        priority: critical ? .high : .normal, payload: .object(p), scheduledAt: at,
                                        dedupeKey: key, reason: reason)
                n.relatedEntityType = row["related_entity_type"].string
                n.relatedEntityId = row["related_entity_id"].string
                n.reminderId = id
                due.append(Due(reminder: id, user: user, type: type, notification: n))
            }
            // The reminder as read: `write` acts on it only while it is still so.
            func mark(_ key: String, _ value: JSONValue) {
                if plan.marks[id] == nil {
                    var read: [String: JSONValue] = ["id": .string(id.lowercased)]
                    for (k, column) in [("schedule", "schedule"), ("reminder_type", "reminder_type"), ("at", "at"),
                                        ("ends_at", "ends_at"), ("local_time", "own_time"), ("last", "last")] {
                        read[k] = row[column].string.map(JSONValue.string) ?? .null
                    }
                    plan.marks[id] = read
                }
                plan.marks[id]?[key] = value
            }
            let key = "reminder:\(id.lowercased)"
            if row["schedule"].string == "daily" {
                guard let zone = row["timezone"].string.flatMap(Zone.named) else {
                    plan.result.unknownZones.note(user)
                    continue
                }
                guard let time = row["local_time"].string.flatMap(LocalTime.init),
                      let d = ReminderSchedule.dailyDue(now: now, zone: zone, time: time, advance: advance,
                                                        lastEnqueuedFor: row["last"].string.flatMap(LocalDate.init)) else { continue }
                var extra: [String: JSONValue] = ["date": .string(d.date.description)]
                if type == .dose { extra["dose_at"] = .string(ISO8601.string(d.at.addingTimeInterval(advance))) }
                add(at: d.at, key: "\(key):\(d.date):\(ISO8601.string(d.at))",
                    reason: type == .dose ? "dose_reminder" : "daily_reminder", extra: extra)
                mark("date", .string(d.date.description))
            } else {
                // A time that is no real instant (-infinity, a BC date) is skipped and named: enqueued, it
                // would make PostgreSQL refuse the insert and roll back everyone's reminders.
                var real = true
                if row["enqueued_at"].date == nil, let event = row["at"].date {
                    if !ReminderSchedule.isSchedulable(event) || !ReminderSchedule.isSchedulable(event.addingTimeInterval(-advance)) {
                        real = false
                    } else if let at = ReminderSchedule.onceDue(now: now, event: event, advance: advance) {
                        var extra: [String: JSONValue] = [:]
                        switch type {
                        case .dose: extra["dose_at"] = .string(ISO8601.string(event))
                        case .washout: extra["washout_event"] = "start"
                        default: break
                        }
                        add(at: at, key: "\(key):\(ISO8601.string(at))", reason: Self.reason(type, end: false), extra: extra)
                        mark("once", true)
                    }
                }
                if type == .washout, row["end_enqueued_at"].date == nil, let end = row["ends_at"].date, end <= now {
                    if !ReminderSchedule.isSchedulable(end) {
                        real = false
                    } else {
                        add(at: end, key: "\(key):end:\(ISO8601.string(end))", reason: Self.reason(type, end: true),
                            extra: ["washout_event": "end"])
                        mark("ends", true)
                    }
                }
                if !real { unschedulable.append(id) }
            }
            if row["adaptive"].bool == true, type == .daily || type == .dose,
               let zone = row["timezone"].string.flatMap(Zone.named) {
                adaptive[user] = (zone, row["current_frequency"].string.flatMap(NotificationFrequency.init(rawValue:)) ?? .full)
            }
        }
        for id in unschedulable {
            logger.warning("reminder's time is not a real instant (infinity, or outside the years 0001-9999); not enqueued",
                           metadata: ["reminder_id": .string(id.lowercased)])
        }
        plan.result.unknownZones.report(.reminders, logger: logger)
        guard !due.isEmpty else { return plan }

        // Adaptive frequency: score each person once, then hold back what their frequency leaves out.
        let adherence = try score(adaptive)
        for i in due.indices {
            guard let a = adherence[due[i].user],
                  !AdherenceAnalyzer.shouldSend(due[i].type, frequency: a.frequency, score: a.score) else { continue }
            due[i].notification.skipReason = .adaptiveFrequency
            due[i].notification.skipDetails = ["frequency": .string(a.frequency.rawValue), "adherence": a.score.json]
        }
        plan.due = due
        plan.adherence = adherence
        return plan
    }

    /// Marks the planned reminders and enqueues their rows, in one transaction. The app may have
    /// cancelled, disabled, deleted or moved a reminder since `plan` read it (its trigger withdrew
    /// nothing then: the rows did not exist yet). So the marks are set by one statement that acts only on
    /// reminders still enabled, not cancelled, with the schedule, type, times and marks read, and only
    /// the rows of the reminders it returns are enqueued. It also locks them until the commit: an edit
    /// arriving meanwhile waits, and its trigger then withdraws the rows just enqueued. A reminder
    /// passed over is read again by the next pass.
    func write(_ plan: Plan) throws -> Int {
        guard !plan.due.isEmpty else { return 0 }
        let adherence = plan.adherence
        return try db.transaction { db in
            var acted: Set<UUID> = []
            if !plan.marks.isEmpty {
                // In id order, as concurrent passes write them.
                let marks = JSONValue.array(plan.marks.sorted { $0.key.lowercased < $1.key.lowercased }.map { .object($0.value) })
                for row in try db.query("""
                    update reminders r
                       set last_enqueued_for = coalesce(x.date, r.last_enqueued_for),
                           enqueued_at = case when x.once then now() else r.enqueued_at end,
                           end_enqueued_at = case when x.ends then now() else r.end_enqueued_at end,
                           updated_at = now()
                      from jsonb_to_recordset(\(marks.pgJSONText)::jsonb) as x(
                             id uuid, date date, once boolean, ends boolean, schedule text, reminder_type text,
                             at timestamptz, ends_at timestamptz, local_time time, last date)
                     where r.id = x.id
                       and r.enabled and r.cancelled_at is null
                       and r.schedule = x.schedule and r.reminder_type = x.reminder_type
                       and r.at is not distinct from x.at and r.ends_at is not distinct from x.ends_at
                       and r.local_time is not distinct from x.local_time
                       and r.last_enqueued_for is not distinct from x.last
                       and (x.once is not true or r.enqueued_at is null)
                       and (x.ends is not true or r.end_enqueued_at is null)
                    returning r.id
                    """) {
                    if let id = row["id"].uuid { acted.insert(id) }
                }
            }
            if !adherence.isEmpty {
                let scores = JSONValue.array(adherence.map { user, a in
                    ["user_id": .string(user.lowercased), "frequency": .string(a.frequency.rawValue), "score": a.score.json]
                }).jsonText
                try db.execute("""
                    update user_profiles p
                       set current_frequency = x.frequency, adherence_score = x.score,
                           adherence_evaluated_at = \(now), updated_at = now()
                      from jsonb_to_recordset(\(scores)::jsonb) as x(user_id uuid, frequency text, score jsonb)
                     where p.user_id = x.user_id
                    """)
            }
            let rows = plan.due.filter { acted.contains($0.reminder) }.map(\.notification)
            return try Enqueuer.insert(rows, db: db, passId: passId).count
        }
    }

    static func reason(_ type: ReminderType, end: Bool) -> String {
        switch type {
        case .daily: "one_off_reminder"
        case .dose: "dose_reminder"
        case .washout: end ? "washout_end" : "washout_start"
        case .testStart: "test_start_reminder"
        }
    }

    /// The adherence of each person, from their logs of the last 16 local days and their doses of the
    /// last 16 days (two queries for all of them), and the frequency it recommends.
    private func score(_ people: [UUID: (zone: TimeZone, current: NotificationFrequency)]) throws
        -> [UUID: (frequency: NotificationFrequency, score: AdherenceScore)] {
        guard !people.isEmpty else { return [:] }
        let users = Array(people.keys)
        let since = now.addingTimeInterval(-Double(AdherenceAnalyzer.periodDays + 2) * 86_400)
        var logs: [UUID: Set<LocalDate>] = [:]
        for row in try db.query("""
            select user_id, log_date::text as d from daily_logs
             where user_id = any(\(users)::uuid[]) and log_date >= (\(since)::timestamptz at time zone 'UTC')::date - 1
            """) {
            if let u = row["user_id"].uuid, let d = row["d"].string.flatMap(LocalDate.init) { logs[u, default: []].insert(d) }
        }
        var doses: [UUID: [DoseRecord]] = [:]
        for row in try db.query("""
            select user_id, scheduled_at, taken_at from dose_events
             where user_id = any(\(users)::uuid[]) and scheduled_at >= \(since) and scheduled_at <= \(now)
            """) {
            if let u = row["user_id"].uuid, let at = row["scheduled_at"].date {
                doses[u, default: []].append(DoseRecord(scheduledAt: at, takenAt: row["taken_at"].date))
            }
        }
        var out: [UUID: (frequency: NotificationFrequency, score: AdherenceScore)] = [:]
        for (user, p) in people {
            let s = AdherenceAnalyzer.score(today: Zone.localDate(now, in: p.zone), logDates: logs[user] ?? [],
                                            doses: doses[user] ?? [], now: now)
            out[user] = (AdherenceAnalyzer.recommend(s, current: p.current), s)
        }
        return out
    }
}
