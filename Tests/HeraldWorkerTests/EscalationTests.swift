import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A critical notification reaches someone: escalation along the chain, against the Twilio fake.
@Suite struct EscalationTests {
    typealias P = ProviderPass

    // MARK: - The pure rules

    @Test func theChainSkipsChannelsTheRecipientTurnedOff() {
        var prefs = Preferences(userId: UUID())
        prefs.notifySMS = false
        prefs.notifyEmail = true
        let policy = EscalationPolicy()
        #expect(policy.next(after: .push, kind: "system", prefs: prefs, aboutAnotherMember: false) == .email)
        prefs.notifyEmail = false
        #expect(policy.next(after: .push, kind: "system", prefs: prefs, aboutAnotherMember: false) == nil)
        // About another member, the champion toggles decide.
        prefs.championNotifySMS = true
        #expect(policy.next(after: .push, kind: "pattern_alert", prefs: prefs, aboutAnotherMember: true) == .sms)
        #expect(policy.next(after: .email, kind: "system", prefs: prefs, aboutAnotherMember: false) == nil)
        #expect(policy.applies(to: .critical, channel: .push, kind: "system"))
        #expect(!policy.applies(to: .attention, channel: .push, kind: "system"))
        #expect(!policy.applies(to: .critical, channel: .webhook, kind: "system"))
    }

    @Test func chainsParseAndPerKindChainsWin() {
        #expect(EscalationPolicy.parseChain("push, sms,email") == [.push, .sms, .email])
        #expect(EscalationPolicy.parseChain("off") == [])
        #expect(EscalationPolicy.parseChain("push,fax") == nil)
        #expect(EscalationPolicy.parseChain("push,push") == nil)
        let policy = EscalationPolicy(chain: [.push, .sms], perKind: ["reminder": [.push, .email]])
        #expect(policy.chain(for: "reminder") == [.push, .email])
        #expect(policy.chain(for: "system") == [.push, .sms])
        #expect(EscalationPolicy.dedupeKey(from: UUID(uuidString: "00000000-0000-0000-0000-00000000000a")!, to: .sms)
                == "escalation:00000000-0000-0000-0000-00000000000a:sms")
    }

    @Test func interruptionLevels() {
        #expect(InterruptionLevel.of(severity: .critical, priority: .low) == .timeSensitive)
        #expect(InterruptionLevel.of(severity: .attention, priority: .normal) == .active)
        #expect(InterruptionLevel.of(severity: nil, priority: .low) == .passive)
    }

    // MARK: - End to end

    struct Setup {
        let lab: P.Lab
        let twilio: FakeTwilio
        var settings: [String: String]

        init() throws {
            lab = try P.Lab()
            let sid = "AC" + String(repeating: "0123456789abcdef", count: 2)
            let token = "twilio-auth-" + UUID().uuidString
            twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: token)
            settings = lab.base
            settings["TWILIO_ACCOUNT_SID"] = sid
            settings["TWILIO_AUTH_TOKEN"] = token
            settings["TWILIO_FROM"] = "+15005550006"
            settings["TWILIO_URL"] = twilio.baseURL
            settings["HERALD_CHANNEL_PUSH"] = "log"   // push is routable, but the recipient has no token
        }

        func cleanup() {
            twilio.shutdown()
            lab.cleanup()
        }
    }

    /// A critical alert to a recipient with no push token reaches them by SMS, once, even with two
    /// passes at once; the trail links both rows and `herald explain` shows the chain.
    @Test func aCriticalPushWithNoTokenReachesTheRecipientBySMSOnce() throws {
        let setup = try Setup()
        defer { setup.cleanup() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile(phone: "+15555550123", push: true, sms: true)
            let now = P.now()
            let original = try f.enqueue(to: user, channel: "push", severity: "critical", at: now, priority: "high")

            let settings = setup.settings
            inParallel(2) { _ in
                _ = P.pass(tdb.url, settings, now: now, batchSize: 10, drain: true)
            }
            #expect(setup.twilio.accepted.count == 1, "one SMS, whatever the passes")
            #expect(setup.twilio.accepted.first?["To"] == "+15555550123")
            #expect(try f.row(original)["skip_reason"].string == "no_destination")
            let escalated = try #require(try db.query("""
                select id, status, channel, severity from notification_queue where escalated_from = \(original)
                """).first)
            #expect(escalated["channel"].string == "sms")
            #expect(escalated["status"].string == "sent")
            #expect(escalated["severity"].string == "critical")
            #expect(try f.count("select count(*)::int from notification_events where queue_id = \(original) and event = 'escalated'") == 1)

            let report = try Explain.report(db, id: original)
            #expect(Explain.text(report).contains("escalated to"))
            let back = try Explain.report(db, id: try #require(escalated["id"].uuid))
            #expect(back["row"]?["escalated_from"]?.stringValue == original.uuidString.lowercased())
        }
    }

    /// A critical alert's copies on several channels share a group: when its push copy reaches no one,
    /// it does not escalate to SMS where the alert already has an SMS copy — one SMS, not two.
    @Test func aGroupWithAnSMSCopyAlreadyDoesNotEscalateToASecondSMS() throws {
        let setup = try Setup()
        defer { setup.cleanup() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile(phone: "+15555550123", push: true, sms: true)
            let now = P.now()
            let push = try f.enqueue(to: user, channel: "push", severity: "critical", at: now, priority: "high")
            let sms = try f.enqueue(to: user, channel: "sms", severity: "critical", at: now, priority: "high")
            let group = "alert:\(UUID().uuidString.lowercased()):14:\(user.uuidString.lowercased())"
            try db.execute("update notification_queue set notification_group = \(group) where id in (\(push), \(sms))")
            try db.execute("update notification_queue set dedupe_key = \(group + ":sms") where id = \(sms)")

            _ = P.pass(tdb.url, setup.settings, now: now, batchSize: 10, drain: true)
            #expect(try f.row(push)["skip_reason"].string == "no_destination")
            #expect(try f.row(sms)["status"].string == "sent")
            #expect(setup.twilio.accepted.count == 1, "the alert's own SMS only")
            #expect(try f.count("select count(*)::int from notification_queue where escalated_from = \(push)") == 0)
        }
    }

    /// `device_tokens.provider` is an app's text: a token whose provider is unknown (the check
    /// constraint dropped by a migration of the app's) or not a push provider is never sent to APNs.
    /// The critical row has no destination, says why in last_error, and escalates to SMS.
    @Test func aTokenWithAnUnknownProviderIsNotTakenForAPNs() throws {
        let setup = try Setup()
        defer { setup.cleanup() }
        let apns = try FakeAPNs(certificates: setup.lab.certificates)
        defer { apns.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            try db.execute("alter table device_tokens drop constraint if exists device_tokens_provider_check")
            let user = try f.profile(phone: "+15555550125", push: true, sms: true)
            let huawei = P.apnsToken(), sms = P.apnsToken()
            try f.token(user, huawei, provider: "huawei")
            try f.token(user, sms, provider: "twilio")
            var settings = setup.settings.merging(try setup.lab.apns(apns)) { $1 }
            settings["HERALD_CHANNEL_PUSH"] = nil
            let now = P.now()
            let original = try f.enqueue(to: user, channel: "push", severity: "critical", at: now)
            _ = P.pass(tdb.url, settings, now: now, batchSize: 10, drain: true)
            #expect(apns.requests.isEmpty, "nothing went to APNs")
            let row = try f.row(original)
            #expect(row["skip_reason"].string == "no_destination")
            let error = try #require(row["last_error"].string)
            #expect(error.contains("'huawei' is unknown"))
            #expect(error.contains("'twilio' is not a push provider"))
            #expect(try f.count("select count(*)::int from notification_deliveries where queue_id = \(original)") == 0)
            #expect(setup.twilio.accepted.count == 1, "the critical row escalated to SMS")
        }
    }

    /// Every destination dead (APNs Unregistered): the push fails for good and the SMS goes out.
    @Test func aCriticalPushWhoseTokensAreDeadEscalates() throws {
        let setup = try Setup()
        defer { setup.cleanup() }
        let apns = try FakeAPNs(certificates: setup.lab.certificates)
        defer { apns.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile(phone: "+15555550124", push: true, sms: true)
            let token = P.apnsToken()
            try f.token(user, token)
            apns.script(token, .error(410, "Unregistered"))
            var settings = setup.settings.merging(try setup.lab.apns(apns)) { $1 }
            settings["HERALD_CHANNEL_PUSH"] = nil
            let now = P.now()
            let original = try f.enqueue(to: user, channel: "push", severity: "critical", at: now)
            _ = P.pass(tdb.url, settings, now: now, batchSize: 10, drain: true)
            #expect(try f.row(original)["status"].string == "failed")
            #expect(setup.twilio.accepted.count == 1)
            #expect(try f.count("select count(*)::int from notification_queue where escalated_from = \(original) and status = 'sent'") == 1)
        }
    }

    @Test func noEscalationWhenTheRecipientTurnedTheOtherChannelsOff() throws {
        let setup = try Setup()
        defer { setup.cleanup() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile(phone: "+15555550123", push: true, sms: false)
            let now = P.now()
            _ = try f.enqueue(to: user, channel: "push", severity: "critical", at: now)
            _ = P.pass(tdb.url, setup.settings, now: now, batchSize: 10, drain: true)
            #expect(setup.twilio.accepted.isEmpty)
            #expect(try f.count("select count(*)::int from notification_queue where escalated_from is not null") == 0)
        }
    }

    @Test func aNonCriticalRowDoesNotEscalate() throws {
        let setup = try Setup()
        defer { setup.cleanup() }
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile(phone: "+15555550123", push: true, sms: true)
            let now = P.now()
            _ = try f.enqueue(to: user, channel: "push", severity: "attention", at: now)
            _ = P.pass(tdb.url, setup.settings, now: now, batchSize: 10, drain: true)
            #expect(setup.twilio.accepted.isEmpty)
        }
    }

    /// The escalated row is judged like any other: quiet hours (level none, action defer) hold it.
    @Test func quietHoursDeferAnEscalatedRow() throws {
        let setup = try Setup()
        defer { setup.cleanup() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let now = P.now()
            // A quiet window around the current UTC time, whatever it is.
            let cal = Calendar(identifier: .gregorian)
            var utc = cal
            utc.timeZone = TimeZone(identifier: "UTC")!
            let hour = utc.component(.hour, from: now)
            let start = String(format: "%02d:00", (hour + 23) % 24), end = String(format: "%02d:00", (hour + 2) % 24)
            let user = try f.profile(phone: "+15555550123", push: true, sms: true, quiet: (start, end),
                                     level: "none", action: "defer")
            _ = try f.enqueue(to: user, channel: "push", severity: "critical", at: now)
            _ = P.pass(tdb.url, setup.settings, now: now, batchSize: 10, drain: true)
            #expect(setup.twilio.accepted.isEmpty)
            let escalated = try #require(try db.query("""
                select status, run_after from notification_queue where escalated_from is not null
                """).first)
            #expect(escalated["status"].string == "pending")
            #expect((escalated["run_after"].date ?? now) > now.addingTimeInterval(1800))
        }
    }
}
