import Crypto
import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import Testing

/// Delivery truth (what became of a message after the provider accepted it): the pure verifiers and
/// parsers. Known-answer vectors are the providers' own published ones (Twilio's "webhooks security"
/// example; SendGrid's SDK test vectors), so an implementation and its test cannot share one mistake.
@Suite struct ProviderTruthTests {

    // MARK: - Twilio

    @Test func twilioSignatureMatchesTwiliosPublishedExample() {
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2"
        // Deliberately out of order: the signature sorts the parameters.
        let params = [("To", "+18005551212"), ("CallSid", "CA1234567890ABCDE"), ("Digits", "1234"),
                      ("From", "+12349013030"), ("Caller", "+12349013030")]
        #expect(TwilioSignature.base64(authToken: "12345", url: url, params: params) == "0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        #expect(TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", authToken: "12345", url: url, params: params))
        // The same URL with the default port written out (a proxy's rewrite) still verifies.
        #expect(TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", authToken: "12345",
                                        url: "https://mycompany.com:443/myapp.php?foo=1&bar=2", params: params))
        // Anything else changed does not.
        #expect(!TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", authToken: "12346", url: url, params: params))
        #expect(!TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", authToken: "12345",
                                         url: "https://mycompany.com/myapp.php?foo=1&bar=3", params: params))
        var tampered = params
        tampered[2] = ("Digits", "9999")
        #expect(!TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", authToken: "12345", url: url, params: tampered))
        for bad in ["", "not base64!", "0/KCTR6DLpKmkAf8muzZqo1nDgQ", "AAAA", String(repeating: "A", count: 10_000)] {
            #expect(!TwilioSignature.isValid(bad, authToken: "12345", url: url, params: params))
        }
    }

    @Test func twilioStatusesMapToFinalOutcomes() {
        let sid = "SM" + String(repeating: "ab", count: 16)
        for s in ["queued", "accepted", "scheduled", "sending", "sent", "receiving", "something-new"] {
            let r = TwilioTruth.report(messageSid: sid, status: s, errorCode: nil, errorMessage: nil)
            #expect(r.status == nil, "\(s)")
            #expect(r.rank == 0)
        }
        let ok = TwilioTruth.report(messageSid: sid, status: "delivered", errorCode: nil, errorMessage: nil)
        #expect(ok.status == .delivered && !ok.optOut && ok.rank == 1)
        let dead = TwilioTruth.report(messageSid: sid, status: "undelivered", errorCode: "30006", errorMessage: nil)
        #expect(dead.status == .undelivered && dead.optOut && dead.errorCode == "30006" && dead.rank == 3)
        #expect(dead.reason.contains("30006") && dead.reason.contains("landline"))
        let stop = TwilioTruth.report(messageSid: sid, status: "failed", errorCode: "21610", errorMessage: nil)
        #expect(stop.status == .failed && stop.optOut)
        let unknown = TwilioTruth.report(messageSid: sid, status: "undelivered", errorCode: "30005", errorMessage: nil)
        #expect(unknown.optOut)
        let filtered = TwilioTruth.report(messageSid: sid, status: "undelivered", errorCode: "30007", errorMessage: nil)
        #expect(filtered.status == .undelivered && !filtered.optOut && filtered.rank == 2)
        let unreachable = TwilioTruth.report(messageSid: sid, status: "failed", errorCode: "30003", errorMessage: nil)
        #expect(!unreachable.optOut)
        // A dead-number code on a non-failure status changes nothing.
        #expect(!TwilioTruth.report(messageSid: sid, status: "sent", errorCode: "30006", errorMessage: nil).optOut)
    }

    @Test func twilioPollReadsTheMessageResourceAndSurvivesAnyAnswer() {
        let sid = "SM" + String(repeating: "0f", count: 16)
        func poll(_ status: Int, _ body: String) -> TwilioTruth.Poll {
            TwilioTruth.poll(.success(HTTPResponse(status: status, body: Array(body.utf8))), messageSid: sid)
        }
        guard case .report(let r) = poll(200, #"{"sid":"x","status":"undelivered","error_code":30006,"error_message":null}"#) else {
            Issue.record("no report"); return
        }
        #expect(r.status == .undelivered && r.errorCode == "30006" && r.optOut && r.messageId == sid)
        guard case .report(let s) = poll(200, #"{"status":"failed","error_code":"30007"}"#) else { Issue.record("no report"); return }
        #expect(s.errorCode == "30007" && !s.optOut)
        // Hostile numbers: no trap, no code.
        guard case .report(let h) = poll(200, #"{"status":"failed","error_code":1e300}"#) else { Issue.record("no report"); return }
        #expect(h.errorCode == nil && !h.optOut)
        #expect(poll(404, #"{"code":20404}"#) == .notFound)
        if case .forbidden = poll(401, "{}") {} else { Issue.record("401 is not forbidden") }
        if case .later = poll(200, "not json") {} else { Issue.record("garbage 200 is not 'later'") }
        if case .later = poll(200, #"{"status":42}"#) {} else { Issue.record("a numeric status is not 'later'") }
        if case .later = poll(503, "") {} else { Issue.record("503 is not 'later'") }
        if case .later = TwilioTruth.poll(.failure(.timeout), messageSid: sid) {} else { Issue.record("timeout is not 'later'") }
    }

    @Test func twilioStatusRequestIsAnAuthenticatedGet() throws {
        let adapter = try TwilioAdapter(accountSid: "AC" + String(repeating: "1", count: 32), authToken: "tok",
                                        from: "+15005550006", messagingServiceSid: nil, baseURL: "https://twilio.test")
        let sid = "SM" + String(repeating: "2", count: 32)
        let request = adapter.statusRequest(messageSid: sid)
        #expect(request.method == "GET")
        #expect(request.url == "https://twilio.test/2010-04-01/Accounts/AC\(String(repeating: "1", count: 32))/Messages/\(sid).json")
        #expect(request.headers.contains { $0.0 == "authorization" && $0.1 == "Basic " + Data("AC\(String(repeating: "1", count: 32)):tok".utf8).base64EncodedString() })
        #expect(request.body.isEmpty)
        #expect(TwilioTruth.isMessageSid(sid))
        #expect(TwilioTruth.isMessageSid("MM" + String(repeating: "a", count: 32)))
        for bad in ["", "SM123", "XX" + String(repeating: "a", count: 32), "SM" + String(repeating: "g", count: 32), "SM../../x"] {
            #expect(!TwilioTruth.isMessageSid(bad))
        }
    }

    @Test func formBodiesAreParsedStrictly() throws {
        let p = try FormBody.parse("MessageSid=SM1&MessageStatus=undelivered&ErrorCode=30006&To=%2B15551234567&Body=a+b%20c")
        #expect(p.count == 5)
        #expect(p.first { $0.0 == "To" }?.1 == "+15551234567")
        #expect(p.first { $0.0 == "Body" }?.1 == "a b c")
        #expect(try FormBody.parse("").isEmpty)
        #expect(try FormBody.parse("a").first?.1 == "")
        #expect(throws: TruthError.self) { try FormBody.parse("a=%zz") }
        #expect(throws: TruthError.self) { try FormBody.parse("a=%4") }
        #expect(throws: TruthError.self) { try FormBody.parse("a=%ff%fe") }   // not UTF-8
        let cb = try TwilioTruth.callback(try FormBody.parse("MessageSid=SMx&MessageStatus=delivered"))
        #expect(cb.status == .delivered && cb.messageId == "SMx")
        let old = try TwilioTruth.callback(try FormBody.parse("SmsSid=SMy&SmsStatus=failed&ErrorCode=21610"))
        #expect(old.status == .failed && old.optOut)
        #expect(throws: TruthError.self) { try TwilioTruth.callback(try FormBody.parse("MessageStatus=delivered")) }
        #expect(throws: TruthError.self) { try TwilioTruth.callback(try FormBody.parse("MessageSid=SMz")) }
    }

    // MARK: - SendGrid

    /// SendGrid's own SDK test vector (sendgrid-java / -csharp / -ruby / -nodejs EventWebhook tests).
    static let vendorKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
    static let vendorSignature = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0="
    static let vendorPayload = #"{"category":"example_payload","event":"test_event","message_id":"message_id"}"#

    @Test func sendGridSignatureMatchesSendGridsVector() throws {
        let key = try SendGridEventKey(Self.vendorKey)
        #expect(key.isValid(signature: Self.vendorSignature, timestamp: "1588788367", body: Array(Self.vendorPayload.utf8)))
        // The vendor's negative cases: another key, payload, signature or timestamp.
        let otherKey = try SendGridEventKey("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA==")
        #expect(!otherKey.isValid(signature: Self.vendorSignature, timestamp: "1588788367", body: Array(Self.vendorPayload.utf8)))
        #expect(!key.isValid(signature: Self.vendorSignature, timestamp: "1588788367", body: Array("payload".utf8)))
        #expect(!key.isValid(signature: "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH3j/0=",
                             timestamp: "1588788367", body: Array(Self.vendorPayload.utf8)))
        #expect(!key.isValid(signature: Self.vendorSignature, timestamp: "timestamp", body: Array(Self.vendorPayload.utf8)))
        for bad in ["", "!!", "AAAA", Self.vendorKey] {
            #expect(!key.isValid(signature: bad, timestamp: "1588788367", body: Array(Self.vendorPayload.utf8)))
        }
        // PEM works too; anything else is a readable configuration error.
        let pem = "-----BEGIN PUBLIC KEY-----\n\(Self.vendorKey.prefix(64))\n\(Self.vendorKey.dropFirst(64))\n-----END PUBLIC KEY-----\n"
        #expect(try SendGridEventKey(pem).isValid(signature: Self.vendorSignature, timestamp: "1588788367",
                                                  body: Array(Self.vendorPayload.utf8)))
        #expect(throws: TruthError.self) { try SendGridEventKey("not base64 at all!") }
        #expect(throws: TruthError.self) { try SendGridEventKey(Data("short".utf8).base64EncodedString()) }
    }

    /// SendGrid's second SDK vector (sendgrid-ruby): a real dropped event, body with its trailing CRLF.
    @Test func sendGridDroppedEventVector() throws {
        let key = try SendGridEventKey("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==")
        let body = #"[{"email":"hello@world.com","event":"dropped","reason":"Bounced Address","sg_event_id":"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA","sg_message_id":"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0","smtp-id":"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>","timestamp":1600112492}]"# + "\r\n"
        #expect(key.isValid(signature: "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=",
                            timestamp: "1600112502", body: Array(body.utf8)))
        let reports = try SendGridTruth.reports(body: Array(body.utf8))
        #expect(reports.count == 1)
        #expect(reports.first?.messageId == "LRzXl_NHStOGhQ4kofSm_A")
        #expect(reports.first?.status == .dropped)
        #expect(reports.first?.optOut == true, "a suppressed address: every later email would be dropped too")
    }

    @Test func sendGridEventsMapToFinalOutcomes() throws {
        let q = UUID()
        let body = """
            [{"event":"processed","sg_message_id":"AAA.filter1","email":"a@x.org"},
             {"event":"delivered","sg_message_id":"AAA.filter1","email":"a@x.org","response":"250 OK"},
             {"event":"bounce","type":"bounce","sg_message_id":"BBB.f","email":"b@x.org","status":"5.1.1","reason":"550 user unknown","bounce_classification":"Invalid Address"},
             {"event":"bounce","type":"blocked","sg_message_id":"CCC.f","email":"c@x.org","status":"4.0.0","reason":"blocked by reputation"},
             {"event":"spamreport","sg_message_id":"DDD.f","email":"d@x.org"},
             {"event":"open","sg_message_id":"EEE.f","email":"e@x.org"},
             {"event":"delivered","notification_id":"\(q.uuidString.lowercased())","email":"f@x.org"},
             {"event":"delivered","email":"nobody@x.org"}]
            """
        let r = try SendGridTruth.reports(body: Array(body.utf8))
        #expect(r.count == 7)   // the last names no message
        #expect(r[0].status == nil && r[0].messageId == "AAA")
        #expect(r[1].status == .delivered && r[1].rank == 1)
        #expect(r[2].status == .bounced && r[2].optOut && r[2].errorCode == "5.1.1" && (r[2].error ?? "").contains("Invalid Address"))
        #expect(r[3].status == .blocked && !r[3].optOut && r[3].rank == 2)
        #expect(r[4].status == .complained && r[4].optOut && r[4].rank == 3)
        #expect(r[5].status == nil)
        #expect(r[6].messageId == nil && r[6].queueId == q && r[6].destination == "f@x.org")
        #expect(SendGridTruth.messageId("LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1.0") == "LRzXl_NHStOGhQ4kofSm_A")
        #expect(SendGridTruth.messageId("plain") == "plain")
        #expect(SendGridTruth.messageId(".x") == nil)
        let later = try SendGridTruth.reports(body: Array("""
            [{"event":"unsubscribe","sg_message_id":"GGG.f","email":"g@x.org"},
             {"event":"group_unsubscribe","sg_message_id":"HHH.f","email":"h@x.org","asm_group_id":1},
             {"event":"group_resubscribe","sg_message_id":"III.f","email":"i@x.org"},
             {"event":"dropped","sg_message_id":"JJJ.f","email":"j@x.org","reason":"Spam Reporting Address"},
             {"event":"dropped","sg_message_id":"KKK.f","email":"k@x.org","reason":"Invalid SMTPAPI header"},
             {"event":"dropped","sg_message_id":"LLL.f","email":"l@x.org"}]
            """.utf8))
        #expect(later.map(\.status) == [.unsubscribed, .unsubscribed, nil, .dropped, .dropped, .dropped])
        #expect(later.map(\.optOut) == [true, true, false, true, false, false])
        #expect(later[0].rank == 3)
        for bad in ["", "{}", "null", #"{"event":"delivered"}"#] {
            #expect(throws: TruthError.self, "\(bad)") { try SendGridTruth.reports(body: Array(bad.utf8)) }
        }
        for empty in ["[]", "[1]", "[[]]", "[null]"] {
            #expect(try SendGridTruth.reports(body: Array(empty.utf8)).isEmpty, "\(empty)")
        }
    }

    /// One element that is not an event object does not cost the batch its other events.
    @Test func sendGridBatchKeepsItsEventsAroundANull() throws {
        let body = """
            [{"event":"delivered","sg_message_id":"AAA.f","email":"a@x.org"},
             null, 7, "x", [],
             {"event":"bounce","type":"bounce","sg_message_id":"BBB.f","email":"b@x.org","reason":"550 user unknown"}]
            """
        let r = try SendGridTruth.reports(body: Array(body.utf8))
        #expect(r.map(\.messageId) == ["AAA", "BBB"])
        #expect(r.map(\.status) == [.delivered, .bounced])
    }

    // MARK: - WhatsApp

    @Test func whatsAppSignatureAndStatuses() throws {
        let secret = "app-secret"
        let body = #"""
            {"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","statuses":[
              {"id":"wamid.A","status":"sent","timestamp":"1","recipient_id":"1555"},
              {"id":"wamid.B","status":"read","timestamp":"2","recipient_id":"1555"},
              {"id":"wamid.C","status":"failed","timestamp":"3","recipient_id":"1556","errors":[{"code":131026,"title":"Message undeliverable","error_data":{"details":"not on WhatsApp"}}]},
              {"id":"wamid.D","status":"failed","errors":[{"code":131049,"title":"ecosystem"}]},
              {"id":"wamid.E","status":"failed","errors":[{"code":1e300}]},
              {"status":"failed"}]}}]}]}
            """#
        let bytes = Array(body.utf8)
        let signature = WhatsAppTruth.signature(appSecret: secret, body: bytes)
        #expect(signature.hasPrefix("sha256=") && signature.count == 7 + 64)
        #expect(WhatsAppTruth.isValid(signature, appSecret: secret, body: bytes))
        #expect(WhatsAppTruth.isValid(signature.uppercased().replacingOccurrences(of: "SHA256=", with: "sha256="), appSecret: secret, body: bytes))
        #expect(!WhatsAppTruth.isValid(signature, appSecret: "other", body: bytes))
        #expect(!WhatsAppTruth.isValid(signature, appSecret: secret, body: bytes + [0x20]))
        for bad in ["", "sha256=", "sha1=" + String(repeating: "0", count: 40), "sha256=zz", String(signature.dropLast())] {
            #expect(!WhatsAppTruth.isValid(bad, appSecret: secret, body: bytes))
        }
        // HMAC-SHA256 cross-check against swift-crypto directly.
        let mac = HMAC<SHA256>.authenticationCode(for: bytes, using: SymmetricKey(data: Array(secret.utf8)))
        #expect(signature == "sha256=" + mac.map { String(format: "%02x", $0) }.joined())

        let r = try WhatsAppTruth.reports(body: bytes)
        #expect(r.count == 5)
        #expect(r[0].status == nil)
        #expect(r[1].status == .delivered)
        #expect(r[2].status == .failed && r[2].optOut && r[2].errorCode == "131026" && (r[2].error ?? "").contains("not on WhatsApp"))
        #expect(r[3].status == .failed && !r[3].optOut)
        #expect(r[4].status == .failed && r[4].errorCode == nil && !r[4].optOut)
        #expect(try WhatsAppTruth.reports(body: Array(#"{"object":"x","entry":[]}"#.utf8)).isEmpty)
        for bad in ["", "[]", "{}", #"{"entry":{}}"#, "nope"] {
            #expect(throws: TruthError.self, "\(bad)") { try WhatsAppTruth.reports(body: Array(bad.utf8)) }
        }
    }

    // MARK: - The verdict

    @Test func verdictsFollowTheOrderRowShapeKeySignatureContent() throws {
        let sk = P256.Signing.PrivateKey()
        let keys = ProviderEventKeys(twilioAuthToken: "tok", sendgrid: try SendGridEventKey(sk.publicKey.derRepresentation.base64EncodedString()),
                                     whatsappAppSecret: "sec")
        func sg(_ body: String, sign: Bool = true, headers extra: JSONValue? = nil) -> ProviderEventInput {
            let ts = "1700000000"
            let sig = try! sk.signature(for: Data(Array(ts.utf8) + Array(body.utf8))).derRepresentation.base64EncodedString()
            let h: JSONValue = extra ?? (sign ? .object([SendGridTruth.signatureHeader: .string(sig), SendGridTruth.timestampHeader: .string(ts)]) : .object([:]))
            return ProviderEventInput(provider: "sendgrid", url: nil, headers: h, body: body)
        }
        let good = #"[{"event":"delivered","sg_message_id":"M.1"}]"#
        guard case .reports(let r) = ProviderEvents.evaluate(sg(good), keys: keys) else { Issue.record("not verified"); return }
        #expect(r.first?.status == .delivered)
        // Header names are matched case-insensitively.
        let ts = "1700000000"
        let sig = try sk.signature(for: Data(Array(ts.utf8) + Array(good.utf8))).derRepresentation.base64EncodedString()
        let upper: JSONValue = ["X-Twilio-Email-Event-Webhook-Signature": .string(sig), "X-Twilio-Email-Event-Webhook-Timestamp": .string(ts)]
        if case .reports = ProviderEvents.evaluate(sg(good, headers: upper), keys: keys) {} else { Issue.record("mixed-case headers") }
        #expect(ProviderEvents.evaluate(sg(good, sign: false), keys: keys).outcome == "rejected")
        #expect(ProviderEvents.evaluate(sg("garbage"), keys: keys).outcome == "invalid")
        #expect(ProviderEvents.evaluate(sg(good), keys: ProviderEventKeys()).outcome == "unverified")
        #expect(ProviderEvents.evaluate(sg(good, headers: .array([])), keys: keys).outcome == "invalid")
        #expect(ProviderEvents.evaluate(sg(good, headers: .number(1)), keys: keys).outcome == "invalid")
        #expect(ProviderEvents.evaluate(ProviderEventInput(provider: "sendgrid", url: nil, headers: nil, body: nil), keys: keys).outcome == "invalid")
        #expect(ProviderEvents.evaluate(ProviderEventInput(provider: "pigeon", url: nil, headers: nil, body: ""), keys: keys).outcome == "invalid")
        let huge = String(repeating: "x", count: ProviderEvents.maxBodyBytes + 1)
        #expect(ProviderEvents.evaluate(sg(huge), keys: keys).outcome == "invalid")

        // Twilio: the URL is part of the signature.
        let url = "https://ref.supabase.co/functions/v1/provider-events/twilio"
        let form = "MessageSid=SMabc&MessageStatus=delivered"
        let tsig = TwilioSignature.base64(authToken: "tok", url: url, params: try FormBody.parse(form))
        func tw(_ body: String, url: String?, sig: String?) -> ProviderEventInput {
            ProviderEventInput(provider: "twilio", url: url, headers: sig.map { .object(["x-twilio-signature": .string($0)]) } ?? .object([:]), body: body)
        }
        #expect(ProviderEvents.evaluate(tw(form, url: url, sig: tsig), keys: keys).outcome == "applied")
        #expect(ProviderEvents.evaluate(tw(form, url: url + "?x=1", sig: tsig), keys: keys).outcome == "rejected")
        #expect(ProviderEvents.evaluate(tw(form, url: nil, sig: tsig), keys: keys).outcome == "rejected")
        #expect(ProviderEvents.evaluate(tw(form, url: url, sig: nil), keys: keys).outcome == "rejected")
        #expect(ProviderEvents.evaluate(tw("a=%zz", url: url, sig: tsig), keys: keys).outcome == "invalid")
        #expect(ProviderEvents.evaluate(tw(form, url: url, sig: tsig), keys: ProviderEventKeys()).outcome == "unverified")
        let noSid = "MessageStatus=delivered"
        #expect(ProviderEvents.evaluate(tw(noSid, url: url, sig: TwilioSignature.base64(authToken: "tok", url: url, params: try FormBody.parse(noSid))),
                                        keys: keys).outcome == "invalid")

        // WhatsApp.
        let wa = #"{"entry":[{"changes":[{"value":{"statuses":[{"id":"wamid.X","status":"delivered"}]}}]}]}"#
        let wsig = WhatsAppTruth.signature(appSecret: "sec", body: Array(wa.utf8))
        func w(_ body: String, _ sig: String?) -> ProviderEventInput {
            ProviderEventInput(provider: "whatsapp", url: nil, headers: sig.map { .object(["x-hub-signature-256": .string($0)]) }, body: body)
        }
        #expect(ProviderEvents.evaluate(w(wa, wsig), keys: keys).outcome == "applied")
        #expect(ProviderEvents.evaluate(w(wa, nil), keys: keys).outcome == "rejected")
        #expect(ProviderEvents.evaluate(w(wa, WhatsAppTruth.signature(appSecret: "nope", body: Array(wa.utf8))), keys: keys).outcome == "rejected")
        #expect(ProviderEvents.evaluate(w("[]", WhatsAppTruth.signature(appSecret: "sec", body: Array("[]".utf8))), keys: keys).outcome == "invalid")
    }

    @Test func jsonIntegersNeverTrap() {
        #expect(TruthText.int(.number(1e300)) == nil)
        #expect(TruthText.int(.number(-1e19)) == nil)
        #expect(TruthText.int(.number(0.5)) == nil)
        #expect(TruthText.int(.number(42)) == 42)
        #expect(TruthText.int(.string("7")) == 7)
        #expect(TruthText.int(.string("99999999999999999999999")) == nil)
        #expect(TruthText.code(.number(1e300)) == nil)
        #expect(JSONValue.number(1e300).intValue == nil)
    }

    // MARK: - Fuzz

    /// A seeded generator, so a failure reproduces.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Random bytes, random JSON-ish text and mutations of real payloads through every parser and the
    /// verdict: nothing traps, every verdict is one of the four.
    @Test func fuzzTheEventParsers() throws {
        var rng = SplitMix64(state: 0x1234_5678)
        let sk = P256.Signing.PrivateKey()
        let keys = ProviderEventKeys(twilioAuthToken: "tok", sendgrid: try SendGridEventKey(sk.publicKey.derRepresentation.base64EncodedString()),
                                     whatsappAppSecret: "sec")
        let seeds = [
            #"[{"event":"bounce","type":"bounce","sg_message_id":"A.b","email":"x@y.z","status":"5.1.1","timestamp":1}]"#,
            #"{"object":"whatsapp_business_account","entry":[{"changes":[{"value":{"statuses":[{"id":"wamid.1","status":"failed","errors":[{"code":131026}]}]}}]}]}"#,
            "MessageSid=SM1&MessageStatus=undelivered&ErrorCode=30006",
            "[" + String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000) + "]",
            #"{"entry":[{"changes":[{"value":{"statuses":[{"id":"w","status":"failed","errors":[{"code":-1e400}]}]}}]}]}"#,
        ]
        let alphabet = Array(#"{}[]":,.-+eE0123456789 abcdefstatusidentrychangesvalue%&=\u00"#.utf8) + [0xff, 0xc3, 0x00, 0x0a]
        for iteration in 0..<1500 {
            var bytes: [UInt8]
            switch iteration % 3 {
            case 0:
                bytes = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case 1:
                bytes = (0..<Int.random(in: 0...200, using: &rng)).map { _ in alphabet.randomElement(using: &rng) ?? 0 }
            default:
                bytes = Array((seeds.randomElement(using: &rng) ?? "").utf8)
                for _ in 0..<Int.random(in: 1...6, using: &rng) where !bytes.isEmpty {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0...2, using: &rng) {
                    case 0: bytes[at] = alphabet.randomElement(using: &rng) ?? 0
                    case 1: bytes.remove(at: at)
                    default: bytes.insert(alphabet.randomElement(using: &rng) ?? 0, at: at)
                    }
                }
            }
            // Parsers on raw bytes.
            _ = try? SendGridTruth.reports(body: bytes)
            _ = try? WhatsAppTruth.reports(body: bytes)
            let text = String(decoding: bytes, as: UTF8.self)
            if let form = try? FormBody.parse(text) { _ = try? TwilioTruth.callback(form) }
            _ = TwilioTruth.poll(.success(HTTPResponse(status: 200, body: bytes)), messageSid: "SM1")
            // The verdict, signed correctly (so the content parsers run) and not.
            let ts = "1700000000"
            let sgSig = try sk.signature(for: Data(Array(ts.utf8) + Array(text.utf8))).derRepresentation.base64EncodedString()
            let inputs = [
                ProviderEventInput(provider: "sendgrid", url: nil, headers: .object([SendGridTruth.signatureHeader: .string(sgSig),
                                                                                    SendGridTruth.timestampHeader: .string(ts)]), body: text),
                ProviderEventInput(provider: "whatsapp", url: nil,
                                   headers: .object(["x-hub-signature-256": .string(WhatsAppTruth.signature(appSecret: "sec", body: Array(text.utf8)))]),
                                   body: text),
                ProviderEventInput(provider: "twilio", url: "https://h/p",
                                   headers: .object(["x-twilio-signature": .string(TwilioSignature.base64(authToken: "tok", url: "https://h/p",
                                                                                                       params: (try? FormBody.parse(text)) ?? []))]),
                                   body: text),
                ProviderEventInput(provider: "sendgrid", url: nil, headers: .object([:]), body: text),
            ]
            for input in inputs {
                let v = ProviderEvents.evaluate(input, keys: keys)
                #expect(["applied", "rejected", "unverified", "invalid"].contains(v.outcome))
                if input.headers == .object([:]) { #expect(v.outcome == "rejected") }
            }
        }
    }
}
