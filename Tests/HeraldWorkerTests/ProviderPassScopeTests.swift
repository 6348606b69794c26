import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// Passes against the fake providers over TLS about whom a provider's "slow down" concerns (one
/// destination or the whole provider) and about a configuration slip that makes most destinations look
/// dead. Uses `ProviderPass`' harness.
@Suite struct ProviderPassScopeTests {
    typealias P = ProviderPass

    static func releasedCount(_ db: PGConnection, reason: String) throws -> Int {
        try db.query("""
            select count(*)::int as n from notification_events where event = 'released' and reason = \(reason)
            """).first?["n"].int ?? -1
    }

    static func deliveryCount(_ db: PGConnection, code: String) throws -> Int {
        try db.query("""
            select count(*)::int as n from notification_deliveries where provider_error_code = \(code)
            """).first?["n"].int ?? -1
    }

    // MARK: - APNs 429 TooManyRequests is about one device token

    @Test func apnsTooManyRequestsHoldsBackOnlyThatToken() throws {
        let lab = try P.Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)

            let now = P.now()
            var ids: [UUID] = []
            var tokens: [String] = []
            for i in 0..<40 {
                let user = try f.profile()
                let token = P.apnsToken()
                try f.token(user, token)
                tokens.append(token)
                // Distinct run_after: the rows are claimed in this order, 10 a batch.
                ids.append(try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(Double(-400 + i * 5))))
            }
            // Three tokens of the first batch are pushed too often: APNs answers 429 for them only.
            let busy: Set<Int> = [0, 4, 7]
            for i in busy { apns.script(tokens[i], .error(429, "TooManyRequests", headers: [("retry-after", "120")])) }

            let (summary, code) = P.pass(tdb.url, lab.base.merging(try lab.apns(apns)) { $1 }, now: now,
                                         batchSize: 10, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(summary.batches == 4)
            // Every token was tried once: the 429s did not stop the pass from calling APNs.
            #expect(apns.requests.count == 40)
            #expect(Set(P.paths(apns.requests)) == Set(tokens))
            #expect(summary.sent == 37)
            #expect(try Self.deliveryCount(db, code: "throttled") == 0, "no send was held back provider-wide")

            for (i, id) in ids.enumerated() {
                let row = try f.row(id)
                if busy.contains(i) {
                    #expect(row["status"].string == "failed", "row \(i)")
                    #expect(row["permanent"].bool == false, "row \(i)")
                    let after = try #require(row["run_after"].date).timeIntervalSince(now)
                    #expect(after >= 119 && after <= 130, "row \(i) retries after \(after) s (Retry-After 120)")
                } else {
                    #expect(row["status"].string == "sent", "row \(i)")
                }
            }
            // The busy tokens stay active: a 429 says nothing about the token being dead.
            #expect(try f.count("select count(*)::int from device_tokens where is_active") == 40)
        }
    }

    // MARK: - Twilio and SendGrid 429s are about the account

    @Test func twilioAndSendGridSlowDownsHoldTheProviderBackForThePass() throws {
        let lab = try P.Lab()
        defer { lab.cleanup() }
        let sid = "AC" + String(repeating: "0123456789abcdef", count: 2)
        let authToken = "twilio-auth-" + UUID().uuidString
        let twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: authToken)
        defer { twilio.shutdown() }
        let apiKey = "SG.scope-test-" + UUID().uuidString
        let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: apiKey)
        defer { sendgrid.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)

            let now = P.now()
            var sms: [UUID] = []
            var email: [UUID] = []
            for i in 0..<3 {
                let user = try f.profile(email: "member\(i)@example.com", phone: "+1555555020\(i)", emailOn: true, sms: true)
                sms.append(try f.enqueue(to: user, channel: "sms", at: now.addingTimeInterval(Double(-300 + i * 20))))
                email.append(try f.enqueue(to: user, channel: "email", at: now.addingTimeInterval(Double(-290 + i * 20))))
            }
            var limited = FakeTwilio.error(429, code: 20429, message: "Too Many Requests")
            limited.headers.append(("retry-after", "120"))
            twilio.enqueue(limited)
            sendgrid.enqueue(FakeSendGrid.error(429, "too many requests", headers: [("retry-after", "120")]))

            var settings = lab.base
            settings["TWILIO_ACCOUNT_SID"] = sid
            settings["TWILIO_AUTH_TOKEN"] = authToken
            settings["TWILIO_FROM"] = "+15005550006"
            settings["TWILIO_URL"] = twilio.baseURL
            settings["SENDGRID_API_KEY"] = apiKey
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

            let (summary, code) = P.pass(tdb.url, settings, now: now, batchSize: 1, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(summary.batches == 6, "every row claimed, one a batch")
            #expect(twilio.server.requests.count == 1, "Twilio called again after its 429")
            #expect(sendgrid.server.requests.count == 1, "SendGrid called again after its 429")
            #expect(twilio.accepted.isEmpty && sendgrid.sent.isEmpty)
            for id in sms + email {
                let row = try f.row(id)
                // The answered row used an attempt (failed, retrying); the others were never sent (released).
                #expect(row["status"].string == (row["attempts"].int == 0 ? "pending" : "failed"))
                #expect(row["permanent"].bool == false)
                let after = try #require(row["run_after"].date).timeIntervalSince(now)
                #expect(after >= 100 && after <= 130, "retries after \(after) s")
            }
            #expect(try Self.releasedCount(db, reason: "throttled") == 4)
            #expect(summary.released == 4)
        }
    }

    // MARK: - FCM 429: the QuotaFailure says whose quota

    @Test func fcmDeviceQuotaHoldsBackTheTokenAndProjectQuotaTheProvider() throws {
        let lab = try P.Lab()
        defer { lab.cleanup() }
        let fcm = try FakeFCM(certificates: lab.certificates)
        defer { fcm.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)

            let now = P.now()
            var ids: [UUID] = []
            var tokens: [String] = []
            for i in 0..<4 {
                let user = try f.profile()
                let token = "fcm-\(i)-" + UUID().uuidString
                try f.token(user, token, provider: "fcm")
                tokens.append(token)
                ids.append(try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(Double(-300 + i * 20))))
            }
            fcm.script(tokens[0], .quotaExceeded(.device, retryAfter: 90))   // this device only
            fcm.script(tokens[2], .quotaExceeded(.project, retryAfter: 90))  // the whole project

            let (summary, code) = P.pass(tdb.url, lab.base.merging(try lab.fcm(fcm)) { $1 }, now: now,
                                         batchSize: 1, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(summary.batches == 4)
            let sends = fcm.requests.filter { $0.path.hasSuffix("/messages:send") }
            #expect(sends.count == 3, "the device quota did not stop the next send; the project quota did")
            #expect(try f.row(ids[1])["status"].string == "sent")
            for i in [0, 2] {
                let row = try f.row(ids[i])
                #expect(row["status"].string == "failed" && row["permanent"].bool == false, "row \(i)")
                let after = try #require(row["run_after"].date).timeIntervalSince(now)
                #expect(after >= 89 && after <= 100, "row \(i) retries after \(after) s")
            }
            let held = try f.row(ids[3])
            #expect(held["status"].string == "pending" && held["attempts"].int == 0, "never sent: released, attempt refunded")
            #expect(try Self.releasedCount(db, reason: "throttled") == 1)
        }
    }

    // MARK: - A configuration slip is not a dead destination

    @Test func apnsBadDeviceTokenEverywhereIsAConfigurationSlip() throws {
        let lab = try P.Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let settings = lab.base.merging(try lab.apns(apns)) { $1 }

            // A wrong APNS_ENV: every one of 30 tokens answers BadDeviceToken.
            let now = P.now()
            var ids: [UUID] = []
            var tokenIds: [UUID] = []
            for _ in 0..<30 {
                let user = try f.profile()
                let token = P.apnsToken()
                tokenIds.append(try f.token(user, token))
                apns.script(token, .error(400, "BadDeviceToken"))
                ids.append(try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10)))
            }
            let logPath = try lab.file("", name: "log")
            let handle = try #require(FileHandle(forWritingAtPath: logPath))
            let stream = LogStream(handle)
            let logger = Logger(label: "herald") { JSONLogHandler(label: $0, level: .info, stream: stream) }
            let (summary, code) = P.pass(tdb.url, settings, now: now, logger: logger)
            try handle.close()
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(apns.requests.count == 30)

            // No token deactivated; every row retryable, naming what to check.
            #expect(try f.count("select count(*)::int from device_tokens where is_active") == 30)
            for id in ids {
                let row = try f.row(id)
                #expect(row["status"].string == "failed")
                #expect(row["permanent"].bool == false)
                let error = row["last_error"].string ?? ""
                #expect(error.contains("APNS_ENV"), "\(error)")
                #expect(error.contains("30 of 30"), "\(error)")
                #expect(error.contains("tokens were not deactivated"), "\(error)")
            }
            #expect(try Self.deliveryCount(db, code: "config_suspect") == 30)
            #expect(summary.retrying == 30)
            #expect(summary.configSuspect == [.apns: 30])
            #expect(summary.json["config_suspect"]?["apns"]?.doubleValue == 30)
            #expect(Metrics.text(summary).contains("herald_pass_config_suspect{provider=\"apns\"} 30\n"))

            // Said loudly: one error line naming the provider and what to check.
            let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n")
                .compactMap { try? JSONValue.parse(String($0)) }
            let errors = lines.filter { $0["level"]?.stringValue == "error" && $0["provider"]?.stringValue == "apns" }
            #expect(errors.count == 1, "\(errors.map(\.jsonText))")
            #expect(errors.first?["check"]?.stringValue?.contains("APNS_ENV") == true)
            #expect(errors.first?["msg"]?.stringValue?.contains("configuration") == true)

            // The normal case, in a later pass: 2 dead tokens among 30 good ones are deactivated.
            let later = now.addingTimeInterval(5)
            var deadIds: [UUID] = []
            var goodRows: [UUID] = []
            for i in 0..<32 {
                let user = try f.profile()
                let token = P.apnsToken()
                let tokenId = try f.token(user, token)
                if i % 16 == 3 {
                    apns.script(token, .error(400, "BadDeviceToken"))
                    deadIds.append(tokenId)
                    try f.enqueue(to: user, channel: "push", at: later.addingTimeInterval(-1))
                } else {
                    goodRows.append(try f.enqueue(to: user, channel: "push", at: later.addingTimeInterval(-1)))
                }
            }
            let (summary2, code2) = P.pass(tdb.url, settings, now: later)
            #expect(code2 == .ok, "\(summary2.error ?? "")")
            #expect(summary2.configSuspect.isEmpty)
            #expect(summary2.sent == 30)
            for id in deadIds {
                let t = try P.token(db, id)
                #expect(t["is_active"].bool == false)
                #expect((t["deactivated_reason"].string ?? "").contains("BadDeviceToken"))
            }
            for id in goodRows { #expect(try f.row(id)["status"].string == "sent") }
            // The first pass's tokens are still active.
            for id in tokenIds { #expect(try P.token(db, id)["is_active"].bool == true) }
        }
    }

    // MARK: - SMTP: only a dead mailbox switches email off

    @Test func smtpRelayDenialKeepsEmailOnAndADeadMailboxTurnsItOff() throws {
        let lab = try P.Lab()
        defer { lab.cleanup() }
        let smtp = try FakeSMTPServer(tls: lab.certificates, user: "herald", password: "pw-scope", recipientReplies: [
            "outside@example.org": "550 5.7.1 <outside@example.org>: Relay access denied",
            "gone@example.com": "550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown",
        ])
        defer { smtp.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)

            let now = P.now()
            let outside = try f.profile(email: "outside@example.org", emailOn: true)
            let gone = try f.profile(email: "gone@example.com", emailOn: true)
            let relayRow = try f.enqueue(to: outside, channel: "email", at: now.addingTimeInterval(-10))
            let goneRow = try f.enqueue(to: gone, channel: "email", at: now.addingTimeInterval(-10))
            var settings = lab.base
            settings["SMTP_URL"] = "smtp://herald:pw-scope@localhost:\(smtp.port)"
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

            let (summary, code) = P.pass(tdb.url, settings, now: now)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(smtp.mails.isEmpty)

            // 550 5.7.1 relaying denied: our server's refusal, not the recipient's. Retried, email stays on.
            let r = try f.row(relayRow)
            #expect(r["status"].string == "failed")
            #expect(r["permanent"].bool == false)
            #expect((r["last_error"].string ?? "").contains("SMTP_URL"))
            let o = try #require(try db.query("""
                select notify_email, notify_email_disabled_reason from user_profiles where user_id = \(outside)
                """).first)
            #expect(o["notify_email"].bool == true)
            #expect(o["notify_email_disabled_reason"].string == nil)

            // 550 5.1.1: the mailbox does not exist. Email is switched off for that recipient.
            let g = try f.row(goneRow)
            #expect(g["status"].string == "failed")
            #expect(g["permanent"].bool == true)
            let p = try #require(try db.query("""
                select notify_email, notify_email_disabled_reason from user_profiles where user_id = \(gone)
                """).first)
            #expect(p["notify_email"].bool == false)
            #expect((p["notify_email_disabled_reason"].string ?? "").contains("5.1.1"))
        }
    }
}
