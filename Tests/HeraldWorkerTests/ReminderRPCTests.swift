import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Reminders as the app's own (sql/038_app_reminders.sql): the reminders design's NotificationScheduler
/// as RPCs — `schedule_reminder`, `reschedule_reminder`, `cancel_reminder`, `cancel_reminders_by_type`,
/// `get_scheduled_reminders` — each called as PostgREST calls it (role `authenticated`, the caller in
/// the JWT's claims) on a database set up as Supabase sets one up. A caller acts on their own
/// reminders only; another user's id is `not_found`, like an unknown one; every bad argument is a
/// `validation_error` naming it.
@Suite struct ReminderRPCTests {
    /// Calls `sql` as `user` (nil: no caller), back as the owner afterwards.
    static func call(_ db: PGConnection, as user: UUID?, _ sql: SQL) throws -> JSONValue {
        try SecurityTests.act(db, as: "authenticated", user)
        defer { try? SecurityTests.owner(db) }
        return try AppContractTests.json(db, sql)
    }

    /// Expects `code` (as herald_raise raises it: SQLSTATE PTxyz, the code as the message) with an
    /// explanation that names `naming` (for a bad argument, first).
    static func refused(_ db: PGConnection, as user: UUID?, _ sql: SQL, _ code: String, naming: String,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let state = ["unauthorized": "PT401", "not_found": "PT404", "user_not_found": "PT404", "validation_error": "PT422"][code]
        do {
            _ = try call(db, as: user, sql)
            Issue.record("expected \(code) naming \(naming), but it succeeded", sourceLocation: sourceLocation)
        } catch let error as PGError {
            #expect(error.sqlState == state && error.message == code, "\(error)", sourceLocation: sourceLocation)
            // A bad argument's explanation starts with its name ("weekday must be 1 (Sunday) to 7 (Saturday)").
            let named = code == "validation_error" || code == "not_found" ? error.detail?.hasPrefix(naming) : error.detail?.contains(naming)
            #expect(named == true, "\(naming) is not named: \(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    /// An instant `days` from now, in Unix milliseconds, as the app sends times.
    static func ms(days: Double) -> String { String(Int((Date().timeIntervalSince1970 + days * 86_400) * 1000)) }

    static func ids(_ v: JSONValue) -> Set<String> { Set(AppContractTests.array(v).compactMap { $0["id"]?.stringValue }) }

    @Test func eachCallerSchedulesListsAndCancelsOnlyTheirOwnReminders() throws {
        try SecurityTests.supabase { tdb, db in
            let (a, b) = (UUID(), UUID())
            for user in [a, b] { try db.execute("insert into user_profiles (user_id, timezone) values (\(user), 'Europe/London')") }

            let weekly = try Self.call(db, as: a, """
                select schedule_reminder(reminder_type => 'daily', trigger => 'weekly', weekday => 2, local_time => '09:00',
                                         title_en => 'Log your week', title_ar => 'سجّل أسبوعك', body_en => 'Two minutes',
                                         body_ar => 'دقيقتان')
                """)
            #expect(weekly["trigger"]?["type"]?.stringValue == "weekly")
            #expect(weekly["trigger"]?["weekday"]?.intValue == 2 && weekly["trigger"]?["hour"]?.intValue == 9)
            #expect(weekly["trigger"]?["repeats"]?.boolValue == true && weekly["scheduled_time"] == .null)
            #expect(weekly["title_ar"]?.stringValue == "سجّل أسبوعك" && weekly["body_en"]?.stringValue == "Two minutes")
            #expect(weekly["status"]?.stringValue == "scheduled" && weekly["user_id"]?.stringValue == a.lowercased)
            let at = Self.ms(days: 2)
            let dose = try Self.call(db, as: a, """
                select schedule_reminder(reminder_type => 'dose', trigger => 'once', at => \(at),
                                         related_entity_type => 'test_step', related_entity_id => 'step-3')
                """)
            // The notification goes dose_reminder_advance_minutes (30) before the dose.
            #expect(dose["scheduled_time"]?.intValue == Int(at)! - 30 * 60_000)
            #expect(dose["trigger"]?["at"]?.intValue == Int(at)! && dose["related_entity_id"]?.stringValue == "step-3")
            // The design's `date` trigger is `once`; ISO 8601 with an offset is read as well as milliseconds.
            let washout = try Self.call(db, as: a, """
                select schedule_reminder('washout', 'date', at => \(ISO8601.string(Date().addingTimeInterval(86_400))),
                                         ends_at => \(Self.ms(days: 4)))
                """)
            #expect(washout["trigger"]?["type"]?.stringValue == "once" && washout["ends_at"]?.intValue != nil)
            let daily = try Self.call(db, as: a, "select schedule_reminder('dose', 'daily', '08:15')")
            let theirs = try Self.call(db, as: b, "select schedule_reminder('test_start', 'once', at => \(Self.ms(days: 1)))")
            let mine = [weekly, dose, washout, daily].compactMap { $0["id"]?.stringValue }
            let theirID = try #require(theirs["id"]?.stringValue)

            #expect(Self.ids(try Self.call(db, as: a, "select get_scheduled_reminders()")) == Set(mine))
            #expect(Self.ids(try Self.call(db, as: a, "select get_scheduled_reminders('dose')")) == [mine[1], mine[3]])
            #expect(Self.ids(try Self.call(db, as: b, "select get_scheduled_reminders()")) == [theirID])
            #expect(Self.ids(try Self.call(db, as: a, "select get_scheduled_reminders('test_start')")).isEmpty)

            // Another user's reminder is not found, like an unknown one, and is left as it was.
            for sql: SQL in ["select cancel_reminder(\(theirID)::uuid)", "select reschedule_reminder(\(theirID)::uuid, at => \(Self.ms(days: 3)))",
                             "select cancel_reminder(\(UUID()))", "select reschedule_reminder(\(UUID()), local_time => '10:00')"] {
                Self.refused(db, as: a, sql, "not_found", naming: "reminder_id")
            }
            #expect(Self.ids(try Self.call(db, as: b, "select get_scheduled_reminders()")) == [theirID])
            // B's cancelling by type leaves A's of the type alone.
            _ = try Self.call(db, as: b, "select cancel_reminders_by_type('dose')")
            #expect(Self.ids(try Self.call(db, as: a, "select get_scheduled_reminders('dose')")).count == 2)

            let cancelled = try Self.call(db, as: a, "select cancel_reminder(\(mine[0])::uuid)")
            #expect(cancelled["status"]?.stringValue == "cancelled" && cancelled["cancelled_at"]?.intValue != nil)
            let again = try Self.call(db, as: a, "select cancel_reminder(\(mine[0])::uuid)")
            #expect(again == cancelled, "cancelling twice answers as the first time")
            Self.refused(db, as: a, "select reschedule_reminder(\(mine[0])::uuid, local_time => '10:00')", "not_found", naming: "reminder_id")
            let byType = try Self.call(db, as: a, "select cancel_reminders_by_type('dose')")
            #expect(byType["cancelled_count"]?.intValue == 2)
            #expect(Set(AppContractTests.array(byType["reminder_ids"]).compactMap(\.stringValue)) == [mine[1], mine[3]])
            #expect(Self.ids(try Self.call(db, as: a, "select get_scheduled_reminders()")) == [mine[2]])
            #expect(try Self.call(db, as: a, "select cancel_reminders_by_type('dose')")["cancelled_count"]?.intValue == 0)
            #expect(try db.query("select count(*)::int as n from reminders where user_id = \(b) and cancelled_at is null")
                .first?["n"].int == 1)
        }
    }

    /// A reminder the caller can keep: every argument checked before anything is written.
    static let refusals: [(SQL, String)] = {
        let soon = ms(days: 1)
        return [
            ("select schedule_reminder(null, 'once', at => \(soon))", "reminder_type"),
            ("select schedule_reminder('daily_log', 'once', at => \(soon))", "reminder_type"),
            ("select schedule_reminder('daily', null, '09:00')", "trigger"),
            ("select schedule_reminder('daily', 'hourly', '09:00')", "trigger"),
            ("select schedule_reminder('washout', 'daily', '09:00')", "trigger"),
            ("select schedule_reminder('test_start', 'weekly', '09:00', 2)", "trigger"),
            ("select schedule_reminder('daily', 'once', '09:00', at => \(soon))", "local_time"),
            ("select schedule_reminder('daily', 'once', weekday => 2, at => \(soon))", "weekday"),
            ("select schedule_reminder('daily', 'once')", "at"),
            ("select schedule_reminder('daily', 'once', at => 'tomorrow')", "at"),
            ("select schedule_reminder('daily', 'once', at => '2027-03-08 09:00')", "at"),
            ("select schedule_reminder('daily', 'once', at => '1700000000000')", "at"),
            ("select schedule_reminder('daily', 'once', at => \(ms(days: 400)))", "at"),
            ("select schedule_reminder('daily', 'daily')", "local_time"),
            ("select schedule_reminder('daily', 'daily', '24:00')", "local_time"),
            ("select schedule_reminder('daily', 'daily', '9am')", "local_time"),
            ("select schedule_reminder('daily', 'daily', '09:00', 3)", "weekday"),
            ("select schedule_reminder('daily', 'daily', '09:00', at => \(soon))", "at"),
            ("select schedule_reminder('dose', 'weekly', '09:00')", "weekday"),
            ("select schedule_reminder('dose', 'weekly', '09:00', 0)", "weekday"),
            ("select schedule_reminder('dose', 'weekly', '09:00', 8)", "weekday"),
            ("select schedule_reminder('test_start', 'once', at => \(soon), ends_at => \(ms(days: 2)))", "ends_at"),
            ("select schedule_reminder('washout', 'once', at => \(soon), ends_at => \(soon))", "ends_at"),
            ("select schedule_reminder('washout', 'once', at => \(soon), ends_at => 'later')", "ends_at"),
            ("select schedule_reminder('daily', 'daily', '09:00', title_en => ' ')", "title_en"),
            ("select schedule_reminder('daily', 'daily', '09:00', title_ar => \(String(repeating: "ع", count: 257)))", "title_ar"),
            ("select schedule_reminder('daily', 'daily', '09:00', body_en => \(String(repeating: "b", count: 2049)))", "body_en"),
            ("select schedule_reminder('daily', 'daily', '09:00', body_ar => '')", "body_ar"),
            ("select schedule_reminder('dose', 'daily', '09:00', related_entity_id => 'step-1')", "related_entity_type"),
            ("select schedule_reminder('dose', 'daily', '09:00', related_entity_type => 'test_step')", "related_entity_id"),
            ("select schedule_reminder('dose', 'daily', '09:00', related_entity_type => 'Test Step', related_entity_id => 's')", "related_entity_type"),
            ("select schedule_reminder('dose', 'daily', '09:00', related_entity_type => 'test_step', related_entity_id => \(String(repeating: "s", count: 257)))", "related_entity_id"),
            ("select reschedule_reminder(null, local_time => '10:00')", "reminder_id"),
            ("select cancel_reminder(null)", "reminder_id"),
            ("select cancel_reminders_by_type(null)", "reminder_type"),
            ("select cancel_reminders_by_type('all')", "reminder_type"),
            ("select get_scheduled_reminders('prompt')", "reminder_type"),
            ("select record_notification_action(\(UUID()), 'snoozed', 0)", "snooze_minutes"),
            ("select record_notification_action(\(UUID()), 'snoozed', 1441)", "snooze_minutes"),
            ("select record_notification_action(\(UUID()), 'opened', 10)", "snooze_minutes"),
        ]
    }()

    @Test func everyBadArgumentIsAValidationErrorNamingIt() throws {
        try SecurityTests.supabase { tdb, db in
            let (a, stranger) = (UUID(), UUID())
            try db.execute("insert into user_profiles (user_id, timezone) values (\(a), 'America/New_York')")
            for (sql, field) in Self.refusals {
                Self.refused(db, as: a, sql, "validation_error", naming: field)
            }
            #expect(try db.query("select count(*)::int as n from reminders").first?["n"].int == 0, "nothing was written")

            // Rescheduling: the new timing is checked as a new one; something must change.
            let id = try #require(try Self.call(db, as: a, "select schedule_reminder('dose', 'weekly', '09:00', 2)")["id"]?.stringValue)
            Self.refused(db, as: a, "select reschedule_reminder(\(id)::uuid)", "validation_error", naming: "nothing to reschedule")
            Self.refused(db, as: a, "select reschedule_reminder(\(id)::uuid, weekday => 9)", "validation_error", naming: "weekday")
            Self.refused(db, as: a, "select reschedule_reminder(\(id)::uuid, trigger => 'once')", "validation_error", naming: "at")
            Self.refused(db, as: a, "select reschedule_reminder(\(id)::uuid, trigger => 'daily', weekday => 3)", "validation_error", naming: "weekday")
            Self.refused(db, as: a, "select reschedule_reminder(\(id)::uuid, at => \(Self.ms(days: 1)))", "validation_error", naming: "at")

            // No caller; a caller herald has no profile for.
            Self.refused(db, as: nil, "select get_scheduled_reminders()", "unauthorized", naming: "sign in")
            Self.refused(db, as: nil, "select schedule_reminder('daily', 'daily', '09:00')", "unauthorized", naming: "sign in")
            Self.refused(db, as: stranger, "select schedule_reminder('daily', 'daily', '09:00')", "user_not_found", naming: "profile")
            #expect(AppContractTests.array(try Self.call(db, as: stranger, "select get_scheduled_reminders()")).isEmpty)
        }
    }

    /// The RPCs are for signed-in users: `anon` cannot call them (PostgREST answers 401 before they run),
    /// nor can it read or write `reminders`; the helpers behind them are the owner's.
    @Test func anonCannotCallThemNorTouchReminders() throws {
        try SecurityTests.supabase { tdb, db in
            try SecurityTests.act(db, as: "anon", UUID())
            for sql: SQL in ["select schedule_reminder('daily', 'daily', '09:00')",
                             "select reschedule_reminder(\(UUID()), local_time => '10:00')", "select cancel_reminder(\(UUID()))",
                             "select cancel_reminders_by_type('dose')", "select get_scheduled_reminders()",
                             "select * from reminders", "insert into reminders (user_id, schedule, local_time) values (\(UUID()), 'daily', '09:00')"] {
                SecurityTests.refused(db, sql, "anon: \(sql)", message: "permission denied")
            }
            try SecurityTests.act(db, as: "authenticated", UUID())
            for sql: SQL in ["select * from reminders", "select herald_reminder_timing('daily', 'daily', '09:00', null, null, null)",
                             "select herald_reminder_json(null::reminders, 30)", "select herald_snooze_reminder(\(UUID()), \(UUID()), 10)"] {
                SecurityTests.refused(db, sql, "authenticated: \(sql)", message: "permission denied")
            }
        }
    }

    /// Each pass reads every repeating reminder: one person may have at most 200 with something left to send.
    @Test func atMostTwoHundredRemindersAreScheduledAtOnce() throws {
        try SecurityTests.supabase { tdb, db in
            let a = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(a))")
            try db.execute("""
                insert into reminders (user_id, schedule, reminder_type, local_time, created_at)
                select \(a), 'daily', 'dose', '09:00', now() - interval '2 days' from generate_series(1, 199)
                """)
            _ = try Self.call(db, as: a, "select schedule_reminder('dose', 'daily', '10:00')")
            Self.refused(db, as: a, "select schedule_reminder('dose', 'daily', '11:00')", "validation_error", naming: "at most 200")
            let older = try db.query("select id from reminders where created_at < now() - interval '1 day' limit 1").first?["id"].uuid
            _ = try Self.call(db, as: a, "select cancel_reminder(\(older))")
            #expect(try Self.call(db, as: a, "select schedule_reminder('dose', 'daily', '11:00')")["status"]?.stringValue == "scheduled")
        }
    }
}
