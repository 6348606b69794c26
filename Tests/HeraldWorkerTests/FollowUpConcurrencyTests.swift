import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// Each follow-up step is enqueued once and sent once, whatever runs at once: four passes and a real
/// follower (`herald run --follow`) against the APNs and Twilio fakes over TLS.
@Suite struct FollowUpConcurrencyTests {
    typealias P = ProviderPass

    /// Four passes and a follower at `now`, all at once; returns once the follower has stopped.
    static func together(_ family: FollowUpFamily, now: Date, until done: () throws -> Bool) throws {
        let env = family.settings.merging(["DATABASE_URL": family.tdb.url, "HERALD_LOG_LEVEL": "debug"]) { $1 }
        let follower = try FollowerProcess(env: env, deadline: 60, extra: ["--now", ISO8601.string(now)])
        let url = family.tdb.url, settings = family.settings
        inParallel(4) { _ in _ = P.pass(url, settings, now: now, batchSize: 5, drain: true) }
        let end = Date().addingTimeInterval(30)
        while try !done() && Date() < end { usleep(50_000) }
        usleep(500_000)  // time for a second send, were there one to make
        kill(follower.process.processIdentifier, SIGTERM)
        let summary = follower.finish(seconds: 15)
        #expect(summary["exit_code"]?.intValue == 0 || summary["exit_code"]?.intValue == 3, "\(follower.logText.suffix(2000))")
    }

    /// The alert's push and in-app copies go out from whichever of four passes and a follower takes
    /// them: the chain is enqueued once (one row per step, loop and channel). At the first step's time,
    /// four passes and a follower again: exactly one SMS, and the step's row is sent once.
    @Test func fourPassesAndAFollowerGiveExactlyOneStep() throws {
        let family = try FollowUpFamily()
        defer { family.cleanup() }
        try family.db.execute("update notification_types set daily_cap = 1000, min_spacing_seconds = null, per_minute_cap = 1000")
        let t = P.now()
        let push = try family.alert(at: t)
        try family.db.execute("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, severity, payload,
                                            scheduled_at, run_after, notification_group)
            select recipient_user_id, member_user_id, 'in_app', kind, severity, payload, scheduled_at, run_after, \(push.lowercased)
              from notification_queue where id = \(push)
            """)
        try family.db.execute("update notification_queue set notification_group = \(push.lowercased) where id = \(push)")
        try Self.together(family, now: t) {
            try Fixtures(db: family.db).count("select count(*)::int from notification_queue where status = 'sent'") >= 2
        }
        #expect(family.pushCount(to: family.firstToken) == 1)
        let chain = try family.chain()
        #expect(chain.count == 3, "one row per step, loop and channel: \(chain.map { $0["dedupe_key"].string ?? "" })")

        try Self.together(family, now: t.addingTimeInterval(660)) { family.smsCount(to: family.firstPhone) >= 1 }
        #expect(family.smsCount(to: family.firstPhone) == 1, "one SMS for the step")
        #expect(family.smsCount(to: family.secondPhone) == 0, "the next step is not due")
        let first = try family.chain().filter { $0["step"].int == 1 }
        #expect(first.count == 1 && first.first?["status"].string == "sent")
        #expect(try Fixtures(db: family.db).count("""
            select count(*)::int from notification_deliveries d join notification_queue q on q.id = d.queue_id
             where q.follow_up_of is not null and q.channel = 'sms'
            """) == 1)
    }
}
