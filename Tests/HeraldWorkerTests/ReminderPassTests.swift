import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
@testable import HeraldWorker
import Testing

/// Reminders, end to end on a real PostgreSQL: the reminder types, per-type toggles, cancelling,
/// quiet hours for critical reminders, adaptive frequency, and the rate limits counted per notification.
@Suite struct ReminderPassTests {
    let logAll = ["HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_EMAIL": "log", "HERALD_CHANNEL_SMS": "log"]

    func reminderRows(_ db: PGConnection) throws -> PGResult {
        try db.query("""
            select id, reminder_id, status, skip_reason, scheduled_at, payload->>'reminder_type' as type,
                   payload->>'dose_at' as dose_at, payload->>'washout_event' as washout_event,
                   related_entity_type, related_entity_id, severity
              from notification_queue where kind = 'reminder' order by scheduled_at, id
            """)
    }

    @Test func everyTypeIsDueAtItsLocalInstantAcrossSpringForward() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        // New York; 2026-03-08 02:00 EST → 03:00 EDT at 07:00Z.
        let p = try f.profile(timezone: "America/New_York")
        func reminder(_ sql: SQL) throws -> UUID { try db.query(sql).first!["id"].uuid! }
        let daily = try reminder("""
            insert into reminders (user_id, schedule, reminder_type, local_time, last_enqueued_for)
            values (\(p), 'daily', 'daily', '09:00', '2026-03-06') returning id
            """)
        // A dose at 03:15 EDT (07:15Z) of test step "step-1": reminded 30 minutes of elapsed time before.
        let dose = try reminder("""
            insert into reminders (user_id, schedule, reminder_type, at, related_entity_type, related_entity_id)
            values (\(p), 'once', 'dose', '2026-03-08T07:15:00Z', 'test_step', 'step-1') returning id
            """)
        // A daily dose at 03:15 local: on the 8th that is 07:15Z (EDT), the day before 08:15Z (EST).
        let dailyDose = try reminder("""
            insert into reminders (user_id, schedule, reminder_type, local_time, last_enqueued_for)
            values (\(p), 'daily', 'dose', '03:15', '2026-03-06') returning id
            """)
        let washout = try reminder("""
            insert into reminders (user_id, schedule, reminder_type, at, ends_at, related_entity_type, related_entity_id)
            values (\(p), 'once', 'washout', '2026-03-08T12:00:00Z', '2026-03-11T12:00:00Z', 'washout', 'w-1') returning id
            """)
        let testStart = try reminder("""
            insert into reminders (user_id, schedule, reminder_type, at, related_entity_type, related_entity_id)
            values (\(p), 'once', 'test_start', '2026-03-08T14:00:00Z', 'test_step', 'step-2') returning id
            """)
        let worker = Worker(url: tdb.url)
        func pass(_ at: String) { _ = worker.run(now: instant(at)) { $0.phases = [.reminders] } }
        func scheduled(_ reminder: UUID) throws -> [Date] {
            try db.query("select scheduled_at from notification_queue where reminder_id = \(reminder) order by scheduled_at")
                .compactMap { $0["scheduled_at"].date }
        }

        // The 7th (EST): the daily dose at 03:15 EST = 08:15Z, reminded at 07:45Z.
        pass("2026-03-07T07:44:00Z")
        #expect(try scheduled(dailyDose).isEmpty)
        pass("2026-03-07T07:45:00Z")
        #expect(try scheduled(dailyDose) == [instant("2026-03-07T07:45:00Z")])
        // 09:00 EST = 14:00Z.
        pass("2026-03-07T13:59:00Z")
        #expect(try scheduled(daily).isEmpty)
        pass("2026-03-07T14:00:00Z")
        #expect(try scheduled(daily) == [instant("2026-03-07T14:00:00Z")])

        // The 8th: the one-off dose (07:15Z) and the daily dose (03:15 EDT = 07:15Z) both at 06:45Z,
        // which is 01:45 EST on the wall clock: thirty minutes of elapsed time, not of wall time.
        pass("2026-03-08T06:44:00Z")
        #expect(try scheduled(dose).isEmpty)
        #expect(try scheduled(dailyDose).count == 1)
        pass("2026-03-08T06:45:00Z")
        #expect(try scheduled(dose) == [instant("2026-03-08T06:45:00Z")])
        #expect(try scheduled(dailyDose).last == instant("2026-03-08T06:45:00Z"))
        // 09:00 EDT = 13:00Z, an hour earlier in UTC than the day before.
        pass("2026-03-08T12:59:00Z")
        #expect(try scheduled(daily).count == 1)
        #expect(try scheduled(washout) == [instant("2026-03-08T12:00:00Z")])
        pass("2026-03-08T13:00:00Z")
        #expect(try scheduled(daily).last == instant("2026-03-08T13:00:00Z"))
        #expect(try scheduled(testStart).isEmpty)
        pass("2026-03-08T14:00:00Z")
        #expect(try scheduled(testStart) == [instant("2026-03-08T14:00:00Z")])
        // The washout's end, three days later; nothing repeats.
        pass("2026-03-11T11:59:00Z")
        #expect(try scheduled(washout).count == 1)
        pass("2026-03-11T12:00:00Z")
        pass("2026-03-11T12:05:00Z")
        #expect(try scheduled(washout) == [instant("2026-03-08T12:00:00Z"), instant("2026-03-11T12:00:00Z")])
        #expect(try scheduled(dose).count == 1)
        #expect(try scheduled(testStart).count == 1)

        let rows = try reminderRows(db)
        let doseRow = try #require(rows.first { $0["reminder_id"].uuid == dose })
        #expect(doseRow["type"].string == "dose")
        #expect(doseRow["dose_at"].string.flatMap(ISO8601.parse) == instant("2026-03-08T07:15:00Z"))
        #expect(doseRow["related_entity_type"].string == "test_step")
        #expect(doseRow["related_entity_id"].string == "step-1")
        #expect(Set(rows.filter { $0["reminder_id"].uuid == washout }.compactMap { $0["washout_event"].string }) == ["start", "end"])
        #expect(rows.filter { $0["reminder_id"].uuid == washout }.allSatisfy { $0["related_entity_id"].string == "w-1" })
        #expect(rows.first { $0["reminder_id"].uuid == testStart }?["type"].string == "test_start")
    }

    @Test func theTypeIsAClosedVocabulary() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let p = try Fixtures(db: db).profile()
        #expect(throws: (any Error).self) {
            try db.execute("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'daily_log', now())")
        }
        // Washouts and test starts are instants, not daily.
        #expect(throws: (any Error).self) {
            try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'washout', '09:00')")
        }
        // A daily reminder may leave its time to the profile.
        try db.execute("update user_profiles set daily_reminder_time = '20:00' where user_id = \(p)")
        try db.execute("insert into reminders (user_id, schedule, reminder_type) values (\(p), 'daily', 'daily')")
        _ = Worker(url: tdb.url).run(now: instant("2026-01-25T20:00:00Z")) { $0.phases = [.reminders] }
        #expect(try db.query("select scheduled_at from notification_queue").first?["scheduled_at"].date == instant("2026-01-25T20:00:00Z"))
    }

    @Test func cancellingDisablingDeletingOrReschedulingWithdrawsUnsentRows() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(push: true, quiet: ("22:00", "07:00"), action: "defer")
        try f.token(p)
        func once(_ type: String, _ at: String) throws -> UUID {
            try db.query("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', \(type), \(instant(at))) returning id")
                .first!["id"].uuid!
        }
        let cancelled = try once("test_start", "2026-01-25T23:00:00Z")
        let disabled = try once("test_start", "2026-01-25T23:10:00Z")
        let deleted = try once("washout", "2026-01-25T23:20:00Z")
        let moved = try once("test_start", "2026-01-25T23:30:00Z")
        let delivered = try once("daily", "2026-01-25T21:00:00Z")
        let worker = Worker(url: tdb.url, settings: logAll)
        // 21:00: the daily one goes out.
        _ = worker.run(now: instant("2026-01-25T21:00:00Z")) { $0.phases = [.reminders, .deliver] }
        // 23:40, inside quiet hours: the other four are enqueued and deferred to 07:00 — waiting, not sent.
        _ = worker.run(now: instant("2026-01-25T23:40:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try f.count("select count(*)::int from notification_queue where status = 'pending' and run_after = \(instant("2026-01-26T07:00:00Z"))") == 4)

        try db.execute("update reminders set cancelled_at = now() where id = \(cancelled)")
        try db.execute("update reminders set enabled = false where id = \(disabled)")
        try db.execute("delete from reminders where id = \(deleted)")
        try db.execute("update reminders set at = \(instant("2026-01-26T09:00:00Z")) where id = \(moved)")
        try db.execute("update reminders set enabled = false where id = \(delivered)")
        let rows = try db.query("""
            select reminder_id, status, skip_reason, (select string_agg(e.event || ':' || coalesce(e.details->>'reason', ''), ',')
                                                       from notification_events e where e.queue_id = q.id and e.event = 'cancelled') as ev
              from notification_queue q
            """)
        func row(_ r: UUID) -> PGRow? { rows.first { $0["reminder_id"].uuid == r } }
        for (r, why) in [(cancelled, "reminder cancelled"), (disabled, "reminder disabled"), (deleted, "reminder deleted"),
                         (moved, "reminder rescheduled")] {
            #expect(row(r)?["status"].string == "skipped")
            #expect(row(r)?["skip_reason"].string == "cancelled")
            #expect(row(r)?["ev"].string == "cancelled:\(why)")
        }
        // What was sent stays sent.
        #expect(row(delivered)?["status"].string == "sent")
        // The rescheduled one is enqueued again at its new time, once.
        _ = worker.run(now: instant("2026-01-26T09:00:00Z")) { $0.phases = [.reminders, .deliver] }
        _ = worker.run(now: instant("2026-01-26T09:05:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved) and status = 'sent'") == 1)
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved)") == 2)
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id in (\(cancelled), \(disabled), \(deleted)) and status <> 'skipped'") == 0)
    }

    /// A reminder whose time is no real instant (-infinity, a BC date, a dose whose reminder falls before
    /// year 1) is skipped: written as it is, PostgreSQL refused the insert and rolled back the reminders of
    /// everyone, every pass. The others are enqueued.
    @Test func aReminderAtMinusInfinityOrBCIsSkippedAndTheOthersEnqueued() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile()
        func reminder(_ type: String, _ at: String, endsAt: String? = nil) throws -> UUID {
            try db.query("""
                insert into reminders (user_id, schedule, reminder_type, at, ends_at)
                values (\(p), 'once', \(type), \(at)::timestamptz, \(endsAt)::timestamptz) returning id
                """).first!["id"].uuid!
        }
        let bad = [
            try reminder("test_start", "-infinity"),
            try reminder("dose", "-infinity"),                                  // 30 minutes before: year 0
            try reminder("test_start", "0044-03-15 12:00:00+00 BC"),
            try reminder("dose", "0001-01-01 00:10:00+00"),                      // reminded in year 0
            try reminder("washout", "-infinity", endsAt: "0100-06-01 00:00:00+00 BC"),
        ]
        let good = try reminder("test_start", "2026-01-25T11:00:00Z")
        let (summary, code) = Worker(url: tdb.url).run(now: instant("2026-01-25T12:00:00Z")) { $0.phases = [.reminders] }
        #expect(code == .ok)
        #expect(summary.phaseErrors.isEmpty, "\(summary.phaseErrors)")
        #expect(summary.generated[.reminders] == 1)
        #expect(try db.query("select reminder_id from notification_queue").map { $0["reminder_id"].uuid } == [good])
        // Left as they were, to be corrected: not marked enqueued.
        #expect(try f.count("select count(*)::int from reminders where id = any(\(bad)::uuid[]) and enqueued_at is null") == bad.count)
        #expect(try f.count("select count(*)::int from reminders where id = \(good) and enqueued_at is not null") == 1)
    }

    /// The app edits a reminder after the phase read it and before it wrote: the phase's marks overwrote
    /// the trigger's reset and its rows were enqueued for a reminder cancelled, disabled, deleted or
    /// moved (the trigger had nothing to withdraw yet). Now only reminders still as read are acted on.
    @Test func anEditBetweenTheReadAndTheWriteIsNotOverwritten() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let app = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile()
        func reminder(_ sql: SQL) throws -> UUID { try db.query(sql).first!["id"].uuid! }
        func once(_ at: String) throws -> UUID {
            try reminder("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'test_start', \(instant(at))) returning id")
        }
        let kept = try once("2026-01-25T11:00:00Z")
        let cancelled = try once("2026-01-25T11:00:00Z")
        let deleted = try once("2026-01-25T11:00:00Z")
        let moved = try once("2026-01-25T11:00:00Z")
        let disabledDaily = try reminder("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '09:00') returning id")
        let retimedDaily = try reminder("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '10:00') returning id")

        let now = instant("2026-01-25T12:00:00Z")
        let phase = ReminderPhase(db: db, passId: "test-pass", now: now, logger: Logger(label: "test"))
        let plan = try phase.plan()
        #expect(plan.due.count == 6)
        // The app, between the read and the write.
        try app.execute("update reminders set cancelled_at = now() where id = \(cancelled)")
        try app.execute("delete from reminders where id = \(deleted)")
        try app.execute("update reminders set at = \(instant("2026-01-25T18:00:00Z")) where id = \(moved)")
        try app.execute("update reminders set enabled = false where id = \(disabledDaily)")
        try app.execute("update reminders set local_time = '13:00' where id = \(retimedDaily)")
        #expect(try phase.write(plan) == 1)

        #expect(try db.query("select reminder_id from notification_queue").map { $0["reminder_id"].uuid } == [kept])
        let marks = try db.query("select id, enqueued_at, last_enqueued_for::text as last from reminders")
        func mark(_ id: UUID) -> PGRow? { marks.first { $0["id"].uuid == id } }
        #expect(mark(kept)?["enqueued_at"].date != nil)
        for id in [cancelled, moved] { #expect(mark(id)?["enqueued_at"].date == nil) }
        for id in [disabledDaily, retimedDaily] { #expect(mark(id)?["last"].string == nil) }
        // The moved one and the retimed one come due at their new times, once each.
        let worker = Worker(url: tdb.url)
        _ = worker.run(now: instant("2026-01-25T13:00:00Z")) { $0.phases = [.reminders] }
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(retimedDaily) and scheduled_at = \(instant("2026-01-25T13:00:00Z"))") == 1)
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved)") == 0)
        _ = worker.run(now: instant("2026-01-25T18:00:00Z")) { $0.phases = [.reminders] }
        _ = worker.run(now: instant("2026-01-25T18:05:00Z")) { $0.phases = [.reminders] }
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved) and scheduled_at = \(instant("2026-01-25T18:00:00Z"))") == 1)
        #expect(try f.count("select count(*)::int from notification_queue") == 3)
    }

    @Test func eachTypeHasItsToggle() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let types = ["daily", "dose", "washout", "test_start"]
        let columns = ["daily": "daily_reminder_enabled", "dose": "dose_reminder_enabled",
                       "washout": "washout_notifications_enabled", "test_start": "test_start_reminder_enabled"]
        var people: [String: UUID] = [:]
        for type in types {
            let p = try f.profile(push: true)
            try f.token(p)
            try db.execute("update user_profiles set \(unescaped: columns[type]!) = false where user_id = \(p)")
            // Every type for every person; only the one turned off is skipped.
            for t in types {
                try db.execute("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', \(t), \(instant("2026-01-25T12:00:00Z")))")
            }
            people[type] = p
        }
        // Forecast and prompt toggles too.
        let noForecast = try f.profile(push: true)
        try f.token(noForecast)
        try db.execute("update user_profiles set forecast_notifications_enabled = false, prompt_notifications_enabled = false where user_id = \(noForecast)")
        try f.enqueue(to: noForecast, channel: "push", kind: "daily_forecast", payload: #"{"date":"2026-01-25"}"#, at: instant("2026-01-25T12:00:00Z"))
        try f.enqueue(to: noForecast, channel: "push", kind: "prompt", at: instant("2026-01-25T12:00:00Z"))

        try tdb.withoutSpacing()
        let (s, _) = Worker(url: tdb.url, settings: logAll).run(now: instant("2026-01-25T12:40:00Z"), drain: true) {
            $0.phases = [.reminders, .deliver]
        }
        #expect(s.skipReasons[.typeDisabled] == 6)
        for type in types {
            let rows = try db.query("""
                select payload->>'reminder_type' as t, status, skip_reason from notification_queue where recipient_user_id = \(people[type]!)
                """)
            #expect(rows.count == 4)
            for r in rows {
                if r["t"].string == type {
                    #expect(r["status"].string == "skipped" && r["skip_reason"].string == "type_disabled")
                } else {
                    #expect(r["status"].string == "sent", "\(type) off: \(r["t"].string ?? "") should be sent")
                }
            }
        }
        #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id = \(noForecast) and skip_reason = 'type_disabled'") == 2)
    }

    /// Quiet hours 22:00–07:00 at the defaults (level `none`, action `skip`, allow critical on).
    @Test func criticalRemindersAreNeverDroppedAtTheDefaults() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(push: true, quiet: ("22:00", "07:00"))
        try f.token(p)
        let critical = try db.query("""
            insert into reminders (user_id, schedule, reminder_type, at, critical) values (\(p), 'once', 'test_start', \(instant("2026-01-25T23:00:00Z")), true) returning id
            """).first!["id"].uuid!
        let plain = try db.query("""
            insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'test_start', \(instant("2026-01-25T23:00:00Z"))) returning id
            """).first!["id"].uuid!
        // A dose at 06:40: its reminder (06:10) is within the hour of the dose → through quiet hours.
        let dose = try db.query("""
            insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'dose', \(instant("2026-01-26T06:40:00Z"))) returning id
            """).first!["id"].uuid!
        let worker = Worker(url: tdb.url, settings: logAll)
        _ = worker.run(now: instant("2026-01-25T23:00:00Z")) { $0.phases = [.reminders, .deliver] }
        func status(_ r: UUID) throws -> PGRow { try db.query("select status, skip_reason, run_after from notification_queue where reminder_id = \(r)").first! }
        #expect(try status(plain)["skip_reason"].string == "quiet_hours")
        #expect(try status(critical)["status"].string == "pending")
        #expect(try status(critical)["run_after"].date == instant("2026-01-26T07:00:00Z"))
        _ = worker.run(now: instant("2026-01-26T06:10:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try status(dose)["status"].string == "sent")
        let trail = try db.query("""
            select e.details->>'quiet_override' as o from notification_trail e join notification_queue q on q.id = e.queue_id
             where q.reminder_id = \(dose) and e.event = 'sent'
            """).first
        #expect(trail?["o"].string == "dose_within_hour")
        _ = worker.run(now: instant("2026-01-26T07:00:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try status(critical)["status"].string == "sent")
    }

    // MARK: Adaptive frequency (seed 001 §Testing Strategy, "Adherence Adaptation")

    struct Adaptive {
        let db: PGConnection
        let user: UUID
        let worker: Worker

        func logs(_ dates: [String]) throws {
            for d in dates { try db.execute("insert into daily_logs (user_id, log_date, logged_at) values (\(user), \(d)::date, \(d)::date + time '10:00')") }
        }
        /// The reminders and deliver phases at 20:00 UTC on `date`.
        func evening(_ date: String) -> (frequency: String?, daily: PGRow?) {
            _ = worker.run(now: instant("\(date)T20:00:00Z")) { $0.phases = [.reminders, .deliver] }
            let f = try? db.query("select current_frequency from user_profiles where user_id = \(user)").first?["current_frequency"].string
            let row = try? db.query("""
                select status, skip_reason from notification_queue where recipient_user_id = \(user)
                   and payload->>'reminder_type' = 'daily' and payload->>'date' = \(date)
                """).first
            return (f, row)
        }
    }

    func adaptivePerson(_ tdb: TestDB, _ db: PGConnection) throws -> Adaptive {
        let f = Fixtures(db: db)
        let p = try f.profile(push: true)
        try f.token(p)
        try db.execute("update user_profiles set adaptive_frequency_enabled = true where user_id = \(p)")
        try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '20:00')")
        return Adaptive(db: db, user: p, worker: Worker(url: tdb.url, settings: logAll))
    }

    @Test func sevenDaysOfConsistentLoggingReduceTheFrequencyAndTwoMissedLogsRestoreIt() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let a = try adaptivePerson(tdb, db)
        // Days 1–7 (Feb 1–7) logged; each evening the reminder goes (full, and not yet 7 days).
        for d in 1...7 {
            try a.logs(["2026-02-0\(d)"])
            if d < 7 {
                let e = a.evening("2026-02-0\(d)")
                #expect(e.frequency == "full")
            }
        }
        // Feb 8, evening, not logged yet: seven consecutive days → reduced; the reminder still goes
        // (nothing logged today).
        var e = a.evening("2026-02-08")
        #expect(e.frequency == "reduced")
        #expect(e.daily?["status"].string == "sent")
        let score = try JSONValue.parse(try db.query("select adherence_score::text as s from user_profiles where user_id = \(a.user)").first?["s"].string ?? "")
        #expect(score["daily_log_streak"]?.intValue == 7)
        #expect(score["missed_logs_last_7_days"]?.intValue == 0)
        #expect(score["overall_score"] != nil && score["total_reminders"] != nil && score["missed_reminders"] != nil)
        // Feb 9, logged in the morning: at reduced frequency the evening reminder is not needed.
        try a.logs(["2026-02-08", "2026-02-09"])
        e = a.evening("2026-02-09")
        #expect(e.frequency == "reduced")
        #expect(e.daily?["status"].string == "skipped")
        #expect(e.daily?["skip_reason"].string == "adaptive_frequency")
        let trail = try db.query("""
            select e.details->>'frequency' as f from notification_trail e join notification_queue q on q.id = e.queue_id
             where q.recipient_user_id = \(a.user) and e.event = 'skipped' and e.reason = 'adaptive_frequency'
            """).first
        #expect(trail?["f"].string == "reduced")
        // Feb 10 and 11 not logged: one missed log changes nothing…
        e = a.evening("2026-02-11")
        #expect(e.frequency == "reduced")
        #expect(e.daily?["status"].string == "sent")
        // …two restore full frequency.
        e = a.evening("2026-02-12")
        #expect(e.frequency == "full")
        #expect(e.daily?["status"].string == "sent")
    }

    @Test func consistentDoseTimingDisablesThePreDoseReminder() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let a = try adaptivePerson(tdb, db)
        // Three doses of the test step, each taken within five minutes of its time.
        for d in 1...3 {
            try db.execute("""
                insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at)
                values (\(a.user), 'step-1', \(instant("2026-02-0\(d)T08:00:00Z")), \(instant("2026-02-0\(d)T08:04:00Z")))
                """)
        }
        func dose(_ at: String) throws -> UUID {
            try db.query("""
                insert into reminders (user_id, schedule, reminder_type, at, related_entity_type, related_entity_id)
                values (\(a.user), 'once', 'dose', \(instant(at)), 'test_step', 'step-1') returning id
                """).first!["id"].uuid!
        }
        let fourth = try dose("2026-02-04T08:00:00Z")
        _ = a.worker.run(now: instant("2026-02-04T07:30:00Z")) { $0.phases = [.reminders, .deliver] }
        let skipped = try db.query("select status, skip_reason from notification_queue where reminder_id = \(fourth)").first
        #expect(skipped?["status"].string == "skipped")
        #expect(skipped?["skip_reason"].string == "adaptive_frequency")
        // The fourth dose is taken 90 minutes late: the fifth dose's reminder is back.
        try db.execute("""
            insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at)
            values (\(a.user), 'step-1', \(instant("2026-02-04T08:00:00Z")), \(instant("2026-02-04T09:30:00Z")))
            """)
        let fifth = try dose("2026-02-05T08:00:00Z")
        _ = a.worker.run(now: instant("2026-02-05T07:30:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try db.query("select status from notification_queue where reminder_id = \(fifth)").first?["status"].string == "sent")
        // Without adaptive frequency every dose reminder goes.
        try db.execute("update user_profiles set adaptive_frequency_enabled = false where user_id = \(a.user)")
        try db.execute("insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at) values (\(a.user), 'step-1', \(instant("2026-02-05T08:00:00Z")), \(instant("2026-02-05T08:00:00Z")))")
        try db.execute("insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at) values (\(a.user), 'step-1', \(instant("2026-02-06T08:00:00Z")), \(instant("2026-02-06T08:00:00Z")))")
        let seventh = try dose("2026-02-07T08:00:00Z")
        _ = a.worker.run(now: instant("2026-02-07T07:30:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try db.query("select status from notification_queue where reminder_id = \(seventh)").first?["status"].string == "sent")
    }

    // MARK: Rate limits (seed 001: 10 a day, 1 hour between two of the same type)

    @Test func theDailyCapCountsANotificationOnceAcrossChannels() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(email: "p@example.com", push: true, inApp: true, emailOn: true)
        try f.token(p)
        let at = instant("2026-01-25T12:00:00Z")
        func row(_ channel: String, group: String, minute: Int) throws -> UUID {
            try db.query("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at, run_after, notification_group)
                values (\(p), \(p), \(channel), 'reminder', '{"title":"t","body":"b"}', \(at), \(at.addingTimeInterval(Double(minute))), \(group))
                returning id
                """).first!["id"].uuid!
        }
        // Nine notifications, each on one channel (three per channel: a per-channel cap would allow 30 more),
        let channels = ["push", "email", "in_app"]
        for i in 0..<9 { _ = try row(channels[i % 3], group: "g\(i)", minute: i) }
        // a tenth on all three channels,
        let tenth = try channels.map { try row($0, group: "g9", minute: 10) }
        // and an eleventh, by push.
        let eleventh = try row("push", group: "g10", minute: 11)
        try tdb.withoutSpacing()
        let (s, _) = Worker(url: tdb.url, settings: logAll).run(now: at.addingTimeInterval(60))
        #expect(s.sent == 12)
        for id in tenth { #expect(try f.row(id)["status"].string == "sent") }
        let held = try f.row(eleventh)
        #expect(held["status"].string == "pending")
        #expect(held["run_after"].date == instant("2026-01-26T00:00:00Z"))
        #expect(try f.count("select count(*)::int from notification_events where queue_id = \(eleventh) and reason = 'rate_limit_daily'") == 1)
    }

    @Test func spacingIsPerReminderType() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(push: true)
        try f.token(p)
        let now = instant("2026-01-25T12:00:00Z")
        // A daily reminder sent ten minutes ago.
        try db.execute("""
            insert into notification_queue (recipient_user_id, channel, kind, payload, status, sent_at, scheduled_at)
            values (\(p), 'push', 'reminder', '{"reminder_type":"daily"}', 'sent', \(now.addingTimeInterval(-600)), \(now.addingTimeInterval(-600)))
            """)
        let dose = try f.enqueue(to: p, channel: "push", kind: "reminder", payload: #"{"reminder_type":"dose"}"#, at: now)
        let daily = try f.enqueue(to: p, channel: "push", kind: "reminder", payload: #"{"reminder_type":"daily"}"#, at: now)
        _ = Worker(url: tdb.url, settings: logAll).run(now: now)
        #expect(try f.row(dose)["status"].string == "sent")
        let held = try f.row(daily)
        #expect(held["status"].string == "pending")
        #expect(held["run_after"].date == now.addingTimeInterval(3000))
    }

    @Test func everyPromptTheUserAskedForIsDelivered() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(push: true)
        try f.token(p)
        // Ten other notifications earlier today: the cap is used up.
        try db.execute("""
            insert into notification_queue (recipient_user_id, channel, kind, payload, status, sent_at, scheduled_at)
            select \(p), 'push', 'reminder', jsonb_build_object('reminder_type', 'daily'), 'sent',
                   \(instant("2026-01-25T05:00:00Z"))::timestamptz + g * interval '1 minute', \(instant("2026-01-25T05:00:00Z"))
              from generate_series(1, 10) g
            """)
        try db.execute("insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(p), 40, 7, 22)")
        let worker = Worker(url: tdb.url, settings: logAll)
        _ = worker.run(now: instant("2026-01-25T06:00:00Z")) { $0.phases = [.prompts] }
        #expect(try f.count("select count(*)::int from notification_queue where kind = 'prompt'") == 40)
        // A pass every 30 minutes through the waking window: each prompt goes when due, none held back.
        var t = instant("2026-01-25T07:00:00Z")
        while t <= instant("2026-01-25T22:00:00Z") {
            _ = worker.run(now: t, drain: true) { $0.phases = [.deliver] }
            t = t.addingTimeInterval(1800)
        }
        #expect(try f.count("select count(*)::int from notification_queue where kind = 'prompt' and status = 'sent'") == 40)
        #expect(try f.count("select count(*)::int from notification_events where reason like 'rate_limit%'") == 0)
    }
}
