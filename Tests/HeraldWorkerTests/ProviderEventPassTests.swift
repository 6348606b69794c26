import Crypto
import Foundation
import HeraldChannels
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Provider events applied by the `events` phase, continued from ProviderTruthPassTests: Twilio's
/// status callbacks, WhatsApp's, garbage events, and a row or an event that cannot be recorded.
extension ProviderTruthPassTests {
    // MARK: - Twilio callbacks

    @Test func twilioStatusCallbacksAreVerifiedAgainstTheURLAndApplied() throws {
        try withProviderLab { lab in
            let sid = "AC" + String(repeating: "fedcba9876543210", count: 2)
            let authToken = "twilio-auth-" + UUID().uuidString
            let twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: authToken)
            defer { twilio.shutdown() }
            let now = ProviderPass.now()

            let phones = ["+15555550301", "+15555550302", "+15555550303"]
            let users = try phones.map { try lab.f.profile(phone: $0, sms: true) }
            let rows = try users.map { try lab.f.enqueue(to: $0, channel: "sms", at: now.addingTimeInterval(-10)) }
            let callbackURL = "https://project.supabase.co/functions/v1/provider-events/twilio"
            var settings = lab.base
            settings["TWILIO_ACCOUNT_SID"] = sid
            settings["TWILIO_AUTH_TOKEN"] = authToken
            settings["TWILIO_FROM"] = "+15005550006"
            settings["TWILIO_URL"] = twilio.baseURL
            settings["TWILIO_STATUS_CALLBACK_URL"] = callbackURL
            _ = Self.pass(lab.url, settings, now: now, phases: [.deliver])
            #expect(twilio.accepted.allSatisfy { $0["StatusCallback"] == callbackURL })
            let sids = try rows.map { try #require(Self.delivery(lab.db, $0)["provider_message_id"].string) }

            func post(_ params: [(String, String)], token: String, url: String = callbackURL) throws -> Int {
                let body = params.map { "\(Self.formEncode($0.0))=\(Self.formEncode($0.1))" }.joined(separator: "&")
                let signature = TwilioSignature.base64(authToken: token, url: url, params: params)
                return try Self.event(lab.db, "twilio", url: url,
                                      headers: ["x-twilio-signature": .string(signature), "content-type": "application/x-www-form-urlencoded"],
                                      body: body)
            }
            // Valid: delivered, and undelivered with 30005 (unknown handset: SMS off). Twilio's params as it sends them.
            let ok = try post([("AccountSid", sid), ("MessageSid", sids[0]), ("SmsSid", sids[0]), ("MessageStatus", "delivered"),
                               ("SmsStatus", "delivered"), ("To", phones[0]), ("From", "+15005550006"), ("ApiVersion", "2010-04-01")],
                              token: authToken)
            let dead = try post([("AccountSid", sid), ("MessageSid", sids[1]), ("MessageStatus", "undelivered"), ("ErrorCode", "30005"),
                                 ("To", phones[1])], token: authToken)
            // Forged: a STOP for the third, signed with a guessed token; and a valid signature replayed to another URL.
            let forged = try post([("MessageSid", sids[2]), ("MessageStatus", "failed"), ("ErrorCode", "21610")], token: "guessed")
            let params = [("MessageSid", sids[2]), ("MessageStatus", "failed"), ("ErrorCode", "21610")]
            let moved = try Self.event(lab.db, "twilio", url: callbackURL + "?other=1",
                                       headers: ["x-twilio-signature": .string(TwilioSignature.base64(authToken: authToken, url: callbackURL, params: params))],
                                       body: "MessageSid=\(sids[2])&MessageStatus=failed&ErrorCode=21610")
            // An out-of-order `sent` after `delivered` changes nothing.
            let late = try post([("MessageSid", sids[0]), ("MessageStatus", "sent")], token: authToken)

            let (s, c) = Self.pass(lab.url, settings, now: now.addingTimeInterval(60), phases: [.events])
            #expect(c == .ok, "\(s.phaseErrors)")
            #expect(try Self.outcome(lab.db, ok).0 == "applied")
            #expect(try Self.outcome(lab.db, dead).0 == "applied")
            #expect(try Self.outcome(lab.db, forged).0 == "rejected")
            #expect(try Self.outcome(lab.db, moved).0 == "rejected")
            #expect(try Self.outcome(lab.db, late).0 == "ignored")
            #expect(try Self.delivery(lab.db, rows[0])["final_status"].string == "delivered")
            let d1 = try Self.delivery(lab.db, rows[1])
            #expect(d1["final_status"].string == "undelivered")
            #expect(d1["final_error_code"].string == "30005")
            #expect(try Self.delivery(lab.db, rows[2])["final_status"].string == nil)
            #expect(try Self.profile(lab.db, users[0])["notify_sms"].bool == true)
            let p1 = try Self.profile(lab.db, users[1])
            #expect(p1["notify_sms"].bool == false)
            #expect((p1["notify_sms_disabled_reason"].string ?? "").contains("30005"))
            #expect(try Self.profile(lab.db, users[2])["notify_sms"].bool == true)

            // Polling no longer asks about messages whose callbacks were final.
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(300), phases: [.statuses])
            #expect(twilio.statusRequests == [sids[2]])
        }
    }

    static func formEncode(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    // MARK: - WhatsApp

    @Test func whatsAppFailed131026TurnsWhatsAppOffOnlyWhenSigned() throws {
        try withProviderLab { lab in
            let token = "wa-token-" + UUID().uuidString
            let phoneNumberId = "1234567890"
            let whatsapp = try FakeWhatsApp(tls: lab.certificates, token: token, phoneNumberId: phoneNumberId)
            defer { whatsapp.shutdown() }
            let now = ProviderPass.now()

            let phones = ["+15555550401", "+15555550402", "+15555550403"]
            let users = try phones.map { try lab.f.profile(phone: $0) }
            try lab.db.execute("update user_profiles set notify_whatsapp = true where user_id = any(\(users)::uuid[])")
            let rows = try users.map { try lab.f.enqueue(to: $0, channel: "whatsapp", kind: "system", at: now.addingTimeInterval(-10)) }
            let secret = "meta-app-secret-" + UUID().uuidString
            var settings = lab.base
            settings["WHATSAPP_TOKEN"] = token
            settings["WHATSAPP_PHONE_NUMBER_ID"] = phoneNumberId
            settings["WHATSAPP_URL"] = whatsapp.baseURL
            settings["WHATSAPP_APP_SECRET"] = secret
            let (s1, _) = Self.pass(lab.url, settings, now: now, phases: [.deliver])
            #expect(s1.sent == 3, "\(s1.error ?? "") \(s1.skipReasons)")
            let wamids = try rows.map { try #require(Self.delivery(lab.db, $0)["provider_message_id"].string) }

            func statuses(_ items: [(String, String, Int?)]) -> String {
                let list: [JSONValue] = items.map { id, status, code in
                    var o: [String: JSONValue] = ["id": .string(id), "status": .string(status), "timestamp": "1700000000",
                                                  "recipient_id": "15555550401"]
                    if let code {
                        o["errors"] = [["code": .number(Double(code)), "title": "Message undeliverable",
                                        "error_data": ["details": "Message Undeliverable."]]]
                    }
                    return .object(o)
                }
                let body: JSONValue = ["object": "whatsapp_business_account", "entry": [[
                    "id": "WABA", "changes": [["field": "messages", "value": [
                        "messaging_product": "whatsapp", "metadata": ["phone_number_id": .string(phoneNumberId)],
                        "statuses": .array(list)]]]]]]
                return body.jsonText
            }
            let valid = statuses([(wamids[0], "failed", 131026), (wamids[1], "delivered", nil), (wamids[1], "read", nil)])
            let e1 = try Self.event(lab.db, "whatsapp", headers: ["x-hub-signature-256": .string(WhatsAppTruth.signature(appSecret: secret, body: Array(valid.utf8)))],
                                    body: valid)
            let forgedBody = statuses([(wamids[2], "failed", 131026)])
            let e2 = try Self.event(lab.db, "whatsapp", headers: ["x-hub-signature-256": .string(WhatsAppTruth.signature(appSecret: "guessed", body: Array(forgedBody.utf8)))],
                                    body: forgedBody)

            let (s, c) = Self.pass(lab.url, settings, now: now.addingTimeInterval(60), phases: [.events])
            #expect(c == .ok, "\(s.phaseErrors)")
            #expect(try Self.outcome(lab.db, e1).0 == "applied")
            #expect(try Self.outcome(lab.db, e2).0 == "rejected")
            let d0 = try Self.delivery(lab.db, rows[0])
            #expect(d0["final_status"].string == "failed")
            #expect(d0["final_error_code"].string == "131026")
            #expect(try Self.delivery(lab.db, rows[1])["final_status"].string == "delivered")
            #expect(try Self.delivery(lab.db, rows[2])["final_status"].string == nil)
            let p0 = try Self.profile(lab.db, users[0])
            #expect(p0["notify_whatsapp"].bool == false)
            #expect((p0["notify_whatsapp_disabled_reason"].string ?? "").contains("131026"))
            #expect(try Self.profile(lab.db, users[1])["notify_whatsapp"].bool == true)
            #expect(try Self.profile(lab.db, users[2])["notify_whatsapp"].bool == true)
        }
    }

    // MARK: - Garbage

    @Test func garbageEventsAreMarkedAndThePassGoesOn() throws {
        try withProviderLab { lab in
            let apiKey = "SG.test-" + UUID().uuidString
            let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: apiKey)
            defer { sendgrid.shutdown() }
            let now = ProviderPass.now()
            let user = try lab.f.profile(email: "ana@example.com", emailOn: true)
            let row = try lab.f.enqueue(to: user, channel: "email", at: now.addingTimeInterval(-10))
            let key = P256.Signing.PrivateKey()
            let twilioToken = "tok-" + UUID().uuidString
            let waSecret = "sec-" + UUID().uuidString
            var settings = lab.base
            settings["SENDGRID_API_KEY"] = apiKey
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["EMAIL_FROM"] = "noreply@example.com"
            settings["SENDGRID_WEBHOOK_PUBLIC_KEY"] = key.publicKey.derRepresentation.base64EncodedString()
            // Twilio callbacks are verified with TWILIO_AUTH_TOKEN even when SMS itself is switched off.
            settings["TWILIO_ACCOUNT_SID"] = "AC" + String(repeating: "1", count: 32)
            settings["TWILIO_AUTH_TOKEN"] = twilioToken
            settings["TWILIO_FROM"] = "+15005550006"
            settings["HERALD_CHANNEL_SMS"] = "off"
            settings["WHATSAPP_APP_SECRET"] = waSecret
            _ = Self.pass(lab.url, settings, now: now, phases: [.deliver])
            let messageId = try #require(Self.delivery(lab.db, row)["provider_message_id"].string)

            var rng = ProviderTruthTestsRNG(state: 42)
            var signedGarbage: [Int] = []
            var unsignedGarbage: [Int] = []
            for i in 0..<30 {
                let bytes = (0..<Int.random(in: 1...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                // What a text column can hold of them (the endpoint stores the body as text; PostgreSQL text has no NUL).
                let text = String(decoding: bytes.filter { $0 != 0 }, as: UTF8.self)
                let url = "https://project.supabase.co/functions/v1/provider-events/twilio"
                switch i % 3 {
                case 0:
                    signedGarbage.append(try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(key, text), body: text))
                    unsignedGarbage.append(try Self.event(lab.db, "sendgrid", headers: [:], body: text))
                case 1:
                    signedGarbage.append(try Self.event(lab.db, "whatsapp",
                        headers: ["x-hub-signature-256": .string(WhatsAppTruth.signature(appSecret: waSecret, body: Array(text.utf8)))], body: text))
                    unsignedGarbage.append(try Self.event(lab.db, "whatsapp", headers: ["x-hub-signature-256": "sha256=zz"], body: text))
                default:
                    let params = (try? FormBody.parse(text)) ?? []
                    signedGarbage.append(try Self.event(lab.db, "twilio", url: url,
                        headers: ["x-twilio-signature": .string(TwilioSignature.base64(authToken: twilioToken, url: url, params: params))], body: text))
                    unsignedGarbage.append(try Self.event(lab.db, "twilio", url: url, headers: [:], body: text))
                }
            }
            // Headers that are not an object; no headers at all; an unknown provider (refused by the table itself).
            let badHeaders = try Self.event(lab.db, "sendgrid", headers: [1, 2, 3], body: "[]")
            let nullHeaders = try Self.event(lab.db, "whatsapp", headers: .null, body: "{}")
            #expect(throws: (any Error).self) { try Self.event(lab.db, "pigeon", headers: [:], body: "{}") }
            // Signed and well-formed, but with NUL characters in every string (JSON escapes and %00), which
            // PostgreSQL cannot store: processed, never a poison row that fails every later pass.
            let nul = #"[{"event":"bounce","type":"bounce","sg_message_id":"a\u0000b.c","email":"x\u0000@y.z","reason":"r\u0000"}]"#
            let nulSendGrid = try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(key, nul), body: nul)
            let twilioURL = "https://project.supabase.co/functions/v1/provider-events/twilio"
            let nulForm = "MessageSid=SM%00x&MessageStatus=failed%00&ErrorCode=21610%00&ErrorMessage=%00"
            let nulTwilio = try Self.event(lab.db, "twilio", url: twilioURL,
                headers: ["x-twilio-signature": .string(TwilioSignature.base64(authToken: twilioToken, url: twilioURL,
                                                                              params: try FormBody.parse(nulForm)))], body: nulForm)
            // After all that, one good event.
            let good = JSONValue.array([Self.sendGridEvent("delivered", messageId: messageId, email: "ana@example.com")]).jsonText
            let goodId = try Self.event(lab.db, "sendgrid", headers: try Self.sendGridHeaders(key, good), body: good)

            let (s, c) = Self.pass(lab.url, settings, now: now.addingTimeInterval(60), phases: [.events])
            #expect(c == .ok, "\(s.phaseErrors)")
            for id in signedGarbage {
                let (o, e) = try Self.outcome(lab.db, id)
                #expect(o == "invalid", "event \(id): \(o ?? "nil") \(e ?? "")")
                #expect(!(e ?? "").isEmpty)
            }
            for id in unsignedGarbage {
                let (o, _) = try Self.outcome(lab.db, id)
                #expect(o == "rejected" || o == "invalid", "event \(id): \(o ?? "nil")")
            }
            #expect(try Self.outcome(lab.db, badHeaders).0 == "invalid")
            #expect(try Self.outcome(lab.db, nullHeaders).0 == "rejected")
            #expect(try Self.outcome(lab.db, goodId).0 == "applied")
            #expect(try Self.outcome(lab.db, nulSendGrid).0 == "unmatched")
            #expect(["unmatched", "ignored"].contains(try Self.outcome(lab.db, nulTwilio).0 ?? ""))
            #expect(try Self.delivery(lab.db, row)["final_status"].string == "delivered")
            #expect(try lab.f.count("select count(*)::int from provider_events where processed_at is null") == 0)
        }
    }
}

extension ProviderTruthPassTests {
    /// A row that no statement can record (here a trigger refuses it) must not stop every later pass at
    /// the same batch: the batch is retried a row at a time and that row alone is marked invalid.
    @Test func aRowThatCannotBeRecordedDoesNotBlockTheOthers() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let ids = try (0..<3).map { _ in try Self.event(db, "whatsapp", headers: [:], body: "{}") }
            try db.execute("""
                create function test_refuse() returns trigger language plpgsql as $$
                begin
                  if new.id = \(unescaped: String(ids[1])) and new.outcome is distinct from 'invalid' then raise exception 'refused by the test'; end if;
                  return new;
                end $$
                """)
            try db.execute("create trigger test_refuse before update on provider_events for each row execute function test_refuse()")
            let (s, c) = Self.pass(tdb.url, [:], now: ProviderPass.now(), phases: [.events])
            #expect(c == .ok, "\(s.phaseErrors)")
            #expect(try Self.outcome(db, ids[0]).0 == "unverified")
            let (o1, e1) = try Self.outcome(db, ids[1])
            #expect(o1 == "invalid")
            #expect((e1 ?? "").contains("refused by the test"))
            #expect(try Self.outcome(db, ids[2]).0 == "unverified")
        }
    }
}

extension ProviderTruthPassTests {
    /// An event whose record meets a passing error (here a deadlock the trigger raises) is not marked
    /// invalid: it stays unprocessed for a later pass, and the phase reports the error (exit 4).
    @Test func anEventThatMeetsADeadlockIsKeptForALaterPass() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let ids = try (0..<3).map { _ in try Self.event(db, "whatsapp", headers: [:], body: "{}") }
            try db.execute("""
                create function test_deadlock() returns trigger language plpgsql as $$
                begin
                  if new.id = \(unescaped: String(ids[1])) then raise exception 'a deadlock' using errcode = '40P01'; end if;
                  return new;
                end $$
                """)
            try db.execute("create trigger test_deadlock before update on provider_events for each row execute function test_deadlock()")
            let (_, c) = Self.pass(tdb.url, [:], now: ProviderPass.now(), phases: [.events])
            #expect(c == .degraded)
            #expect(try Self.outcome(db, ids[0]).0 == "unverified")
            #expect(try Self.outcome(db, ids[1]).0 == nil, "kept for a later pass, not invalid")
            try db.execute("drop trigger test_deadlock on provider_events")
            _ = Self.pass(tdb.url, [:], now: ProviderPass.now(), phases: [.events])
            #expect(try Self.outcome(db, ids[1]).0 == "unverified")
            #expect(try Self.outcome(db, ids[2]).0 == "unverified")
        }
    }
}

/// A seeded generator, so a failure reproduces.
struct ProviderTruthTestsRNG: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
