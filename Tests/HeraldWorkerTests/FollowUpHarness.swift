import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// The family of the follow-up suites: a member and two admins of their family (the first joined
/// first), each admin with an APNs token and a phone; the APNs and Twilio fakes over TLS; and the type
/// `family_check`, whose policy is seed 000's: unread after 10 minutes, an SMS to the same admin;
/// unread 10 minutes later, a push and an SMS to the next admin.
final class FollowUpFamily: @unchecked Sendable {
    typealias P = ProviderPass
    let lab: P.Lab
    let apns: FakeAPNs
    let twilio: FakeTwilio
    let tdb: TestDB
    let db: PGConnection
    let settings: [String: String]
    let member = UUID(), first = UUID(), second = UUID()
    let firstPhone = "+15555550101", secondPhone = "+15555550102"
    let firstToken = P.apnsToken(), secondToken = P.apnsToken()

    static let policy = """
        {"loops": 1, "steps": [
          {"after_seconds": 600, "channels": ["sms"], "to": "same", "until": "read"},
          {"after_seconds": 600, "channels": ["push", "sms"], "to": "next_admin", "until": "read"}]}
        """

    init(policy: String = FollowUpFamily.policy, quiet: (String, String)? = nil, level: String = "none") throws {
        lab = try P.Lab()
        apns = try FakeAPNs(certificates: lab.certificates)
        let sid = "AC" + String(repeating: "0123456789abcdef", count: 2)
        let token = "twilio-auth-" + UUID().uuidString
        twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: token)
        var s = lab.base.merging(try lab.apns(apns)) { $1 }
        s["TWILIO_ACCOUNT_SID"] = sid
        s["TWILIO_AUTH_TOKEN"] = token
        s["TWILIO_FROM"] = "+15005550006"
        s["TWILIO_URL"] = twilio.baseURL
        settings = s
        tdb = try TestDatabase.create()
        db = try tdb.connect()
        let f = Fixtures(db: db)
        try f.profile(member, push: false)
        try f.profile(first, phone: firstPhone, push: true, sms: true, championSMS: true, quiet: quiet, level: level)
        try f.profile(second, phone: secondPhone, push: true, sms: true, championSMS: true, quiet: quiet, level: level)
        try f.token(first, firstToken)
        try f.token(second, secondToken)
        try db.execute("""
            insert into family_members (family_id, user_id, role, created_at) values
              (\(member), \(member), 'member', now()), (\(member), \(first), 'admin', now() - interval '2 days'),
              (\(member), \(second), 'admin', now() - interval '1 day')
            """)
        try db.execute("insert into notification_types (type, priority, follow_up) values ('family_check', 'high', \(policy)::jsonb)")
    }

    func cleanup() {
        db.close()
        tdb.drop()
        apns.shutdown()
        twilio.shutdown()
        lab.cleanup()
    }

    /// The alert about the member, by push to the first admin, due at `at`.
    func alert(at: Date, severity: String = "attention", kind: String = "family_check") throws -> UUID {
        try db.query("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, severity, payload,
                                            scheduled_at, run_after)
            values (\(first), \(member), 'push', \(kind), \(severity),
                    '{"title":"Sleep is down","body":"Check on your family member"}', \(at), \(at))
            returning id
            """).first!["id"].uuid!
    }

    /// One pass at `now`, delivering everything due.
    @discardableResult
    func pass(_ now: Date) -> Summary { P.pass(tdb.url, settings, now: now, batchSize: 20, drain: true).0 }

    func smsCount(to phone: String) -> Int { twilio.accepted.filter { $0["To"] == phone }.count }
    func pushCount(to token: String) -> Int { apns.requests.filter { $0.path.hasSuffix(token) }.count }

    /// The chain's rows: step, loop, channel, recipient, status and skip reason, in order.
    func chain() throws -> [PGRow] {
        Array(try db.query("""
            select (payload -> 'follow_up' ->> 'step')::int as step, (payload -> 'follow_up' ->> 'loop')::int as loop,
                   channel, recipient_user_id, status, skip_reason, run_after, dedupe_key
              from notification_queue where follow_up_of is not null
             order by 2, 1, channel
            """))
    }

    /// The first admin reads the alert in the app (`mark_notifications_read`, as the app calls it).
    func read(_ id: UUID, as user: UUID? = nil) throws {
        try AppContractTests.asUser(db, user ?? first)
        defer { try? AppContractTests.asUser(db, nil) }
        _ = try db.query("select mark_notifications_read(\([id])::uuid[])")
    }
}
