import Crypto
import Foundation
import HeraldChannels
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Delivery truth (what became of a message after the provider accepted it), end to end against a
/// real PostgreSQL and the loopback fakes: the `statuses` phase polling FakeTwilio, and the `events`
/// phase applying provider events stored in `provider_events` with real signatures (a P-256 key pair
/// for SendGrid, HMAC-SHA1 for Twilio, HMAC-SHA256 for WhatsApp).
@Suite struct ProviderTruthPassTests {
    typealias Lab = ProviderPass.Lab

    static func pass(_ url: String, _ settings: [String: String], now: Date, phases: [Phase]) -> (Summary, ExitCode) {
        ProviderPass.pass(url, settings, now: now, phases: phases)
    }

    static func delivery(_ db: PGConnection, _ queueId: UUID) throws -> PGRow {
        try #require(try db.query("""
            select id, provider_message_id, final_status, final_error_code, final_error, final_source, final_opt_out,
                   final_event_id, truth_checks
              from notification_deliveries where queue_id = \(queueId) and outcome = 'delivered'
            """).first)
    }

    static func profile(_ db: PGConnection, _ user: UUID) throws -> PGRow {
        try #require(try db.query("""
            select notify_sms, notify_sms_disabled_reason, notify_email, champion_notify_email, notify_email_disabled_reason,
                   notify_whatsapp, notify_whatsapp_disabled_reason
              from user_profiles where user_id = \(user)
            """).first)
    }

    @discardableResult
    static func event(_ db: PGConnection, _ provider: String, url: String? = nil, headers: JSONValue, body: String) throws -> Int {
        try #require(try db.query("""
            insert into provider_events (provider, url, headers, body) values (\(provider), \(url), \(headers.jsonText)::jsonb, \(body))
            returning id
            """).first?["id"].int)
    }

    static func outcome(_ db: PGConnection, _ id: Int) throws -> (String?, String?) {
        let row = try db.query("select outcome, error, processed_at from provider_events where id = \(id)").first
        return (row?["outcome"].string, row?["error"].string)
    }

    // MARK: - Twilio polling

    /// A fake Twilio over TLS, and the settings that send SMS through it.
    static func twilio(_ lab: Lab) throws -> (FakeTwilio, [String: String]) {
        let sid = "AC" + String(repeating: "0123456789abcdef", count: 2)
        let authToken = "twilio-auth-" + UUID().uuidString
        let twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: authToken)
        var settings = lab.base
        settings["TWILIO_ACCOUNT_SID"] = sid
        settings["TWILIO_AUTH_TOKEN"] = authToken
        settings["TWILIO_FROM"] = "+15005550006"
        settings["TWILIO_URL"] = twilio.baseURL
        return (twilio, settings)
    }

    @Test func twilioPollingRecordsFinalStatusesAndTurnsDeadNumbersOff() throws {
        try withProviderLab { lab in
            let (twilio, settings) = try Self.twilio(lab.files)
            defer { twilio.shutdown() }

            let now = ProviderPass.now()
            let phones = ["+15555550201", "+15555550202", "+15555550203", "+15555550204"]
            let users = try phones.map { try lab.f.profile(phone: $0, sms: true) }
            let rows = try users.map { try lab.f.enqueue(to: $0, channel: "sms", at: now.addingTimeInterval(-10)) }

            let (s1, c1) = Self.pass(lab.url, settings, now: now, phases: [.deliver, .statuses])
            #expect(c1 == .ok, "\(s1.error ?? "")")
            #expect(s1.sent == 4)
            #expect(twilio.statusRequests.isEmpty, "a message is not polled in the pass that sent it")
            let sids = try rows.map { try #require(Self.delivery(lab.db, $0)["provider_message_id"].string) }
            twilio.setStatus(sids[0], "delivered")
            twilio.setStatus(sids[1], "undelivered", errorCode: 30006)   // landline / unreachable carrier: SMS off
            twilio.setStatus(sids[2], "failed", errorCode: 30007)        // carrier filtering: recorded only
            twilio.setStatus(sids[3], "sent")                            // not final yet

            // One minute on: still too young to ask about.
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(60), phases: [.statuses])
            #expect(twilio.statusRequests.isEmpty)

            let (s2, c2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(180), phases: [.statuses])
            #expect(c2 == .ok, "\(s2.phaseErrors)")
            #expect(Set(twilio.statusRequests) == Set(sids))
            #expect(s2.generated[.statusesChecked] == 4)
            #expect(s2.generated[.statusesFinal] == 3)

            let d0 = try Self.delivery(lab.db, rows[0])
            #expect(d0["final_status"].string == "delivered")
            #expect(d0["final_source"].string == "poll")
            #expect(d0["final_opt_out"].bool == false)
            let d1 = try Self.delivery(lab.db, rows[1])
            #expect(d1["final_status"].string == "undelivered")
            #expect(d1["final_error_code"].string == "30006")
            #expect(d1["final_opt_out"].bool == true)
            // `herald explain` tells what became of it.
            let explained = Explain.text(try Explain.report(lab.db, id: rows[1]))
            #expect(explained.contains("then: undelivered 30006"), "\(explained)")
            let d2 = try Self.delivery(lab.db, rows[2])
            #expect(d2["final_status"].string == "failed")
            #expect(d2["final_error_code"].string == "30007")
            #expect(d2["final_opt_out"].bool == false)
            let d3 = try Self.delivery(lab.db, rows[3])
            #expect(d3["final_status"].string == nil)
            #expect(d3["truth_checks"].int == 1)

            let p1 = try Self.profile(lab.db, users[1])
            #expect(p1["notify_sms"].bool == false)
            #expect((p1["notify_sms_disabled_reason"].string ?? "").contains("30006"))
            for u in [users[0], users[2], users[3]] { #expect(try Self.profile(lab.db, u)["notify_sms"].bool == true) }

            // Soon after, the `sent` one is not asked again (the interval doubles: 4 min after one check)…
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(240), phases: [.statuses])
            #expect(twilio.statusRequests.count == 4)
            // …later it is, and only it: the others are final.
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(8 * 60), phases: [.statuses])
            #expect(twilio.statusRequests.count == 5)
            #expect(twilio.statusRequests.last == sids[3])
            #expect(try Self.delivery(lab.db, rows[3])["truth_checks"].int == 2)

            // After 48 hours without a final word, polling gives up.
            let (s3, _) = Self.pass(lab.url, settings, now: now.addingTimeInterval(49 * 3600), phases: [.statuses])
            #expect(twilio.statusRequests.count == 5)
            #expect(s3.generated[.statusesExpired] == 1)
            let d3b = try Self.delivery(lab.db, rows[3])
            #expect(d3b["final_status"].string == "expired")
            #expect(d3b["final_error_code"].string == "poll_window")

            // A later SMS to the dead number is not sent: the channel is off.
            let later = try lab.f.enqueue(to: users[1], channel: "sms", kind: "reminder", at: now.addingTimeInterval(49 * 3600))
            let sent = twilio.accepted.count
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(49 * 3600 + 60), phases: [.deliver])
            #expect(try lab.f.row(later)["skip_reason"].string == "channel_disabled")
            #expect(twilio.accepted.count == sent)
        }
    }

    /// A message the provider does not know (404), or whose stored id cannot be asked about, is closed
    /// as `unknown` with the provider's code; another queue row's delivery is left as it was.
    @Test func messagesTheProviderDoesNotKnowAreClosedAsUnknown() throws {
        try withProviderLab { lab in
            let (twilio, settings) = try Self.twilio(lab.files)
            defer { twilio.shutdown() }

            let now = ProviderPass.now()
            let users = try ["+15555550301", "+15555550302", "+15555550303"].map { try lab.f.profile(phone: $0, sms: true) }
            let rows = try users.map { try lab.f.enqueue(to: $0, channel: "sms", at: now.addingTimeInterval(-10)) }
            let (s1, _) = Self.pass(lab.url, settings, now: now, phases: [.deliver])
            #expect(s1.sent == 3)
            // One id Twilio never issued (a well-formed SID: asked, 404), one that is no SID at all (not asked).
            try lab.db.execute("update notification_deliveries set provider_message_id = \("SM" + String(repeating: "f", count: 32)) where queue_id = \(rows[0])")
            try lab.db.execute("update notification_deliveries set provider_message_id = 'not-a-sid' where queue_id = \(rows[1])")
            let known = try #require(try Self.delivery(lab.db, rows[2])["provider_message_id"].string)
            twilio.setStatus(known, "sent")

            let (s2, c2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(180), phases: [.statuses])
            #expect(c2 == .ok, "\(s2.phaseErrors)")
            #expect(s2.generated[.statusesChecked] == 2)
            #expect(s2.generated[.statusesFinal] == 2)
            for row in rows[0...1] {
                let d = try Self.delivery(lab.db, row)
                #expect(d["final_status"].string == "unknown")
                #expect(d["final_error_code"].string == "20404")
                #expect(d["final_source"].string == "poll")
            }
            #expect(try Self.delivery(lab.db, rows[2])["final_status"].string == nil)
        }
    }

    // MARK: - SendGrid events

    /// Signs a SendGrid Event Webhook body as SendGrid does: ECDSA P-256 over timestamp + body.
    static func sendGridHeaders(_ key: P256.Signing.PrivateKey, _ body: String, timestamp: String = "1700000000") throws -> JSONValue {
        let signature = try key.signature(for: Data(Array(timestamp.utf8) + Array(body.utf8)))
        return [SendGridTruth.signatureHeader: .string(signature.derRepresentation.base64EncodedString()),
                SendGridTruth.timestampHeader: .string(timestamp), "content-type": "application/json"]
    }

    static func sendGridEvent(_ event: String, messageId: String, email: String, extra: [String: JSONValue] = [:]) -> JSONValue {
        var o: [String: JSONValue] = [
            "event": .string(event), "email": .string(email), "timestamp": 1_700_000_000,
            "sg_event_id": .string(UUID().uuidString), "sg_message_id": .string("\(messageId).filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0"),
        ]
        for (k, v) in extra { o[k] = v }
        return .object(o)
    }

    /// An unsubscribe (or a group unsubscribe) turns the person's email off; so does an email SendGrid
    /// dropped because it suppresses the address, but not one dropped for its content.
    @Test func sendGridUnsubscribesAndSuppressedDropsTurnEmailOff() throws {
        try withProviderLab { lab in
            let apiKey = "SG.test-" + UUID().uuidString
            let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: apiKey)
            defer { sendgrid.shutdown() }
            let now = ProviderPass.now()
            let emails = ["unsub@example.com", "group@example.com", "suppressed@example.com", "content@example.com"]
            let users = try emails.map { try lab.f.profile(email: $0, emailOn: true) }
            let rows = try users.map { try lab.f.enqueue(to: $0, channel: "email", at: now.addingTimeInterval(-10)) }
            let key = P256.Signing.PrivateKey()
            var settings = lab.base
            settings["SENDGRID_API_KEY"] = apiKey
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"
            settings["SENDGRID_WEBHOOK_PUBLIC_KEY"] = key.publicKey.derRepresentation.base64EncodedString()
            #expect(Self.pass(lab.url, settings, now: now, phases: [.deliver]).0.sent == 4)
            let ids = try rows.map { try #require(Self.delivery(lab.db, $0)["provider_message_id"].string) }

            let body = JSONValue.array([
                Self.sendGridEvent("delivered", messageId: ids[0], email: emails[0]),
                Self.sendGridEvent("unsubscribe", messageId: ids[0], email: emails[0]),
                Self.sendGridEvent("group_unsubscribe", messageId: ids[1], email: emails[1], extra: ["asm_group_id": 10]),
                Self.sendGridEvent("dropped", messageId: ids[2], email: emails[2], extra: ["reason": "Unsubscribed Address"]),
                Self.sendGridEvent("dropped", messageId: ids[3], email: emails[3], extra: ["reason": "Message too large"]),
            ]).jsonText + "\r\n"
            let e = try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(key, body), body: body)
            let (s2, c2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(60), phases: [.events])
            #expect(c2 == .ok, "\(s2.phaseErrors)")
            #expect(try Self.outcome(lab.db, e).0 == "applied")

            let d = try rows.map { try Self.delivery(lab.db, $0) }
            #expect(d.map { $0["final_status"].string } == ["unsubscribed", "unsubscribed", "dropped", "dropped"])
            #expect(d.map { $0["final_opt_out"].bool } == [true, true, true, false])
            let p = try users.map { try Self.profile(lab.db, $0) }
            #expect(p.map { $0["notify_email"].bool } == [false, false, false, true])
            #expect((p[0]["notify_email_disabled_reason"].string ?? "").contains("unsubscribed"))
            #expect((p[2]["notify_email_disabled_reason"].string ?? "").contains("Unsubscribed Address"))
        }
    }

    @Test func sendGridEventsRecordTruthAndTurnEmailOffOnlyForHardBouncesAndSpamReports() throws {
        try withProviderLab { lab in
            let apiKey = "SG.test-" + UUID().uuidString
            let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: apiKey)
            defer { sendgrid.shutdown() }
            let now = ProviderPass.now()

            let emails = ["ok@example.com", "gone@example.com", "blocked@example.com", "spam@example.com", "forged@example.com"]
            let users = try emails.map { try lab.f.profile(email: $0, emailOn: true) }
            let rows = try users.map { try lab.f.enqueue(to: $0, channel: "email", at: now.addingTimeInterval(-10)) }
            let key = P256.Signing.PrivateKey()
            var settings = lab.base
            settings["SENDGRID_API_KEY"] = apiKey
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"
            settings["SENDGRID_WEBHOOK_PUBLIC_KEY"] = key.publicKey.derRepresentation.base64EncodedString()

            let (s1, _) = Self.pass(lab.url, settings, now: now, phases: [.deliver])
            #expect(s1.sent == 5)
            let ids = try rows.map { try #require(Self.delivery(lab.db, $0)["provider_message_id"].string) }

            // One batch as SendGrid posts it (with its trailing CRLF): processed + delivered, a hard bounce,
            // a block, a delivery later reported as spam, and an event for a message herald never sent.
            let batch: JSONValue = .array([
                Self.sendGridEvent("processed", messageId: ids[0], email: emails[0]),
                Self.sendGridEvent("delivered", messageId: ids[0], email: emails[0], extra: ["response": "250 OK"]),
                Self.sendGridEvent("bounce", messageId: ids[1], email: emails[1],
                                   extra: ["type": "bounce", "status": "5.1.1", "reason": "550 5.1.1 user unknown",
                                           "bounce_classification": "Invalid Address"]),
                Self.sendGridEvent("bounce", messageId: ids[2], email: emails[2],
                                   extra: ["type": "blocked", "status": "4.7.1", "reason": "temporarily deferred"]),
                Self.sendGridEvent("delivered", messageId: ids[3], email: emails[3]),
                Self.sendGridEvent("delivered", messageId: "NotHeralds0123456789", email: "someone@example.com"),
            ])
            let body = batch.jsonText + "\r\n"
            let e1 = try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(key, body), body: body)
            let spam = JSONValue.array([Self.sendGridEvent("spamreport", messageId: ids[3], email: emails[3])]).jsonText + "\r\n"
            let e2 = try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(key, spam), body: spam)
            // Signed with another key: a forged hard bounce.
            let forgedBody = JSONValue.array([Self.sendGridEvent("bounce", messageId: ids[4], email: emails[4],
                                                                  extra: ["type": "bounce", "reason": "forged"])]).jsonText + "\r\n"
            let e3 = try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(P256.Signing.PrivateKey(), forgedBody), body: forgedBody)
            // No signature at all.
            let e4 = try Self.event(lab.db, "sendgrid", headers: ["content-type": "application/json"], body: forgedBody)
            // Only opens and clicks: nothing final.
            let opens = JSONValue.array([Self.sendGridEvent("open", messageId: ids[0], email: emails[0])]).jsonText
            let e5 = try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(key, opens), body: opens)
            // A WhatsApp event while WHATSAPP_APP_SECRET is not configured.
            let e6 = try Self.event(lab.db, "whatsapp", headers: ["x-hub-signature-256": "sha256=00"], body: "{}")

            let (s2, c2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(60), phases: [.events])
            #expect(c2 == .ok, "\(s2.phaseErrors)")
            #expect(s2.generated[.providerEvents] == 6)
            let metrics = Metrics.text(s2)
            #expect(metrics.contains(#"herald_pass_provider_events{outcome="rejected"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"herald_pass_provider_events{outcome="applied"} 2"#))
            #expect(try Self.outcome(lab.db, e1).0 == "applied")
            #expect(try Self.outcome(lab.db, e2).0 == "applied")
            #expect(try Self.outcome(lab.db, e3).0 == "rejected")
            #expect(try Self.outcome(lab.db, e4).0 == "rejected")
            #expect(try Self.outcome(lab.db, e5).0 == "ignored")
            let (o6, err6) = try Self.outcome(lab.db, e6)
            #expect(o6 == "unverified")
            #expect((err6 ?? "").contains("WHATSAPP_APP_SECRET"))

            let d = try rows.map { try Self.delivery(lab.db, $0) }
            #expect(d[0]["final_status"].string == "delivered")
            #expect(d[0]["final_source"].string == "event")
            #expect(d[0]["final_event_id"].int == e1)
            #expect(d[1]["final_status"].string == "bounced")
            #expect(d[1]["final_error_code"].string == "5.1.1")
            #expect(d[1]["final_opt_out"].bool == true)
            #expect(d[2]["final_status"].string == "blocked")
            #expect(d[2]["final_opt_out"].bool == false)
            #expect(d[3]["final_status"].string == "complained", "a spam report after the delivery overrides it")
            #expect(d[3]["final_event_id"].int == e2)
            #expect(d[4]["final_status"].string == nil, "a forged event is never applied")

            let p = try users.map { try Self.profile(lab.db, $0) }
            #expect(p[0]["notify_email"].bool == true)
            #expect(p[1]["notify_email"].bool == false)
            #expect(p[1]["champion_notify_email"].bool == false)
            #expect((p[1]["notify_email_disabled_reason"].string ?? "").contains("5.1.1"))
            #expect(p[2]["notify_email"].bool == true, "a block is not a hard bounce")
            #expect(p[3]["notify_email"].bool == false)
            #expect(p[3]["champion_notify_email"].bool == false)
            #expect((p[3]["notify_email_disabled_reason"].string ?? "").contains("spam"))
            #expect(p[4]["notify_email"].bool == true)

            // The user turns email back on; the same signed bounce, replayed, changes nothing.
            try lab.db.execute("update user_profiles set notify_email = true, champion_notify_email = true where user_id = \(users[1])")
            let bounceOnly = JSONValue.array([Self.sendGridEvent("bounce", messageId: ids[1], email: emails[1],
                                                                  extra: ["type": "bounce", "status": "5.1.1"])]).jsonText
            let headers = try Self.sendGridHeaders(key, bounceOnly)
            try Self.event(lab.db, "sendgrid", headers: headers, body: bounceOnly)
            try Self.event(lab.db, "sendgrid", headers: headers, body: bounceOnly)
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(120), phases: [.events])
            #expect(try Self.profile(lab.db, users[1])["notify_email"].bool == true)
            #expect(try lab.f.count("select count(*)::int from provider_events where processed_at is null") == 0)
        }
    }
}
