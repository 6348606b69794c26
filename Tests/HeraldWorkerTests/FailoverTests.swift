import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// Several providers per channel, in order, with failover, and the per-pass circuit breaker.
@Suite struct FailoverTests {
    typealias P = ProviderPass

    struct Email {
        let lab: P.Lab
        let sendgrid: FakeSendGrid
        let smtp: FakeSMTPServer
        var settings: [String: String]

        init() throws {
            lab = try P.Lab()
            let key = "SG.failover-" + UUID().uuidString
            sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: key)
            smtp = try FakeSMTPServer(tls: lab.certificates, user: "herald", password: "pw-failover")
            settings = lab.base
            settings["SENDGRID_API_KEY"] = key
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["SMTP_URL"] = "smtp://herald:pw-failover@localhost:\(smtp.port)"
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"
        }

        func cleanup() {
            sendgrid.shutdown()
            smtp.shutdown()
            lab.cleanup()
        }
    }

    @Test func theOrderIsConfigurableAndChecked() throws {
        let email = try Email()
        defer { email.cleanup() }
        let routes = try ChannelRoutes.load(Settings(email.settings))
        #expect(routes[.email]?.provider == .sendgrid)
        #expect(routes[.email]?.failoverOrder == [.sendgrid, .smtp])
        var reversed = email.settings
        reversed["HERALD_EMAIL_PROVIDERS"] = "smtp,sendgrid"
        #expect(try ChannelRoutes.load(Settings(reversed))[.email]?.provider == .smtp)
        var only = email.settings
        only["HERALD_EMAIL_PROVIDERS"] = "smtp"
        #expect(try ChannelRoutes.load(Settings(only))[.email]?.failoverOrder == [.smtp])
        var bad = email.settings
        bad["HERALD_EMAIL_PROVIDERS"] = "sendgrid,mailgun"
        #expect(throws: ConfigError.self) { try ChannelRoutes.load(Settings(bad)) }
    }

    /// SendGrid answers 500: the same pass sends through SMTP, and both attempts are recorded with
    /// the provider that answered.
    @Test func aSendGridServerErrorFailsOverToSMTP() throws {
        let email = try Email()
        defer { email.cleanup() }
        email.sendgrid.enqueue(FakeSendGrid.error(500, "internal error"))
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile(email: "ada@example.com", emailOn: true)
            let now = P.now()
            let id = try f.enqueue(to: user, channel: "email", at: now)
            let (summary, code) = P.pass(tdb.url, email.settings, now: now)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(try f.row(id)["status"].string == "sent")
            #expect(email.smtp.mails.count == 1)
            let attempts = try db.query("""
                select provider, outcome from notification_deliveries where queue_id = \(id) order by id
                """).map { "\($0["provider"].string ?? "")/\($0["outcome"].string ?? "")" }
            #expect(attempts == ["sendgrid/retry", "smtp/delivered"])
            #expect(try db.query("select reason from notification_trail where queue_id = \(id) and event = 'sent'").first?["reason"].string == "smtp")
        }
    }

    /// SendGrid says "slow down" for the whole account: the row it answered and every later row go
    /// through SMTP in the same pass; SendGrid is not called again.
    @Test func aThrottledSendGridFailsOverToSMTP() throws {
        let email = try Email()
        defer { email.cleanup() }
        email.sendgrid.enqueue(FakeResponse(status: 429, headers: [("retry-after", "120")], body: Array("{}".utf8)))
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let now = P.now()
            var ids: [UUID] = []
            for i in 0..<4 {
                let user = try f.profile(email: "user\(i)@example.com", emailOn: true)
                ids.append(try f.enqueue(to: user, channel: "email", at: now.addingTimeInterval(Double(-60 + i))))
            }
            let (summary, code) = P.pass(tdb.url, email.settings, now: now, batchSize: 1, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(email.sendgrid.server.requests.count == 1)
            #expect(email.smtp.mails.count == 4)
            for id in ids { #expect(try f.row(id)["status"].string == "sent") }
        }
    }

    /// SendGrid refuses the API key (401): the row it answered and every later row go through SMTP in the
    /// same pass, SendGrid is not called again, and the pass ends degraded (exit 4).
    @Test func aRefusedSendGridKeyFailsOverToSMTP() throws {
        let email = try Email()
        defer { email.cleanup() }
        var settings = email.settings
        settings["SENDGRID_API_KEY"] = "SG.rotated-" + UUID().uuidString
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let now = P.now()
            var ids: [UUID] = []
            for i in 0..<3 {
                let user = try f.profile(email: "user\(i)@example.com", emailOn: true)
                ids.append(try f.enqueue(to: user, channel: "email", at: now.addingTimeInterval(Double(-60 + i))))
            }
            let (summary, code) = P.pass(tdb.url, settings, now: now, batchSize: 1, drain: true)
            #expect(code == .degraded)
            #expect(summary.phaseErrors[.phase(.deliver)]?.contains("sendgrid") == true)
            #expect(email.sendgrid.server.requests.count == 1)
            #expect(email.smtp.mails.count == 3)
            for id in ids { #expect(try f.row(id)["status"].string == "sent") }
            let attempts = try db.query("""
                select provider, outcome from notification_deliveries where queue_id = \(ids[0]) order by id
                """).map { "\($0["provider"].string ?? "")/\($0["outcome"].string ?? "")" }
            #expect(attempts == ["sendgrid/retry", "smtp/delivered"])
        }
    }

    /// APNs 429 `TooManyRequests` is about one device token: a dozen such answers in a pass say nothing of
    /// APNs itself, so its breaker stays closed and the next row's token gets its push.
    @Test func slowDownsAboutOneDestinationDoNotOpenTheBreaker() throws {
        let lab = try P.Lab()
        defer { lab.cleanup() }
        let apns = try FakeAPNs(certificates: lab.certificates)
        defer { apns.shutdown() }
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let now = P.now()
            for i in 0..<12 {
                let user = try f.profile()
                let token = P.apnsToken()
                try f.token(user, token)
                apns.script(token, .error(429, "TooManyRequests"))
                _ = try f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(Double(-60 + i)))
            }
            let user = try f.profile()
            let good = P.apnsToken()
            try f.token(user, good)
            let last = try f.enqueue(to: user, channel: "push", at: now)
            let (summary, code) = P.pass(tdb.url, lab.base.merging(try lab.apns(apns)) { $1 }, now: now, batchSize: 1, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(summary.breakerOpen.isEmpty)
            #expect(try f.row(last)["status"].string == "sent")
        }
    }

    /// With one provider and every answer a 500, the breaker opens at its threshold: the provider is
    /// not called again this pass, and the rows never sent keep their attempt.
    @Test func theBreakerOpensAtItsThresholdAndChargesNothingForUnsentRows() throws {
        let lab = try P.Lab()
        defer { lab.cleanup() }
        let key = "SG.breaker-" + UUID().uuidString
        let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: key)
        defer { sendgrid.shutdown() }
        for _ in 0..<40 { sendgrid.enqueue(FakeSendGrid.error(500, "internal error")) }
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            var recipients: [UUID] = []
            for i in 0..<30 { recipients.append(try f.profile(email: "b\(i)@example.com", emailOn: true)) }
            let now = P.now()
            try f.enqueueMany(30, to: recipients, channel: "email", at: now)
            var settings = lab.base
            settings["SENDGRID_API_KEY"] = key
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"
            let path = NSTemporaryDirectory() + "herald-\(UUID().uuidString).prom"
            defer { unlink(path) }
            // One row a batch, so each request starts after the last answer: the threshold is exact.
            let (summary, code) = P.pass(tdb.url, settings, now: now, batchSize: 1, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(summary.breakerOpen == [.sendgrid])
            let calls = sendgrid.server.requests.count
            #expect(calls == 10, "\(calls) calls")
            #expect(try f.count("""
                select count(*)::int from notification_queue where status = 'pending' and attempts = 0 and run_after > now()
                """) == 30 - calls)
            #expect(try f.count("select count(*)::int from notification_events where event = 'released' and reason = 'breaker_open'") == 30 - calls)
            try Metrics.write(summary, to: path)
            #expect(try String(contentsOfFile: path, encoding: .utf8).contains(#"herald_pass_breaker_open{provider="sendgrid"} 1"#))
        }
    }
}
