import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A follow-up when nobody reads, end to end: real passes at `--now` instants against the APNs and
/// Twilio fakes over TLS.
@Suite struct FollowUpPassTests {
    typealias P = ProviderPass

    /// An alert nobody reads is followed up as its type's policy says: after 10 minutes an SMS to the
    /// same admin, 10 minutes later a push and an SMS to the family's next admin; nothing before its
    /// time, each step once, and `herald explain` shows each step and when it fired.
    @Test func anUnreadAlertIsFollowedBySMSAndThenByTheNextAdmin() throws {
        let family = try FollowUpFamily()
        defer { family.cleanup() }
        let t = P.now()
        let alert = try family.alert(at: t)

        family.pass(t)
        #expect(family.pushCount(to: family.firstToken) == 1)
        let chain = try family.chain()
        #expect(chain.map { $0["channel"].string } == ["sms", "push", "sms"], "the chain, enqueued when the alert went out")
        #expect(chain.map { $0["recipient_user_id"].uuid } == [family.first, family.second, family.second])

        family.pass(t.addingTimeInterval(300))
        #expect(family.twilio.accepted.isEmpty, "no step before its time")

        family.pass(t.addingTimeInterval(660))
        #expect(family.smsCount(to: family.firstPhone) == 1)
        #expect(family.smsCount(to: family.secondPhone) == 0 && family.pushCount(to: family.secondToken) == 0)

        family.pass(t.addingTimeInterval(1260))
        family.pass(t.addingTimeInterval(1300))
        #expect(family.smsCount(to: family.firstPhone) == 1, "each step once")
        #expect(family.smsCount(to: family.secondPhone) == 1)
        #expect(family.pushCount(to: family.secondToken) == 1)
        #expect(try family.chain().allSatisfy { $0["status"].string == "sent" })

        let text = Explain.text(try Explain.report(family.db, id: alert))
        #expect(text.contains("follow-ups:"))
        #expect(text.contains("step 1, loop 1: sms to \(family.first.lowercased) (same, until read): fired at"), "\(text)")
        #expect(text.contains("step 2, loop 1: push to \(family.second.lowercased) (next_admin, until read): fired at"), "\(text)")
    }

    /// Reading the alert cancels its pending steps at once, in the read's own transaction: the steps
    /// are skipped `follow_up_satisfied` before any pass runs, no later pass sends them, and the trail
    /// says who read it.
    @Test func readingTheAlertCancelsItsPendingStepsAtOnce() throws {
        let family = try FollowUpFamily()
        defer { family.cleanup() }
        let t = P.now()
        let alert = try family.alert(at: t)
        family.pass(t)
        #expect(try family.chain().count == 3)

        try family.read(alert)
        let chain = try family.chain()
        #expect(chain.allSatisfy { $0["status"].string == "skipped" && $0["skip_reason"].string == "follow_up_satisfied" },
                "cancelled by the read itself, not by a pass")

        family.pass(t.addingTimeInterval(1300))
        #expect(family.twilio.accepted.isEmpty)
        #expect(family.pushCount(to: family.secondToken) == 0)
        let report = try Explain.report(family.db, id: alert)
        let step = try #require(report["follow_ups"]?["steps"]?.arrayValue?.first)
        #expect(step["satisfied"]?["satisfied_by"]?.stringValue == "read")
        #expect(step["satisfied"]?["by"]?.stringValue == family.first.lowercased)
        #expect(Explain.text(report).contains("not sent: satisfied by read of \(family.first.lowercased)"))
    }

    /// The next admin reading their copy satisfies the chain too: the alert reached an admin.
    @Test func theNextAdminReadingTheirCopyEndsTheChain() throws {
        let policy = """
            {"loops": 2, "steps": [{"after_seconds": 600, "channels": ["sms"], "to": "next_admin", "until": "read"}]}
            """
        let family = try FollowUpFamily(policy: policy)
        defer { family.cleanup() }
        let t = P.now()
        let alert = try family.alert(at: t)
        family.pass(t)
        family.pass(t.addingTimeInterval(660))
        #expect(family.smsCount(to: family.secondPhone) == 1)
        let copy = try #require(try family.db.query("""
            select id from notification_queue where recipient_user_id = \(family.second) and status = 'sent'
            """).first?["id"].uuid)
        try family.read(copy, as: family.second)
        family.pass(t.addingTimeInterval(1300))
        #expect(family.smsCount(to: family.secondPhone) == 1, "the second loop's step is not sent")
        #expect(try family.chain().last?["skip_reason"].string == "follow_up_satisfied")
        _ = alert
    }

    /// A step satisfied by delivery is checked at its time, in the claim: once a provider confirmed
    /// the SMS delivered (as its status callback records), the next step is skipped with what
    /// satisfied it, and nothing is sent.
    @Test func aStepIsCheckedInTheClaimAtItsTime() throws {
        let policy = """
            {"steps": [{"after_seconds": 600, "channels": ["sms"], "to": "same", "until": "read"},
                       {"after_seconds": 600, "channels": ["push"], "to": "next_admin", "until": "delivered"}]}
            """
        let family = try FollowUpFamily(policy: policy)
        defer { family.cleanup() }
        let t = P.now()
        _ = try family.alert(at: t)
        family.pass(t)
        family.pass(t.addingTimeInterval(660))
        #expect(family.smsCount(to: family.firstPhone) == 1)
        try family.db.execute("""
            update notification_deliveries d set final_status = 'delivered', final_at = now(), final_source = 'event'
              from notification_queue q where q.id = d.queue_id and q.channel = 'sms' and q.follow_up_of is not null
            """)
        let summary = family.pass(t.addingTimeInterval(1260))
        #expect(family.pushCount(to: family.secondToken) == 0)
        #expect(summary.sent == 0)
        let last = try #require(try family.chain().last)
        #expect(last["skip_reason"].string == "follow_up_satisfied")
        #expect(try family.db.query("""
            select e.details ->> 'satisfied_by' as by from notification_events e join notification_queue q on q.id = e.queue_id
             where q.channel = 'push' and q.follow_up_of is not null and e.reason = 'follow_up_satisfied'
            """).first?["by"].string == "delivered")
    }

    /// A next-admin step of a member whose family has no other admin is not enqueued, and
    /// `herald explain` says why; the same admin's step still goes.
    @Test func aStepWithNoOtherAdminSaysWhyInTheExplanation() throws {
        let family = try FollowUpFamily()
        defer { family.cleanup() }
        try family.db.execute("update family_members set role = 'member' where user_id = \(family.second)")
        let t = P.now()
        let alert = try family.alert(at: t)
        family.pass(t)
        family.pass(t.addingTimeInterval(1300))
        #expect(family.smsCount(to: family.firstPhone) == 1)
        #expect(family.smsCount(to: family.secondPhone) == 0 && family.pushCount(to: family.secondToken) == 0)
        let text = Explain.text(try Explain.report(family.db, id: alert))
        #expect(text.contains("step 2, loop 1: (next_admin, until read): not enqueued: no other admin of the family to tell"),
                "\(text)")
    }

    /// A notification of a type without a policy is sent as before: no chain, no follow-up in its
    /// explanation.
    @Test func aTypeWithoutAPolicyHasNoChain() throws {
        let family = try FollowUpFamily()
        defer { family.cleanup() }
        let t = P.now()
        let plain = try family.alert(at: t, kind: "system")
        family.pass(t)
        family.pass(t.addingTimeInterval(1300))
        #expect(family.pushCount(to: family.firstToken) == 1)
        #expect(try family.chain().isEmpty)
        #expect(family.twilio.accepted.isEmpty)
        #expect(try Explain.report(family.db, id: plain)["follow_ups"] == nil)
        #expect(try family.db.query("select follows_up from notification_queue where id = \(plain)").first?["follows_up"].bool == nil)
    }
}
