import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// Planning the reminders phase: which reminders are due at `now`, the rows they make, and what
/// adaptive frequency holds back. Nothing is written here (see `write`).
extension ReminderGenerator {
    /// Reads the reminders due at `now` and makes their rows (no lock is held: see `write`).
    func plan() throws -> Plan {
        var plan = Plan()
        var adaptive: [UUID: (zone: TimeZone, current: NotificationFrequency)] = [:]
        var unschedulable: [UUID] = []
        for row in try db.query(Self.dueRemindersQuery(now: now, oneOffOnly: oneOffOnly)) {
            guard let reminder = ReminderRow(row) else { continue }
            if reminder.repeats {
                guard let zone = reminder.zone else {
                    plan.result.unknownZones.note(reminder.user)
                    continue
                }
                guard planRepeating(reminder, zone: zone, into: &plan) else { continue }
            } else if !planOnce(reminder, into: &plan) {
                unschedulable.append(reminder.id)
            }
            if let frequency = reminder.adaptive { adaptive[reminder.user] = frequency }
        }
        for id in unschedulable {
            logger.warning("reminder's time is not a real instant (infinity, or outside the years 0001-9999); not enqueued",
                           metadata: ["reminder_id": .string(id.lowercased)])
        }
        plan.result.unknownZones.report(.reminders, logger: logger)
        guard !plan.due.isEmpty else { return plan }

        // Adaptive frequency: score each person once, then hold back what their frequency leaves out.
        plan.adherence = try score(adaptive, rowsRead: &plan.result.adherenceRowsRead)
        for i in plan.due.indices {
            guard let a = plan.adherence[plan.due[i].user],
                  !AdherenceAnalyzer.shouldSend(plan.due[i].type, frequency: a.frequency, score: a.score) else { continue }
            plan.due[i].notification.skipReason = .adaptiveFrequency
            plan.due[i].notification.skipDetails = ["frequency": .string(a.frequency.rawValue), "adherence": a.score.json]
        }
        return plan
    }

    /// The enabled, uncancelled reminders that may be due at `now`: every daily and weekly one (its day decides),
    /// a one-off whose time (less a dose's advance) has come and was not enqueued, and a washout whose
    /// end has come and was not enqueued. With each, its owner's profile columns the rows need. Read
    /// through the partial index of active reminders (`reminders_active`, sql/048): cancelled and
    /// finished ones, however many, are not visited. `oneOffOnly` leaves the daily and weekly ones out.
    static func dueRemindersQuery(now: Date, oneOffOnly: Bool = false) -> SQL {
        """
        select r.id, r.user_id, r.schedule, r.reminder_type, r.title, r.body, r.title_ar, r.body_ar,
               r.local_time::text as own_time, r.weekday,
               coalesce(r.local_time, case when r.reminder_type = 'daily' then p.daily_reminder_time end)::text as local_time,
               r.at, r.ends_at, r.enqueued_at, r.end_enqueued_at, r.critical, r.channel,
               r.related_entity_type, r.related_entity_id, r.last_enqueued_for::text as last, p.timezone,
               p.dose_reminder_advance_minutes as advance, p.adaptive_frequency_enabled as adaptive,
               p.current_frequency
          from reminders r join user_profiles p on p.user_id = r.user_id
         where r.enabled and r.cancelled_at is null
           -- reminders_active's predicate, word for word, so its partial index serves the read
           and (r.schedule <> 'once' or r.enqueued_at is null or (r.ends_at is not null and r.end_enqueued_at is null))
           and (
               (r.schedule in ('daily', 'weekly') and \(unescaped: oneOffOnly ? "false" : "true"))
            or (r.schedule = 'once' and r.enqueued_at is null
                and r.at - case when r.reminder_type = 'dose' then make_interval(mins => p.dose_reminder_advance_minutes)
                                else interval '0' end <= \(now))
            or (r.reminder_type = 'washout' and r.end_enqueued_at is null and r.ends_at <= \(now)))
        """
    }

    /// A daily or weekly reminder: its row for the local day it came due on (`ReminderSchedule.dailyDue`,
    /// `weeklyDue`). False when it is not due.
    private func planRepeating(_ r: ReminderRow, zone: TimeZone, into plan: inout Plan) -> Bool {
        guard let time = r.row["local_time"].string.flatMap(LocalTime.init) else { return false }
        let last = r.row["last"].string.flatMap(LocalDate.init)
        let due: (date: LocalDate, at: Date)?
        if r.trigger == .weekly {
            guard let weekday = r.row["weekday"].int.flatMap(Weekday.init(rawValue:)) else { return false }
            due = ReminderSchedule.weeklyDue(now: now, zone: zone, weekday: weekday, time: time, advance: r.advance,
                                             lastEnqueuedFor: last)
        } else {
            due = ReminderSchedule.dailyDue(now: now, zone: zone, time: time, advance: r.advance, lastEnqueuedFor: last)
        }
        guard let d = due else { return false }
        var extra: [String: JSONValue] = ["date": .string(d.date.description)]
        if r.type == .dose { extra["dose_at"] = .string(ISO8601.string(d.at.addingTimeInterval(r.advance))) }
        let reason = r.type == .dose ? "dose_reminder" : r.trigger == .weekly ? "weekly_reminder" : "daily_reminder"
        plan.due.append(r.due(at: d.at, key: "\(r.key):\(d.date):\(ISO8601.string(d.at))", reason: reason, extra: extra))
        plan.mark(r, "date", .string(d.date.description))
        return true
    }

    /// A one-off reminder: its row at `at` (less a dose's advance), and a washout's second row at
    /// `ends_at`, each once. False when a time is no real instant (-infinity, a BC date): that row is
    /// skipped, since enqueued it would make PostgreSQL refuse the insert and roll back everyone's
    /// reminders.
    private func planOnce(_ r: ReminderRow, into plan: inout Plan) -> Bool {
        var real = true
        if r.row["enqueued_at"].date == nil, let event = r.row["at"].date {
            if !ReminderSchedule.isSchedulable(event) || !ReminderSchedule.isSchedulable(event.addingTimeInterval(-r.advance)) {
                real = false
            } else if let at = ReminderSchedule.onceDue(now: now, event: event, advance: r.advance) {
                var extra: [String: JSONValue] = [:]
                switch r.type {
                case .dose: extra["dose_at"] = .string(ISO8601.string(event))
                case .washout: extra["washout_event"] = "start"
                default: break
                }
                plan.due.append(r.due(at: at, key: "\(r.key):\(ISO8601.string(at))", reason: Self.reason(r.type, end: false),
                                      extra: extra))
                plan.mark(r, "once", true)
            }
        }
        if r.type == .washout, r.row["end_enqueued_at"].date == nil, let end = r.row["ends_at"].date, end <= now {
            if !ReminderSchedule.isSchedulable(end) {
                real = false
            } else {
                plan.due.append(r.due(at: end, key: "\(r.key):end:\(ISO8601.string(end))", reason: Self.reason(r.type, end: true),
                                      extra: ["washout_event": "end"]))
                plan.mark(r, "ends", true)
            }
        }
        return real
    }
}

extension ReminderGenerator.Plan {
    /// Sets one of `reminder`'s marks; the first also records the reminder as read, since `write`
    /// acts on it only while it is still so.
    mutating func mark(_ reminder: ReminderGenerator.ReminderRow, _ key: String, _ value: JSONValue) {
        if marks[reminder.id] == nil { marks[reminder.id] = reminder.asRead() }
        marks[reminder.id]?[key] = value
    }
}

extension ReminderGenerator {
    /// One row of `dueRemindersQuery`: a reminder, with what each of its queue rows carries.
    ///
    ///     guard let reminder = ReminderRow(row) else { continue }   // nil without an id or user
    ///     let row = reminder.due(at: at, key: "\(reminder.key):\(ISO8601.string(at))",
    ///                            reason: "test_start_reminder", extra: [:])
    struct ReminderRow {
        let row: PGRow
        let id: UUID
        let user: UUID
        let type: ReminderType
        /// How long before its dose a dose reminder comes (`dose_reminder_advance_minutes`, 30 by
        /// default); 0 for the other types.
        let advance: TimeInterval
        /// What every row of the reminder carries: its type, its texts and its related entity.
        let payload: [String: JSONValue]
        let critical: Bool

        init?(_ row: PGRow) {
            guard let id = row["id"].uuid, let user = row["user_id"].uuid else { return nil }
            let type = row["reminder_type"].string.flatMap(ReminderType.init(rawValue:)) ?? .daily
            var payload: [String: JSONValue] = ["reminder_type": .string(type.rawValue)]
            for key in ["title", "body", "title_ar", "body_ar", "related_entity_type", "related_entity_id"] {
                if let v = row[key].string { payload[key] = .string(v) }
            }
            (self.row, self.id, self.user, self.type, self.payload) = (row, id, user, type, payload)
            advance = type == .dose ? Double(row["advance"].int ?? 30) * 60 : 0
            critical = row["critical"].bool ?? false
        }

        /// The start of its rows' dedupe keys.
        var key: String { "reminder:\(id.lowercased)" }

        /// When it repeats; a schedule herald does not know is read as once (the table's check allows none).
        var trigger: ReminderTrigger { row["schedule"].string.flatMap(ReminderTrigger.init(rawValue:)) ?? .once }

        /// Daily or weekly: its local day decides whether it is due.
        var repeats: Bool { trigger != .once }

        /// The owner's time zone; nil when herald cannot read it.
        var zone: TimeZone? { row["timezone"].string.flatMap(Zone.named) }

        /// The owner's zone and current frequency, when adaptive frequency applies: they enabled it,
        /// and this is a daily or dose reminder.
        var adaptive: (zone: TimeZone, current: NotificationFrequency)? {
            guard row["adaptive"].bool == true, type == .daily || type == .dose, let zone else { return nil }
            return (zone, row["current_frequency"].string.flatMap(NotificationFrequency.init(rawValue:)) ?? .full)
        }

        /// A queue row of this reminder at `at`, its payload with `extra`.
        func due(at: Date, key: String, reason: String, extra: [String: JSONValue]) -> Due {
            var p = payload
            for (k, v) in extra { p[k] = v }
            var n = NewNotification(recipient: user, member: user, channel: row["channel"].string ?? "push",
                                    kind: Kind.reminder.rawValue, severity: critical ? .critical : nil,
                                    priority: critical ? .high : .normal, payload: .object(p), scheduledAt: at,
                                    dedupeKey: key, reason: reason)
            n.relatedEntityType = row["related_entity_type"].string
            n.relatedEntityId = row["related_entity_id"].string
            n.reminderId = id
            return Due(reminder: id, user: user, type: type, notification: n)
        }

        /// The reminder's columns as read, as text, under the names `write` compares them by.
        func asRead() -> [String: JSONValue] {
            var read: [String: JSONValue] = ["id": .string(id.lowercased)]
            for (k, column) in [("schedule", "schedule"), ("reminder_type", "reminder_type"), ("at", "at"),
                                ("ends_at", "ends_at"), ("local_time", "own_time"), ("last", "last")] {
                read[k] = row[column].string.map(JSONValue.string) ?? .null
            }
            read["weekday"] = row["weekday"].int.map { .number(Double($0)) } ?? .null
            return read
        }
    }
}
