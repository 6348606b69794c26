import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// SMS through Twilio: a recipient who unsubscribed (21610) has SMS turned off, and is sent no more.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct SMSPassTests: ProviderPassSuite {

    // MARK: - Twilio 21610 turns SMS off for the recipient

    @Test func twilioUnsubscribedTurnsSMSOff() throws {
        try withProviderLab { lab in
            let sid = "AC" + String(repeating: "0123456789abcdef", count: 2)
            let authToken = "twilio-auth-" + UUID().uuidString
            let twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: authToken)
            defer { twilio.shutdown() }

            let now = Self.now()
            let phone = "+15555550142"
            let okPhone = "+15555550143"
            let user = try lab.f.profile(phone: phone, sms: true)
            let other = try lab.f.profile(phone: okPhone, sms: true)
            twilio.fail(to: phone, code: 21610, message: "Attempt to send to unsubscribed recipient")
            let id = try lab.f.enqueue(to: user, channel: "sms", at: now.addingTimeInterval(-10))
            let okId = try lab.f.enqueue(to: other, channel: "sms", at: now.addingTimeInterval(-10))
            var settings = lab.base
            settings["TWILIO_ACCOUNT_SID"] = sid
            settings["TWILIO_AUTH_TOKEN"] = authToken
            settings["TWILIO_FROM"] = "+15005550006"
            settings["TWILIO_URL"] = twilio.baseURL

            let (s1, c1) = Self.pass(lab.url, settings, now: now)
            #expect(c1 == .ok, "\(s1.error ?? "")")
            let row = try lab.f.row(id)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == true)
            #expect((row["last_error"].string ?? "").contains("21610"))
            #expect(try lab.f.row(okId)["status"].string == "sent")
            #expect(twilio.accepted.map { $0["To"] } == [okPhone])

            let d = try #require(try Self.deliveries(lab.db, id).first)
            #expect(d["provider"].string == "twilio")
            #expect(d["outcome"].string == "destination_invalid")
            #expect(d["provider_error_code"].string == "21610")

            let p = try #require(try lab.db.query("""
                select notify_sms, notify_sms_disabled_reason from user_profiles where user_id = \(user)
                """).first)
            #expect(p["notify_sms"].bool == false)
            #expect((p["notify_sms_disabled_reason"].string ?? "").contains("21610"))
            let q = try #require(try lab.db.query("select notify_sms from user_profiles where user_id = \(other)").first)
            #expect(q["notify_sms"].bool == true)

            // The next SMS to that recipient is not sent: the channel is off.
            let later = try lab.f.enqueue(to: user, channel: "sms", kind: "reminder", at: now.addingTimeInterval(50))
            let requestsBefore = twilio.server.requests.count
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(60))
            let l = try lab.f.row(later)
            #expect(l["status"].string == "skipped")
            #expect(l["skip_reason"].string == "channel_disabled")
            #expect(twilio.server.requests.count == requestsBefore)
        }
    }
}
