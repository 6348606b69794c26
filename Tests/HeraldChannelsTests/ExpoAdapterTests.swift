import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// ExpoAdapter through the real transport against FakeExpo over TLS.
@Suite(.serialized)
struct ExpoAdapterTests {
    static let accessToken = "expo-secret-access-token-4f9c1d"

    func token(_ i: Int) -> String { "ExponentPushToken[tok\(i)xYz]" }

    func envelopes(_ n: Int) -> [Envelope] {
        (0..<n).map { messagingEnvelope(provider: .expo, address: token($0)) }
    }

    @Test func sendsABatchAndReadsTicketsInOrder() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates, accessToken: Self.accessToken)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: Self.accessToken, baseURL: fake.baseURL + "/",
                                      androidChannelId: "herald-default")
        let batch = [
            messagingEnvelope(provider: .expo, address: token(1), priority: .high, category: "PROMPT_CATEGORY"),
            messagingEnvelope(provider: .expo, address: token(2), kind: "pattern_alert", priority: .normal,
                              severity: .critical, title: "تنبيه", body: "تم تعيينك في ملف ألمانيا", locale: "ar"),
            messagingEnvelope(provider: .expo, address: token(3), priority: .normal),
            messagingEnvelope(provider: .expo, address: token(4), priority: .low, sound: nil),
        ]

        let request = try adapter.request(for: batch)
        let outcomes = adapter.classify(rig.transport.perform(request), count: batch.count, now: Date())

        #expect(outcomes.count == 4)
        let issued = fake.issuedTickets
        for (i, c) in outcomes.enumerated() {
            let id = try #require(c.outcome.messageId, "\(c.outcome)")
            #expect(issued[id] == batch[i].destination.address)
            #expect(c.httpStatus == 200)
        }
        let sent = try #require(fake.sendRequests.first)
        #expect(sent.header("authorization") == "Bearer \(Self.accessToken)")
        guard case .array(let messages) = try jsonBody(sent) else { Issue.record("not an array"); return }
        #expect(messages.count == 4)
        #expect(messages.map { $0["priority"]?.stringValue } == ["high", "high", "default", "normal"])
        #expect(messages[0]["to"]?.stringValue == token(1))
        #expect(messages[0]["categoryId"]?.stringValue == "PROMPT_CATEGORY")
        #expect(messages[0]["channelId"]?.stringValue == "herald-default")
        // Each message collapses under its notification, so a copy sent again replaces the first.
        #expect(messages.map { $0["collapseId"]?.stringValue } == batch.map { CollapseKey.of($0.item) })
        #expect(messages[0]["collapseId"]?.stringValue == batch[0].item.id.lowercased)
        #expect(messages[0]["badge"]?.intValue == 3)
        #expect(messages[0]["sound"]?.stringValue == "default")
        #expect(messages[3]["sound"] == .null)
        #expect(messages[1]["title"]?.stringValue == "تنبيه")
        #expect(messages[1]["data"]?["deep_link"]?.stringValue?.hasPrefix("herald://") == true)
    }

    @Test func noAuthorizationHeaderWithoutAToken() throws {
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: nil)
        let request = try adapter.request(for: envelopes(1))
        #expect(request.url == "https://exp.host/--/api/v2/push/send")
        #expect(request.header("authorization") == nil)
        #expect(try ExpoAdapter(accessToken: "  ", baseURL: nil).request(for: envelopes(1)).header("authorization") == nil)
    }

    @Test func perTicketErrors() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates)
        defer { rig.closeTransport(); fake.shutdown() }
        fake.failTicket(token: token(1), error: "DeviceNotRegistered",
                        message: "\"\(token(1))\" is not a registered push notification recipient")
        fake.failTicket(token: token(2), error: "MessageTooBig")
        fake.failTicket(token: token(3), error: "MessageRateExceeded")
        fake.failTicket(token: token(4), error: "InvalidCredentials")
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let batch = envelopes(6)

        let outcomes = adapter.classify(rig.transport.perform(try adapter.request(for: batch)), count: 6, now: Date())
            .map(\.outcome)

        #expect(outcomes[0].messageId != nil)
        #expect(outcomes[1] == .destinationInvalid(code: "DeviceNotRegistered",
                                                   message: "expo: \"\(token(1))\" is not a registered push notification recipient"))
        #expect(outcomes[2].label == "permanent" && outcomes[2].code == "MessageTooBig")
        #expect(outcomes[3].label == "retry" && outcomes[3].code == "MessageRateExceeded")
        #expect(outcomes[4].label == "permanent" && outcomes[4].code == "InvalidCredentials")
        #expect(outcomes[5].messageId != nil)
    }

    @Test func requestLevelErrorsApplyToEveryMessage() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates, accessToken: Self.accessToken)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: Self.accessToken, baseURL: fake.baseURL)
        let batch = envelopes(3)
        func send() throws -> [DeliveryOutcome] {
            adapter.classify(rig.transport.perform(try adapter.request(for: batch)), count: 3, now: Date()).map(\.outcome)
        }

        fake.enqueue(.json(400, #"{"errors":[{"code":"PUSH_TOO_MANY_EXPERIENCE_IDS","message":"All push notification messages in the same request must be for the same project.","details":{"@a/b":["ExponentPushToken[x]"]}}]}"#))
        let mixed = try send()
        #expect(mixed.count == 3)
        // Without the tokens, which are another project's is unknown: none fails for good.
        #expect(mixed.allSatisfy { $0.label == "retry" && $0.code == "PUSH_TOO_MANY_EXPERIENCE_IDS" })

        fake.enqueue(.json(429, #"{"errors":[{"code":"TOO_MANY_REQUESTS","message":"rate limit"}]}"#,
                           headers: [("retry-after", "7")]))
        let limited = try send()
        #expect(limited.allSatisfy { $0 == .retry(after: 7, code: "TOO_MANY_REQUESTS", message: "expo: over 600 notifications/s: rate limit") })

        fake.enqueue(.text(503, "upstream unavailable"))
        let down = try send()
        #expect(down.allSatisfy { $0.label == "retry" && $0.code == "http_503" && $0.message!.contains("upstream unavailable") })

        fake.enqueue(.json(200, #"{"data":[{"status":"ok","id":"a"}]}"#))
        let mismatch = try send()
        #expect(mismatch.allSatisfy { $0.label == "retry" && $0.code == "ticket_count_mismatch" })

        // A wrong access token: the fake answers UNAUTHORIZED; the message says what to fix, not the token.
        let wrong = try ExpoAdapter(accessToken: "expo-wrong-token-0000", baseURL: fake.baseURL)
        let denied = wrong.classify(rig.transport.perform(try wrong.request(for: batch)), count: 3, now: Date()).map(\.outcome)
        #expect(denied.allSatisfy { $0.isRefused && $0.code == "UNAUTHORIZED" && $0.message!.contains("EXPO_ACCESS_TOKEN") })
        expectNoSecret(mixed + limited + down + mismatch + denied, [Self.accessToken, "expo-wrong-token-0000"])
    }

    /// PUSH_TOO_MANY_EXPERIENCE_IDS: `details` maps each project to its tokens. The tokens of the
    /// projects other than the one with the most tokens fail; the rest retry at once. On a tie, or
    /// without readable details, every message retries with its backoff.
    @Test func mixedProjectsFailOnlyTheOtherProjectsTokens() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let batch = envelopes(4)
        func send(_ details: String) throws -> [DeliveryOutcome] {
            fake.enqueue(.json(400, #"{"errors":[{"code":"PUSH_TOO_MANY_EXPERIENCE_IDS","message":"All push notification messages in the same request must be for the same project; check the details field to investigate conflicting tokens.","details":\#(details),"isTransient":false}]}"#))
            return adapter.classify(rig.transport.perform(try adapter.request(for: batch)), envelopes: batch, now: Date())
                .map(\.outcome)
        }

        let mixed = try send(#"{"@herald/app":["\#(token(0))","\#(token(1))","\#(token(3))"],"@old/app":["\#(token(2))"]}"#)
        #expect(mixed.map(\.label) == ["retry", "retry", "permanent", "retry"])
        // Those retried at once say nothing of Expo's health: about their destination, not the breaker's.
        fake.enqueue(.json(400, #"{"errors":[{"code":"PUSH_TOO_MANY_EXPERIENCE_IDS","message":"m","details":{"@herald/app":["\#(token(0))","\#(token(1))","\#(token(3))"],"@old/app":["\#(token(2))"]}}]}"#))
        let scopes = adapter.classify(rig.transport.perform(try adapter.request(for: batch)), envelopes: batch, now: Date()).map(\.throttle)
        #expect(scopes == [.destination(wait: 0), .destination(wait: 0), nil, .destination(wait: 0)])
        #expect(mixed.allSatisfy { $0.code == "PUSH_TOO_MANY_EXPERIENCE_IDS" })
        #expect(mixed[2].message?.contains("token of another Expo project (@old/app)") == true, "\(mixed[2])")
        guard case .retry(let after, _, let message) = mixed[0] else {
            Issue.record("expected a retry, got \(mixed[0])")
            return
        }
        #expect(after == 0)
        #expect(message.contains("@old/app"))
        expectNoSecret(mixed, batch.map(\.destination.address))

        let tie = try send(#"{"@a/app":["\#(token(0))","\#(token(1))"],"@b/app":["\#(token(2))","\#(token(3))"]}"#)
        #expect(tie.allSatisfy { if case .retry(nil, "PUSH_TOO_MANY_EXPERIENCE_IDS", _) = $0 { true } else { false } }, "\(tie)")
        let unreadable = try send(#""@a/app""#)
        #expect(unreadable.allSatisfy { $0.label == "retry" }, "\(unreadable)")
    }

    /// A VALIDATION_ERROR that names one message (here the fake's `"[1].to"` for a malformed token)
    /// fails that message only; the others retry at once. One that names none retries them all.
    @Test func aValidationErrorFailsOnlyTheMessageItNames() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let batch = [messagingEnvelope(provider: .expo, address: token(0)),
                     messagingEnvelope(provider: .expo, address: "not-an-expo-token-4711"),
                     messagingEnvelope(provider: .expo, address: token(2))]
        func send() throws -> [DeliveryOutcome] {
            adapter.classify(rig.transport.perform(try adapter.request(for: batch)), envelopes: batch, now: Date()).map(\.outcome)
        }

        let named = try send()
        #expect(named.map(\.label) == ["retry", "permanent", "retry"], "\(named)")
        #expect(named.allSatisfy { $0.code == "VALIDATION_ERROR" })
        guard case .retry(0, _, _) = named[0] else { Issue.record("\(named[0])"); return }
        #expect(named[1].message?.contains("[1].to") == true, "\(named[1])")
        expectNoSecret(named, ["not-an-expo-token-4711"])

        fake.enqueue(.json(400, #"{"errors":[{"code":"VALIDATION_ERROR","message":"\"value\" must be an array"}]}"#))
        let unnamed = try send()
        #expect(unnamed.allSatisfy { if case .retry(nil, "VALIDATION_ERROR", _) = $0 { true } else { false } }, "\(unnamed)")
    }

    @Test func malformedBodyTimeoutAndRefusedAreReadable() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates)
        defer { rig.closeTransport(); fake.shutdown() }
        var adapter = try ExpoAdapter(accessToken: Self.accessToken, baseURL: fake.baseURL)
        let batch = envelopes(2)

        fake.enqueue(.text(200, "<html>gateway says hi</html>"))
        let malformed = adapter.classify(rig.transport.perform(try adapter.request(for: batch)), count: 2, now: Date())
        #expect(malformed.allSatisfy { $0.outcome.label == "retry" && $0.outcome.code == "malformed_response"
            && $0.outcome.message!.contains("gateway says hi") })

        adapter.timeout = 0.5
        fake.enqueue(.json(200, #"{"data":[]}"#, delay: 3))
        let slow = adapter.classify(rig.transport.perform(try adapter.request(for: batch)), count: 2, now: Date())
        #expect(slow.map(\.outcome.code) == ["timeout", "timeout"])

        let closed = try ExpoAdapter(accessToken: Self.accessToken, baseURL: try rig.closedBaseURL())
        let refused = closed.classify(rig.transport.perform(try closed.request(for: batch)), count: 2, now: Date())
        #expect(refused.map(\.outcome.code) == ["connection_refused", "connection_refused"])
        expectNoSecret((malformed + slow + refused).map(\.outcome), [Self.accessToken])
    }

    @Test func twoHundredFiftyEnvelopesGoInThreeRequests() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let all = envelopes(250)
        let chunks = stride(from: 0, to: all.count, by: adapter.maxBatch).map { Array(all[$0..<min($0 + adapter.maxBatch, all.count)]) }
        let requests = try chunks.map { try adapter.request(for: $0) }
        var results: [Int: Result<HTTPResponse, TransportError>] = [:]
        rig.transport.perform(requests) { index, result in results[index] = result }

        let outcomes = chunks.indices.flatMap { i in
            adapter.classify(results[i]!, count: chunks[i].count, now: Date()).map(\.outcome)
        }
        #expect(fake.sendBatchSizes.sorted() == [50, 100, 100])
        #expect(outcomes.count == 250)
        let issued = fake.issuedTickets
        #expect(outcomes.enumerated().allSatisfy { i, o in o.messageId.flatMap { issued[$0] } == all[i].destination.address })
        #expect(throws: AdapterError.self) { try adapter.request(for: envelopes(101)) }
    }

    /// Only "ok" and "error" are final: a receipt whose status is "pending", missing or unknown is asked
    /// for again, not stored as an error.
    @Test func aReceiptWithoutAFinalStatusIsNotReadyYet() {
        let adapter = try! ExpoAdapter(accessToken: nil, baseURL: "https://exp.host")
        let body = #"{"data":{"a":{"status":"pending"},"b":{},"c":{"status":"queued"},"d":{"status":"ok"},"e":{"status":"error","message":"m","details":{"error":"MessageRateExceeded"}}}}"#
        let result = adapter.classifyReceipts(.success(HTTPResponse(status: 200, headers: [], body: Array(body.utf8))))
        #expect(result.notReady(["a", "b", "c", "d", "e"]) == ["a", "b", "c"])
        #expect(result.receipt(for: "d") == .ok)
        #expect(result.receipt(for: "e")?.outcome.code == "MessageRateExceeded")
    }

    @Test func receiptsRecogniseDeviceNotRegistered() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates)
        defer { rig.closeTransport(); fake.shutdown() }
        fake.failReceipt(token: token(1), error: "DeviceNotRegistered")
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let tickets = adapter.classify(rig.transport.perform(try adapter.request(for: envelopes(3))), count: 3, now: Date())
        let ids = tickets.compactMap(\.outcome.messageId)
        #expect(ids.count == 3)

        // Not ready yet: every id is missing.
        fake.setReceiptsReady(false)
        let early = adapter.classifyReceipts(rig.transport.perform(adapter.receiptsRequest(ids: ids)))
        #expect(early == .receipts([:]))
        #expect(early.notReady(ids) == ids)

        fake.setReceiptsReady(true)
        let request = adapter.receiptsRequest(ids: ids + ["unknown-id"])
        #expect(request.url.hasSuffix("/--/api/v2/push/getReceipts"))
        let ready = adapter.classifyReceipts(rig.transport.perform(request))
        #expect(ready.receipt(for: ids[0]) == .ok)
        let dead = try #require(ready.receipt(for: ids[1]))
        #expect(dead.isDeviceNotRegistered)
        #expect(dead.outcome.label == "destination_invalid" && dead.outcome.code == "DeviceNotRegistered")
        #expect(ready.receipt(for: ids[2]) == .ok)
        #expect(ready.notReady(ids + ["unknown-id"]) == ["unknown-id"])

        // A request-level failure is reported as such.
        fake.enqueue(.text(503, "down"))
        let failed = adapter.classifyReceipts(rig.transport.perform(adapter.receiptsRequest(ids: ids)))
        guard case .failed(let outcome) = failed else { Issue.record("expected .failed, got \(failed)"); return }
        #expect(outcome.label == "retry")
        fake.enqueue(.text(200, "not json"))
        guard case .failed(let garbled) = adapter.classifyReceipts(rig.transport.perform(adapter.receiptsRequest(ids: ids))) else {
            Issue.record("expected .failed for a malformed body"); return
        }
        #expect(garbled.code == "malformed_response")
        let body = try JSONValue.parse(Data(adapter.receiptsRequest(ids: (0..<1500).map(String.init)).body))
        guard case .array(let capped)? = body["ids"] else { Issue.record("no ids"); return }
        #expect(capped.count == 1000)
    }

    @Test func messagesAreFittedToFourKilobytes() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let long = String(repeating: "تم تعيينك في ملف ألمانيا 👩🏽‍⚕️ ", count: 200)
        let envelope = messagingEnvelope(provider: .expo, address: token(9), title: "تكليف جديد", body: long, locale: "ar")

        let message = try adapter.message(for: envelope)
        #expect(message.jsonText.utf8.count <= 4096)
        let body = try #require(message["body"]?.stringValue)
        #expect(body.hasSuffix("…"))
        #expect(long.hasPrefix(String(body.dropLast())))

        var bulky = envelope
        bulky.rendered.data["history"] = .string(String(repeating: "x", count: 5000))
        let trimmed = try adapter.message(for: bulky)
        #expect(trimmed.jsonText.utf8.count <= 4096)
        #expect(trimmed["data"]?["history"] == nil)
        #expect(trimmed["data"]?["deep_link"] != nil)

        let outcome = adapter.classify(rig.transport.perform(try adapter.request(for: [envelope])), count: 1, now: Date())
        #expect(outcome.first?.outcome.messageId != nil, "\(String(describing: outcome.first?.outcome))")
    }
}
