import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// What tells a follower that an app changed what a time-driven generator reads (sql/052): a
/// notification on `herald_generate` whose payload is the generator's name and nothing else, and a
/// row in `herald_generator_changes` that a polling follower looks at.
@Suite struct GeneratorNotifyTests {
    /// The payloads a listener received on the generators' channel up to a sentinel notified after
    /// `action` (notifications arrive in commit order), sorted.
    static func notified(_ listener: PGConnection, by db: PGConnection, _ action: () throws -> Void) throws -> [String] {
        try action()
        try db.execute("select pg_notify(\(GeneratorNotification.channel), 'sentinel')")
        var payloads: [String] = []
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            for n in try listener.waitForNotifications(timeout: 1) {
                if n.payload == "sentinel" { return payloads.sorted() }
                payloads.append(n.payload)
            }
        }
        Issue.record("the sentinel never came")
        return []
    }

    /// Scheduling, moving and cancelling a reminder through the app's RPCs, a change of prompt
    /// settings, of a profile's zone or forecast time: each notifies the generators it concerns, once
    /// per transaction, by name only. Writing the same values, and what the generators write
    /// themselves (a reminder's marks, an adherence score), notify nothing.
    @Test func anAppsChangesNotifyTheGeneratorsTheyConcernByNameOnly() throws {
        try SecurityTests.supabase { tdb, db in
            let listener = try tdb.connect()
            try listener.execute("LISTEN \(identifier: GeneratorNotification.channel)")
            let user = UUID()
            #expect(try Self.notified(listener, by: db) {
                try db.execute("insert into user_profiles (user_id, timezone) values (\(user), 'Europe/London')")
            } == ["forecasts"])
            let at = ReminderRPCTests.ms(days: 1)
            var id = ""
            #expect(try Self.notified(listener, by: db) {
                id = try ReminderRPCTests.call(db, as: user, "select schedule_reminder('test_start', 'once', at => \(at))")["id"]?
                    .stringValue ?? ""
            } == ["reminders"])
            #expect(try Self.notified(listener, by: db) {
                _ = try ReminderRPCTests.call(db, as: user, "select reschedule_reminder(\(id)::uuid, at => \(ReminderRPCTests.ms(days: 2)))")
            } == ["reminders"])
            #expect(try Self.notified(listener, by: db) {
                try db.execute("update reminders set last_enqueued_for = current_date, enqueued_at = now(), updated_at = now()")
                try db.execute("update user_profiles set adherence_score = '{}'::jsonb, current_frequency = 'full'")
            } == [])
            #expect(try Self.notified(listener, by: db) {
                _ = try ReminderRPCTests.call(db, as: user, "select cancel_reminder(\(id)::uuid)")
            } == ["reminders"])
            #expect(try Self.notified(listener, by: db) {
                try db.execute("insert into prompt_settings (user_id, prompts_per_day) values (\(user), 3)")
                try db.execute("update prompt_settings set prompts_per_day = 4 where user_id = \(user)")
            } == ["prompts", "prompts"])
            #expect(try Self.notified(listener, by: db) {
                try db.execute("update prompt_settings set prompts_per_day = 4 where user_id = \(user)")
                try db.execute("update user_profiles set timezone = 'Europe/London' where user_id = \(user)")
            } == [], "the same values")
            #expect(try Self.notified(listener, by: db) {
                try db.transaction { db in
                    try db.execute("update user_profiles set timezone = 'Europe/Paris' where user_id = \(user)")
                    try db.execute("update user_profiles set forecast_notification_time = '07:00' where user_id = \(user)")
                }
            } == ["forecasts", "prompts", "reminders"], "once per transaction and generator")
            #expect(try Fixtures(db: db).count("""
                select count(*)::int from herald_generator_changes where generator not in ('reminders', 'prompts', 'forecasts')
                """) == 0)
        }
    }

    /// A polling follower's look sees each committed change once, including one whose transaction
    /// began before an earlier look and committed after it.
    @Test func aPollingFollowersLookSeesALateCommitOnce() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let app = try tdb.connect()
            let user = try Fixtures(db: db).profile()
            var changes = GeneratorChanges()
            #expect(try changes.look(db) == [])

            try app.execute("begin")
            try app.execute("insert into prompt_settings (user_id) values (\(user))")  // not committed yet
            #expect(try changes.look(db) == [])
            try db.execute("update user_profiles set forecast_notification_time = '06:30' where user_id = \(user)")
            #expect(try changes.look(db) == [.forecasts])
            try app.execute("commit")
            #expect(try changes.look(db) == [.prompts], "committed after the earlier look")
            #expect(try changes.look(db) == [])
        }
    }

    /// A follower starts listening once its phases have run: the changes made since its pass started
    /// (less a few seconds, for a transaction that began before) are taken from the records instead.
    @Test func theChangesMadeWhileAFollowersPhasesRanAreFound() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Fixtures(db: db).profile()
            try db.execute("insert into prompt_settings (user_id) values (\(user))")
            try db.execute("update herald_generator_changes set changed_at = now() - interval '1 minute'")
            try db.execute("insert into herald_passes (pass_id, started_at, host) values ('started', now(), 'test')")
            #expect(try GeneratorChanges.sinceStart(of: "started", db) == [])
            try db.execute("update user_profiles set dose_reminder_advance_minutes = 45 where user_id = \(user)")
            #expect(try GeneratorChanges.sinceStart(of: "started", db) == [.reminders])
        }
    }

    /// The app's roles see nothing of the changes' records; the housekeeping deletes those older than
    /// an hour.
    @Test func theChangesRecordsAreHeraldsAndPrunedAfterAnHour() throws {
        try SecurityTests.supabase { tdb, db in
            try db.execute("insert into user_profiles (user_id, timezone) values (\(UUID()), 'UTC')")
            try SecurityTests.act(db, as: "authenticated", UUID())
            SecurityTests.refused(db, "select * from herald_generator_changes", "an app reads the changes")
            SecurityTests.refused(db, "insert into herald_generator_changes (generator) values ('prompts')", "an app writes one")
            try SecurityTests.owner(db)
            try db.execute("update herald_generator_changes set changed_at = now() - interval '2 hours'")
            try db.execute("insert into herald_generator_changes (generator) values ('prompts')")
            #expect(try QueueStore(db: db, passId: "prune-test").pruneGeneratorChanges() == 1)
            #expect(try Fixtures(db: db).count("select count(*)::int from herald_generator_changes") == 1)
        }
    }
}
