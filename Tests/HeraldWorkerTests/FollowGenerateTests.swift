import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A follower runs the time-driven generators its `--only` selects when they come due, and soon after
/// an app changes what they read, and delivers what they enqueue in the same round: a reminder the app
/// schedules while a follower runs reaches the provider (the Expo fake, HTTP/2 over TLS) at its time,
/// sent by that follower, not by a later pass. No latency is timed here (that is `make bench`'s): each
/// test says what alone could have made and sent the notification.
@Suite struct FollowGenerateTests {
    /// Providers, a database set up as Supabase sets one up (the app's roles, for its RPCs), a person
    /// with an Expo token, and the follower's environment (every setting of `extra` added).
    struct Setup {
        let providers: SendPushTests.Providers
        let tdb: TestDB
        let db: PGConnection
        let user: UUID
        let env: [String: String]

        /// `body` with the setup, taken apart when it returns or throws.
        static func with(_ extra: [String: String] = FollowTests.pollOnceADay, _ body: (Setup) throws -> Void) throws {
            let providers = try SendPushTests.Providers()
            defer { providers.shutdown() }
            try SecurityTests.supabase { tdb, db in
                let env = providers.settings.merging(["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "debug"]) { $1 }
                    .merging(extra) { $1 }
                try body(Setup(providers: providers, tdb: tdb, db: db, user: try FollowSendTests.person(db), env: env))
            }
        }
    }

    /// Schedules a test-start reminder for `user` through the app's RPC, `seconds` ahead; its id.
    static func schedule(_ db: PGConnection, _ user: UUID, in seconds: Double) throws -> String {
        let at = String(Int((Date().timeIntervalSince1970 + seconds) * 1000))
        let r = try ReminderRPCTests.call(db, as: user, "select schedule_reminder('test_start', 'once', at => \(at))")
        return try #require(r["id"]?.stringValue)
    }

    /// The id of the queue row reminder `reminder` made, once there is one (nil after `seconds`).
    static func row(_ db: PGConnection, reminder: String, seconds: Double = 30) throws -> String? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let id = try db.query("select id::text from notification_queue where reminder_id = \(reminder)::uuid")
                .first?["id"].string { return id }
            usleep(20_000)
        }
        return nil
    }

    /// A follower that polls the queue once a day and looks by itself every 60 s: a reminder scheduled
    /// 2.5 s ahead while it waits is made by that follower at its time (woken by the RPC's
    /// notification, then by the reminder's instant) and reaches Expo, no earlier than its time.
    @Test func aReminderScheduledWhileAFollowerRunsGoesAtItsTime() throws {
        try FollowGenerateTests.Setup.with { s in
            let follower = try FollowerProcess(env: s.env, deadline: 120, only: "reminders,deliver")
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            let reminder = try Self.schedule(s.db, s.user, in: 2.5)
            let id = try #require(try Self.row(s.db, reminder: reminder), "no row was made: \(follower.logText)")
            #expect(try FollowSendTests.expoMessage(s.providers.expo, id: id) != nil, "\(follower.logText)")
            #expect(follower.process.isRunning, "made and sent by the follower, before its deadline")
            let f = Fixtures(db: s.db)
            #expect(try f.waitFor("""
                select count(*)::int from notification_queue q join reminders r on r.id = q.reminder_id
                 where q.id = \(id)::uuid and q.status = 'sent' and q.run_after = r.at and q.sent_at >= q.run_after
                """, atLeast: 1), "recorded sent at its time, not before")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(summary["generated"]?["reminders"]?.intValue == 1, "\(summary)")
            #expect(summary["sent"]?.intValue == 1)
            #expect((summary["follow"]?["generator_runs"]?.intValue ?? 0) >= 1)
            #expect(summary["follow"]?["mode"]?.stringValue == "listen")
        }
    }

    /// Where no notification can reach it, a follower looks at the apps' changes as it looks at the
    /// queue, every HERALD_FOLLOW_POLL_MS: a reminder scheduled while it polls is made and sent by it.
    @Test func aPollingFollowerFindsAReminderScheduledWhileItRuns() throws {
        try FollowGenerateTests.Setup.with(["HERALD_FOLLOW_LISTEN": "off", "HERALD_FOLLOW_POLL_MS": "200"]) { s in
            let follower = try FollowerProcess(env: s.env, deadline: 120, only: "reminders,deliver")
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            let reminder = try Self.schedule(s.db, s.user, in: 2)
            let id = try #require(try Self.row(s.db, reminder: reminder), "no row was made: \(follower.logText)")
            #expect(try FollowSendTests.expoMessage(s.providers.expo, id: id) != nil)
            #expect(follower.process.isRunning, "made and sent by the follower, before its deadline")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(summary["follow"]?["mode"]?.stringValue == "poll")
            #expect(summary["generated"]?["reminders"]?.intValue == 1, "\(summary)")
            #expect(summary["sent"]?.intValue == 1)
        }
    }

    /// A change of prompt settings while a follower runs (more prompts a day) is planned again by the
    /// follower, woken by the change's notification: the day's plan moves to its next number and the
    /// follower counts the day replanned.
    @Test func aPromptSettingsChangeIsReplannedByARunningFollower() throws {
        try FollowGenerateTests.Setup.with { s in
            try s.db.execute("""
                insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(s.user), 3, 0, 0)
                """)
            let follower = try FollowerProcess(env: s.env, deadline: 120, only: "prompts,deliver")
            #expect(follower.waitForWaits(1), "\(follower.logText)")
            let f = Fixtures(db: s.db)
            #expect(try f.count("select count(*)::int from prompt_schedules where user_id = \(s.user) and revision = 0") == 1,
                    "the day was planned by the follower's phases")

            try s.db.execute("update prompt_settings set prompts_per_day = 6 where user_id = \(s.user)")
            #expect(try f.waitFor("select count(*)::int from prompt_schedules where user_id = \(s.user) and revision = 1",
                                  atLeast: 1, seconds: 30), "\(follower.logText)")
            #expect(follower.process.isRunning, "planned again by the follower, before its deadline")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(summary["generated"]?["prompts_replanned"]?.intValue == 1, "\(summary)")
            #expect(try f.count("""
                select count(*)::int from prompt_schedules where user_id = \(s.user) and prompts = 6 and revision = 1
                """) == 1)
        }
    }
}
