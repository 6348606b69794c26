import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// The harness of the read-elsewhere suites: one person with two iPhones (APNs) and a phone number
/// (Twilio), the type `system` quiet once read, on a database prepared as Supabase prepares one, so the app's reads go through the RPCs as
/// the signed-in person (`authenticated`), and the fakes over real TLS.
///
///     try ReadElsewhereScene.with { s in
///     let n = try s.notification(now: now, smsIn: 600)   // a push copy and an SMS copy of one notification
///     try s.read([n.push])                               // as the app marks it read
///     }
final class ReadElsewhereScene: @unchecked Sendable {
    let lab: ProviderPass.Lab
    let apns: FakeAPNs
    let twilio: FakeTwilio
    let tdb: TestDB
    let db: PGConnection
    let f: Fixtures
    let person: UUID
    let phones: [String]
    let settings: [String: String]

    /// Runs `body` with a scene on a fresh Supabase-like database; both go when it returns or throws.
    static func with(_ body: (ReadElsewhereScene) throws -> Void) throws {
        try SecurityTests.supabase { tdb, db in
            let scene = try ReadElsewhereScene(tdb: tdb, db: db)
            defer { scene.cleanup() }
            try body(scene)
        }
    }

    private init(tdb: TestDB, db: PGConnection) throws {
        self.tdb = tdb
        self.db = db
        lab = try ProviderPass.Lab()
        apns = try FakeAPNs(certificates: lab.certificates)
        let sid = "AC" + String(repeating: "0123456789abcdef", count: 2)
        let authToken = "twilio-auth-" + UUID().uuidString
        twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: authToken)
        f = Fixtures(db: db)
        try db.execute("update notification_types set quiet_once_read = true where type = 'system'")
        person = try f.profile(phone: "+15555550177", sms: true)
        phones = [ProviderPass.apnsToken(), ProviderPass.apnsToken()]
        for token in phones { try f.token(person, token) }
        var s = lab.base.merging(try lab.apns(apns)) { $1 }
        s["TWILIO_ACCOUNT_SID"] = sid
        s["TWILIO_AUTH_TOKEN"] = authToken
        s["TWILIO_FROM"] = "+15005550006"
        s["TWILIO_URL"] = twilio.baseURL
        settings = s
    }

    /// A count threads add to.
    final class Tally: @unchecked Sendable {  // `n` is read and written under `lock`
        private let lock = NSLock()
        private var n = 0
        func add() { lock.withLock { n += 1 } }
        var count: Int { lock.withLock { n } }
    }

    func cleanup() {
        apns.shutdown()
        twilio.shutdown()
        lab.cleanup()
    }

    /// One notification as two copies of one group: the push due at `now`, the SMS `smsIn` later (the
    /// same message on a slower channel, sent if nobody reads the push).
    func notification(now: Date, smsIn: TimeInterval, to who: UUID? = nil) throws -> (push: UUID, sms: UUID) {
        let group = "visit:" + UUID().uuidString
        func copy(_ channel: String, _ at: Date) throws -> UUID {
            try db.query("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload,
                                                scheduled_at, run_after, notification_group)
                values (\(who ?? person), \(who ?? person), \(channel), 'system',
                        '{"title":"Your results are in","body":"Open the app to see them"}'::jsonb, \(at), \(at), \(group))
                returning id
                """).first!["id"].uuid!
        }
        return (try copy("push", now.addingTimeInterval(-5)), try copy("sms", now.addingTimeInterval(smsIn)))
    }

    /// A pass at `now`, as `herald run` would do it.
    @discardableResult
    func pass(_ now: Date) -> Summary {
        let (summary, code) = ProviderPass.pass(tdb.url, settings, now: now, drain: true)
        #expect(code == .ok, "\(summary.error ?? "")")
        return summary
    }

    /// `mark_notifications_read` as the app calls it for `who` (default: the person), on `conn`.
    @discardableResult
    func read(_ ids: [UUID], as who: UUID? = nil, on conn: PGConnection? = nil) throws -> JSONValue {
        let c = conn ?? db
        try SecurityTests.act(c, as: "authenticated", who ?? person, claimsJSON: true)
        defer { try? SecurityTests.owner(c) }
        return try JSONValue.parse(c.query("select mark_notifications_read(\(ids)::uuid[])::text").first![0].string ?? "null")
    }

    /// `record_notification_action` as the app calls it for `who` (default: the person).
    func act(_ id: UUID, _ action: String, as who: UUID? = nil) throws {
        try SecurityTests.act(db, as: "authenticated", who ?? person, claimsJSON: true)
        defer { try? SecurityTests.owner(db) }
        _ = try db.query("select record_notification_action(\(id), \(action))")
    }

    /// The silent pushes APNs received: background, priority 5.
    var silentPushes: [FakeRequest] { apns.requests.filter { $0.header("apns-push-type") == "background" } }

    /// The badge a silent push carries in its data, and its `aps`.
    static func badge(of request: FakeRequest) throws -> (badge: Int?, aps: JSONValue?, type: String?) {
        let body = try JSONValue.parse(Data(request.body))
        return (body["badge"]?.intValue, body["aps"], body["type"]?.stringValue)
    }

    func count(_ sql: SQL) throws -> Int { try f.count(sql) }

    /// The badge corrections in the queue, by status.
    func badgeRows(_ status: String) throws -> Int {
        try count("select count(*) from notification_queue where kind = 'badge_sync' and status = \(status)")
    }

    /// The events of one queue row, as (event, reason).
    func events(_ id: UUID) throws -> [(String, String)] {
        try db.query("select event, coalesce(reason, '') as reason from notification_events where queue_id = \(id) order by id")
            .map { ($0["event"].string ?? "", $0["reason"].string ?? "") }
    }
}
