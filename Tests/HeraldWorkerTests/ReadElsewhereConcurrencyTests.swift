import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Quiet everywhere once read, under concurrency and against another person: reads that commit at
/// once still ask for one badge correction, four passes and a follower running together withdraw and
/// correct exactly once, and a person cannot quiet another's notification (harness: `ReadElsewhereScene`).
@Suite struct ReadElsewhereConcurrencyTests {

    /// Five notifications read at the same moment on five connections, then four passes and a
    /// follower at once, at a time when every SMS copy and the correction are due: each SMS copy is
    /// withdrawn exactly once and never sent, and the badge is corrected exactly once per device.
    @Test func fourPassesAndAFollowerAtOnceGiveOneWithdrawalEachAndOneBadgeUpdate() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            let notifications = try (0..<5).map { _ in try s.notification(now: now, smsIn: 600) }
            s.pass(now)
            #expect(s.apns.requests.count == 10)

            let failures = ReadElsewhereScene.Tally()
            inParallel(5) { i in
                do {
                    let conn = try s.tdb.connect()
                    defer { conn.close() }
                    try s.read([notifications[i].push], on: conn)
                } catch { failures.add() }
            }
            #expect(failures.count == 0)
            #expect(try s.badgeRows("pending") == 1, "concurrent reads ask for one correction")

            let later = now.addingTimeInterval(700)
            var env = s.settings
            env["DATABASE_URL"] = s.tdb.url
            let follower = try FollowerProcess(env: env, deadline: 12)
            inParallel(4) { _ in _ = ProviderPass.pass(s.tdb.url, s.settings, now: later, drain: true) }
            _ = follower.finish(seconds: 30)

            for n in notifications {
                #expect(try s.f.row(n.sms)["skip_reason"].string == "read_elsewhere")
                #expect(try s.events(n.sms).count == 1, "withdrawn once, decided by nobody else")
            }
            #expect(s.twilio.accepted.isEmpty)
            #expect(try s.badgeRows("sent") == 1)
            #expect(try s.count("select count(*) from notification_queue where kind = 'badge_sync'") == 1)
            let silent = s.silentPushes
            #expect(silent.count == 2, "one silent update per device")
            #expect(Set(ProviderPass.paths(silent)) == Set(s.phones))
        }
    }

    /// Another signed-in person naming this person's notification — its entry, its push row, its SMS
    /// row — in a read or an action changes nothing: row-level security and the RPCs' own caller keep
    /// it theirs. The SMS copy stays waiting and no correction is asked for, until the person reads it.
    @Test func readingAnotherPersonsNotificationWithdrawsNothing() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            let intruder = try s.f.profile()
            try s.f.token(intruder)

            let answer = try s.read([n.push, n.sms], as: intruder)
            #expect(answer["updated_count"]?.intValue == 0)
            do {
                try s.act(n.push, "opened", as: intruder)
                Issue.record("another person's action was accepted")
            } catch let error as PGError {
                #expect(error.message == "validation_error", "\(error)")
            }
            try SecurityTests.act(s.db, as: "authenticated", intruder, claimsJSON: true)
            SecurityTests.refused(s.db, "update inbox set is_read = true where user_id = \(s.person)", "a direct update of inbox")
            try SecurityTests.owner(s.db)

            #expect(try s.f.row(n.sms)["status"].string == "pending")
            #expect(try s.events(n.sms).isEmpty)
            #expect(try s.count("select count(*) from notification_queue where kind = 'badge_sync'") == 0)
            #expect(try s.count("select count(*) from inbox where user_id = \(s.person) and is_read") == 0)

            // The person's own read quiets it.
            try s.read([n.push])
            #expect(try s.f.row(n.sms)["skip_reason"].string == "read_elsewhere")
            #expect(try s.badgeRows("pending") == 1)
        }
    }
}
