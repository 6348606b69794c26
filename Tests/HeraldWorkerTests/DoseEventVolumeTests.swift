import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
@testable import HeraldWorker
import Testing

/// However many dose events a person has, the reminders phase reads their adherence as counts per day:
/// what it holds is bounded by people × days, it decides as it would from each dose, and everyone's
/// reminders still go.
@Suite struct DoseEventVolumeTests: ReminderPassSuite {
    /// 200,000 doses over the last 18 days, each taken four minutes after its time, for one adaptive
    /// person: the phase reads at most a row per person and day (plus their latest three doses), scores
    /// their timing 100 over every judged dose, holds their pre-dose reminder back, and the other
    /// person's reminder goes.
    @Test func twoHundredThousandDoseEventsAreReadAsCountsPerDayAndEveryonesRemindersGo() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let now = instant("2026-02-20T07:30:00Z")
        let flooded = try f.profile(push: true), other = try f.profile(push: true)
        try f.token(flooded)
        try f.token(other)
        try db.execute("update user_profiles set adaptive_frequency_enabled = true where user_id = any(\([flooded, other])::uuid[])")
        try db.execute("""
            insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at)
            select \(flooded), 'step-1', t, t + interval '4 minutes'
              from (select \(now)::timestamptz - interval '18 days' + g * interval '7776 milliseconds' as t
                      from generate_series(1, 200000) g) d
            """)
        #expect(try f.count("select count(*)::int from dose_events where user_id = \(flooded)") == 200_000)
        let judged = try f.count("""
            select count(*)::int from dose_events
             where user_id = \(flooded) and scheduled_at >= \(now.addingTimeInterval(-15 * 86_400)) and scheduled_at <= \(now)
            """)
        var reminders: [UUID: UUID] = [:]
        for person in [flooded, other] {
            reminders[person] = try db.query("""
                insert into reminders (user_id, schedule, reminder_type, at, related_entity_type, related_entity_id)
                values (\(person), 'once', 'dose', \(instant("2026-02-20T08:00:00Z")), 'test_step', 'step-1') returning id
                """).first!["id"].uuid!
        }

        var logger = Logger(label: "herald-test")
        logger.logLevel = .warning
        let plan = try ReminderGenerator(db: db, passId: "dose-volume", now: now, logger: logger).plan()
        // Per person: at most 18 days of logs, 16 days of doses and 3 latest doses.
        #expect(plan.result.adherenceRowsRead <= 2 * (18 + 16 + 3), "read \(plan.result.adherenceRowsRead) rows")
        let score = try #require(plan.adherence[flooded]?.score)
        #expect(score.totalReminders == AdherenceAnalyzer.periodDays + judged)
        #expect(score.doseTimingAccuracy == 100)
        #expect(score.consistentDoseTiming)
        #expect(score.patterns.map(\.type) == [.irregular, .consistent])

        _ = Worker(url: tdb.url, settings: logAll).run(now: now) { $0.phases = [.reminders, .deliver] }
        let held = try db.query("select status, skip_reason from notification_queue where reminder_id = \(reminders[flooded]!)").first
        #expect(held?["status"].string == "skipped")
        #expect(held?["skip_reason"].string == "adaptive_frequency")
        #expect(try db.query("select status from notification_queue where reminder_id = \(reminders[other]!)").first?["status"].string == "sent")
        let stored = try JSONValue.parse(try db.query("select adherence_score::text as s from user_profiles where user_id = \(flooded)").first?["s"].string ?? "")
        #expect(stored["total_reminders"]?.intValue == AdherenceAnalyzer.periodDays + judged)
    }
    }

    /// The app inserts its own dose events (row-level security lets it) at most 300 in any 24 hours per
    /// person, each dose's time within two days of now: a bulk insert, the 301st of a day, a dose far in
    /// the past or the future and a back-dated `created_at` are refused with a clear error. herald's own
    /// writes (the table's owner) are not held to it.
    @Test func theAppIsRefusedItsThreeHundredAndFirstDoseOfADayAndADoseFarFromNow() throws {
        try SecurityTests.supabase { tdb, db in
        let user = UUID()
        try db.execute("insert into user_profiles (user_id) values (\(user))")
        try SecurityTests.act(db, as: "authenticated", user)
        func refused(_ sql: SQL, _ code: String, _ detail: String) {
            let r = TextBoundsTests.refusal(db, sql, detail)
            #expect(r.message == code && r.detail == detail, "\(r.state ?? "accepted"): \(r.detail)")
        }
        refused("insert into dose_events (user_id, scheduled_at) values (\(user), now() - interval '3 days')",
                "validation_error", "scheduled_at must be within 2 days of now")
        refused("insert into dose_events (user_id, scheduled_at) values (\(user), now() + interval '3 days')",
                "validation_error", "scheduled_at must be within 2 days of now")
        refused("insert into dose_events (user_id, scheduled_at, taken_at) values (\(user), now(), now() - interval '30 days')",
                "validation_error", "taken_at must be within 2 days of now")
        refused("""
            insert into dose_events (user_id, related_entity_id, scheduled_at)
            select \(user), 'step', now() - g * interval '1 second' from generate_series(1, 200000) g
            """, "rate_limit_exceeded", "at most 300 dose events may be recorded in 24 hours")
        #expect(try db.execute("""
            insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at, created_at)
            select \(user), 'step', now() - g * interval '1 minute', now(), '2000-01-01' from generate_series(1, 300) g
            """) == 300)
        refused("insert into dose_events (user_id, scheduled_at, created_at) values (\(user), now(), '2000-01-01')",
                "rate_limit_exceeded", "at most 300 dose events may be recorded in 24 hours")
        try SecurityTests.owner(db)
        #expect(try db.query("select count(*)::int as n from dose_events where user_id = \(user) and created_at > now() - interval '1 hour'")
            .first?["n"].int == 300)
        #expect(try db.execute("insert into dose_events (user_id, scheduled_at) values (\(user), now() - interval '30 days')") == 1)
    }
    }
}
