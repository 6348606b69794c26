import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// Email through SMTP (STARTTLS and AUTH) and SendGrid: the message as sent, and an address the
/// server refuses turns email off for its recipient.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct EmailPassTests: ProviderPassSuite {

    // MARK: - Email through SMTP and SendGrid

    @Test func emailThroughSMTPWithSTARTTLSAndAuth() throws {
        try withProviderLab { lab in
            let password = "s3cret-" + UUID().uuidString.prefix(8)
            let smtp = try FakeSMTPServer(tls: lab.certificates, user: "herald", password: String(password),
                                          recipientReplies: ["gone@example.com": "550 5.1.1 No such user"])
            defer { smtp.shutdown() }

            let now = Self.now()
            let ana = try lab.f.profile(email: "ana@example.com", emailOn: true)
            let goneUser = try lab.f.profile(email: "gone@example.com", emailOn: true)
            let sent = try lab.f.enqueue(to: ana, channel: "email", payload: #"{"title":"Weekly summary","body":"All good this week"}"#,
                                     at: now.addingTimeInterval(-10))
            let refused = try lab.f.enqueue(to: goneUser, channel: "email", at: now.addingTimeInterval(-10))
            var settings = lab.base
            settings["SMTP_URL"] = "smtp://herald:\(password)@localhost:\(smtp.port)"
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

            let (summary, code) = Self.pass(lab.url, settings, now: now)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(try lab.f.row(sent)["status"].string == "sent")
            let mails = smtp.mails
            #expect(mails.count == 1)
            let m = try #require(mails.first)
            #expect(m.tls, "the message went over STARTTLS")
            #expect(m.authenticatedUser == "herald")
            #expect(m.from == "noreply@example.com")
            #expect(m.recipients == ["ana@example.com"])
            #expect(m.header("Subject") == "Weekly summary")
            #expect(m.header("X-Herald-Notification-Id") == sent.uuidString.lowercased())
            #expect(m.body.contains("All good this week"))
            let d = try #require(try Self.deliveries(lab.db, sent).first)
            #expect(d["provider"].string == "smtp")
            #expect(d["outcome"].string == "delivered")

            // 550 on RCPT: the address is dead, email is turned off for that recipient.
            let r = try lab.f.row(refused)
            #expect(r["status"].string == "failed")
            #expect(r["permanent"].bool == true)
            let rd = try #require(try Self.deliveries(lab.db, refused).first)
            #expect(rd["outcome"].string == "destination_invalid")
            #expect(rd["provider_error_code"].string == "550")
            let p = try #require(try lab.db.query("""
                select notify_email, notify_email_disabled_reason from user_profiles where user_id = \(goneUser)
                """).first)
            #expect(p["notify_email"].bool == false)
            #expect((p["notify_email_disabled_reason"].string ?? "").contains("550"))
            let a = try #require(try lab.db.query("select notify_email from user_profiles where user_id = \(ana)").first)
            #expect(a["notify_email"].bool == true)
            // The password never lands in the database.
            #expect(try lab.f.count("""
                select count(*)::int from notification_deliveries where error like \("%" + password + "%")
                """) == 0)
        }
    }

    @Test func emailThroughSendGrid() throws {
        try withProviderLab { lab in
            let apiKey = "SG.test-" + UUID().uuidString
            let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: apiKey)
            defer { sendgrid.shutdown() }

            let now = Self.now()
            let ana = try lab.f.profile(email: "ana@example.com", emailOn: true)
            let id = try lab.f.enqueue(to: ana, channel: "email", payload: #"{"title":"Weekly summary","body":"All good this week"}"#,
                                   at: now.addingTimeInterval(-10))
            var settings = lab.base
            settings["SENDGRID_API_KEY"] = apiKey
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

            let (summary, code) = Self.pass(lab.url, settings, now: now)
            #expect(code == .ok, "\(summary.error ?? "")")
            let row = try lab.db.query("select status, provider_message_id from notification_queue where id = \(id)").first
            #expect(row?["status"].string == "sent")
            let mails = sendgrid.sent
            #expect(mails.count == 1)
            let m = try #require(mails.first)
            #expect(m.to == ["ana@example.com"])
            #expect(m.fromEmail == "noreply@example.com")
            #expect(m.subject == "Weekly summary")
            #expect(m.text.contains("All good this week"))
            #expect(row?["provider_message_id"].string == m.messageId)
            let d = try #require(try Self.deliveries(lab.db, id).first)
            #expect(d["provider"].string == "sendgrid")
            #expect(d["outcome"].string == "delivered")
        }
    }
}
