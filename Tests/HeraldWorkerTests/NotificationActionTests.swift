import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// What the person did with a notification does what it says (sql/037_notification_entries.sql):
/// `opened` reads the notification's entry, `dose_marked_taken` writes the dose into
/// `dose_events`, `symptom_logged` writes today's `daily_logs` row — the rows the adherence analyzer
/// reads. Real passes deliver the rows first; the actions are called as PostgREST calls them.
@Suite struct NotificationActionTests {
    typealias App = AppContractTests

    /// A notification on push and in-app (one group) is one entry: opening the push reads it.
    @Test func openingThePushReadsTheInAppCopyOfTheSameNotification() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile()
            try f.token(a, provider: "expo")
            let now = Date()
            // One notification on two channels (one group), and an unrelated in-app notification.
            let rows = try db.query("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at,
                                                run_after, notification_group)
                select \(a), \(a), c, 'reminder', '{"title":"Dose","body":"now"}', \(now), \(now), 'g-1'
                  from unnest(array['push', 'in_app']) c
                returning id, channel
                """)
            let push = try #require(rows.first { $0["channel"].string == "push" }?["id"].uuid)
            let other = try f.enqueue(to: a, channel: "in_app", kind: "system", at: now)
            try tdb.withoutSpacing()
            let (summary, _) = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_PUSH": "log", "HERALD_LOG_ADAPTER_FILE": "/dev/null"])
                .run(now: now)
            #expect(summary.sent == 3)

            try App.asUser(db, a)
            #expect(try App.json(db, "select get_notifications()")["unread_count"]?.intValue == 2)
            let opened = try App.json(db, "select record_notification_action(\(push), 'opened')")
            #expect(opened["marked_read"]?.boolValue == true, "one entry for the push and its in-app copy")
            #expect(try db.query("select is_read from inbox where notification_key = 'g-1'").first?["is_read"].bool == true)
            #expect(try db.query("select is_read from inbox where id = \(other)").first?["is_read"].bool == false)
            #expect(try App.json(db, "select get_notifications()")["unread_count"]?.intValue == 1)

            // Another user opening A's push reads nothing.
            try App.asUser(db, try f.profile())
            App.fails(db, "select record_notification_action(\(push), 'opened')", "validation_error")
            #expect(try db.query("select is_read from inbox where id = \(other)").first?["is_read"].bool == false)
        }
    }

    @Test func aDoseMarkedTakenIsADoseEventTheAnalyzerReads() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile()
            try f.token(a, provider: "expo")
            let now = Date()
            let doseAt = "2026-11-23T10:00:00Z"
            let push = try f.enqueue(to: a, channel: "push", kind: "reminder",
                                     payload: #"{"title":"Dose soon","reminder_type":"dose","dose_at":"\#(doseAt)"}"#, at: now)
            let noDose = try f.enqueue(to: a, channel: "push", kind: "system", at: now)
            try db.execute("""
                update notification_queue set related_entity_type = 'test_step', related_entity_id = 'step-2' where id = \(push)
                """)
            try tdb.withoutSpacing()
            let (summary, _) = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_PUSH": "log", "HERALD_LOG_ADAPTER_FILE": "/dev/null"])
                .run(now: now)
            #expect(summary.sent == 2)

            try App.asUser(db, a)
            let taken = try App.json(db, "select record_notification_action(\(push), 'dose_marked_taken')")
            #expect(taken["dose_recorded"]?.boolValue == true)
            let dose = try db.query("""
                select related_entity_id, scheduled_at = \(doseAt)::timestamptz as right_time, taken_at from dose_events
                 where user_id = \(a)
                """)
            #expect(dose.count == 1)
            #expect(dose.first?["related_entity_id"].string == "step-2")
            #expect(dose.first?["right_time"].bool == true)
            let first = dose.first?["taken_at"].date
            #expect(first != nil)
            // Marked again: still one dose, taken at the first time.
            _ = try App.json(db, "select record_notification_action(\(push), 'dose_marked_taken')")
            let again = try db.query("select taken_at from dose_events where user_id = \(a)")
            #expect(again.count == 1 && again.first?["taken_at"].date == first)

            // A notification that names no dose: the action is recorded, no dose is made up.
            let none = try App.json(db, "select record_notification_action(\(noDose), 'dose_marked_taken')")
            #expect(none["action"]?.stringValue == "dose_marked_taken")
            #expect(none["dose_recorded"]?.boolValue == false)
            #expect(try f.count("select count(*) from dose_events") == 1)
        }
    }

    /// The payload is the app's to write: only a finite timestamp is a dose time.
    @Test func onlyAFiniteTimestampIsADoseTime() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            for text in ["infinity", "-infinity", "now", " Today ", "epoch", "not a time", "2026-13-40", ""] {
                #expect(try db.query("select herald_try_timestamptz(\(text)) is null as n").first?["n"].bool == true, "\(text)")
            }
            #expect(try db.query("select herald_try_timestamptz('2026-11-23T10:00:00Z') = '2026-11-23T10:00:00Z'::timestamptz as ok")
                        .first?["ok"].bool == true)
        }
    }

    @Test func aDoseIsStillKnownAfterTheQueuePrunedItsRow() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile()
            try db.execute("update user_profiles set dose_reminder_advance_minutes = 45 where user_id = \(a)")
            let id = UUID()
            try db.execute("""
                insert into inbox (id, user_id, channel, type, title, body, scheduled_at,
                                   delivered_at, related_entity_type, related_entity_id)
                values (\(id), \(a), 'push', 'reminder', 'Dose soon', 'in 45 minutes', '2026-11-20T09:15:00Z',
                        '2026-11-20T09:15:02Z', 'test_step', 'step-7')
                """)
            try App.asUser(db, a)
            #expect(try App.json(db, "select record_notification_action(\(id), 'dose_marked_taken')")["dose_recorded"]?.boolValue == true)
            let dose = try db.query("""
                select scheduled_at = '2026-11-20T10:00:00Z'::timestamptz as right_time from dose_events
                 where user_id = \(a) and related_entity_id = 'step-7'
                """)
            #expect(dose.first?["right_time"].bool == true, "the entry's scheduled time plus the person's advance")
        }
    }

    @Test func aSymptomLoggedIsTodaysLogInThePersonsTimeZone() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            // Kiritimati is UTC+14: its date differs from UTC's for 14 hours of every day.
            let a = try f.profile(timezone: "Pacific/Kiritimati")
            let id = try f.enqueue(to: a, channel: "in_app", kind: "prompt", payload: "{}", at: Date())
            _ = Worker(url: tdb.url).run(now: Date())
            #expect(try f.row(id)["status"].string == "sent")

            try App.asUser(db, a)
            for _ in 0..<2 {
                let logged = try App.json(db, "select record_notification_action(\(id), 'symptom_logged')")
                #expect(logged["log_recorded"]?.boolValue == true)
            }
            let rows = try db.query("""
                select log_date = (now() at time zone 'Pacific/Kiritimati')::date as local_today from daily_logs where user_id = \(a)
                """)
            #expect(rows.count == 1, "one log per local day, however often it is marked")
            #expect(rows.first?["local_today"].bool == true)
            // Dismissing writes nothing but the action.
            _ = try App.json(db, "select record_notification_action(\(id), 'dismissed')")
            #expect(try f.count("select count(*) from daily_logs") == 1)
            #expect(try f.count("select count(*) from dose_events") == 0)
        }
    }
}
