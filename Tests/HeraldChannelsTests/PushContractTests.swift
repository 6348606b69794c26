import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// The push contract, as the fake providers receive it: Expo channelId/categoryId, silent
/// data-only pushes, image and action buttons on APNs, FCM and Expo, Expo MessageTooBig and
/// MessageRateExceeded.
@Suite(.serialized)
struct PushContractTests {
    static let accessToken = "expo-secret-access-token-4f9c1d"

    /// A rendered row of `kind` for `provider`, rendered by the real Renderer from `payload`.
    func envelope(provider: Provider, address: String, kind: String = "reminder", payload: String = "{}",
                  silentKinds: Set<String> = [], severity: Severity? = nil, priority: Priority = .normal,
                  attempts: Int = 1, id: UUID = UUID()) -> Envelope {
        let item = QueueItem(id: id, recipientUserId: UUID(), channelRaw: "push", kindRaw: kind, severity: severity,
                             priority: priority, payloadText: payload, scheduledAt: Date(), attempts: attempts)
        let rendered = Renderer(options: RenderOptions(silentKinds: silentKinds))
            .render(item, preferences: Preferences(userId: item.recipientUserId, locale: "en"), unreadInApp: 2)
        return Envelope(item: item, rendered: rendered, destination: Destination(provider: provider, address: address),
                        now: Date())
    }

    static let richPayload = #"""
    {"title":"Dose","body":"Time for your dose","image_url":"https://cdn.example.com/pill.png",
     "actions":[{"id":"taken","title":"Taken","action":"dose_marked_taken"},{"id":"snooze","title":"Later","action":"snoozed"}]}
    """#

    // MARK: Expo

    func expoMessages(_ fake: FakeExpo, _ index: Int = 0) throws -> [JSONValue] {
        let sent = fake.sendRequests[index]
        guard case .array(let messages) = try JSONValue.parse(Data(sent.body)) else { throw AdapterError("not an array") }
        return messages
    }

    @Test func expoChannelIdPerKindAndCategoryId() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates, accessToken: Self.accessToken)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: Self.accessToken, baseURL: fake.baseURL,
                                      androidChannels: ["reminder": "meds-channel"])
        let batch = ["reminder", "daily_forecast", "prompt", "pattern_alert", "system"].enumerated().map { i, kind in
            envelope(provider: .expo, address: "ExponentPushToken[k\(i)]", kind: kind)
        }
        let outcomes = adapter.classify(rig.transport.perform(try adapter.request(for: batch)), envelopes: batch, now: Date())
        #expect(outcomes.allSatisfy { $0.outcome.label == "delivered" })
        let m = try expoMessages(fake)
        #expect(m.map { $0["channelId"]?.stringValue } == ["meds-channel", "herald-forecasts", "herald-prompts", "herald-alerts", "herald-system"])
        #expect(m.map { $0["categoryId"]?.stringValue } == ["REMINDER_CATEGORY", "FORECAST_CATEGORY", "PROMPT_CATEGORY", "ALERT_CATEGORY", "SYSTEM_CATEGORY"])

        // HERALD_ANDROID_CHANNEL is the fallback for kinds without their own; a payload channel_id wins.
        let fallback = try ExpoAdapter(accessToken: nil, baseURL: nil, androidChannelId: "all", androidChannels: ["prompt": "p"])
        #expect(fallback.androidChannel(for: envelope(provider: .expo, address: "x", kind: "system")) == "all")
        #expect(fallback.androidChannel(for: envelope(provider: .expo, address: "x", kind: "prompt")) == "p")
        var own = envelope(provider: .expo, address: "x", kind: "prompt")
        own.rendered.data["channel_id"] = "custom"
        #expect(fallback.androidChannel(for: own) == "custom")
    }

    @Test func expoSilentKindIsDataOnly() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates, accessToken: nil)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let batch = [envelope(provider: .expo, address: "ExponentPushToken[s1]", kind: "prompt", silentKinds: ["prompt"]),
                     envelope(provider: .expo, address: "ExponentPushToken[s2]", kind: "system", payload: #"{"silent":true}"#),
                     envelope(provider: .expo, address: "ExponentPushToken[s3]", kind: "prompt")]
        let outcomes = adapter.classify(rig.transport.perform(try adapter.request(for: batch)), envelopes: batch, now: Date())
        #expect(outcomes.allSatisfy { $0.outcome.label == "delivered" })
        let m = try expoMessages(fake)
        for silent in m[0...1] {
            #expect(silent["_contentAvailable"] == true)
            #expect(silent["title"] == nil && silent["body"] == nil && silent["sound"] == nil && silent["badge"] == nil)
            #expect(silent["data"]?["queue_id"] != nil)
        }
        #expect(m[2]["_contentAvailable"] == nil)
        #expect(m[2]["title"]?.stringValue == "Meditation Check-in")
    }

    @Test func expoImageAndActions() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates, accessToken: nil)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let batch = [envelope(provider: .expo, address: "ExponentPushToken[i1]", payload: Self.richPayload)]
        _ = adapter.classify(rig.transport.perform(try adapter.request(for: batch)), envelopes: batch, now: Date())
        let m = try #require(try expoMessages(fake).first)
        #expect(m["richContent"]?["image"]?.stringValue == "https://cdn.example.com/pill.png")
        #expect(m["mutableContent"] == true)
        #expect(m["data"]?["image_url"]?.stringValue == "https://cdn.example.com/pill.png")
        #expect(m["categoryId"]?.stringValue == "REMINDER_CATEGORY")
        guard case .array(let actions)? = m["data"]?["actions"] else { Issue.record("no actions"); return }
        #expect(actions.map { $0["id"]?.stringValue } == ["taken", "snooze"])
        #expect(actions.map { $0["action"]?.stringValue } == ["dose_marked_taken", "snoozed"])
    }

    @Test func expoMessageTooBigIsCutAndRetriedOnce() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates, accessToken: nil)
        defer { rig.closeTransport(); fake.shutdown() }
        // Expo measures its own payload: here it refuses anything over 3,500 bytes of our JSON.
        fake.setMaxMessageBytes(3500)
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        let long = String(repeating: "Remember to log how you feel today. ", count: 150)
        let payload = JSONValue.object(["title": "Check-in", "body": .string(long)]).jsonText
        let id = UUID()
        let first = envelope(provider: .expo, address: "ExponentPushToken[big]", payload: payload, id: id)
        let one = adapter.classify(rig.transport.perform(try adapter.request(for: [first])), envelopes: [first], now: Date())
        guard case .retry(let after, "MessageTooBig", let message) = one[0].outcome else {
            Issue.record("expected a retry, got \(one[0].outcome)"); return
        }
        #expect(after == 0)
        #expect(message.contains("retried once"))
        let firstBody = try #require(try expoMessages(fake, 0).first?["body"]?.stringValue)
        #expect(Array(fake.sendRequests[0].body).count > 3500)

        // The next attempt is cut to 3,072 bytes, shorter body, and goes through.
        var second = first
        second.item.attempts = 2
        let two = adapter.classify(rig.transport.perform(try adapter.request(for: [second])), envelopes: [second], now: Date())
        #expect(two[0].outcome.label == "delivered")
        let sent = try #require(try expoMessages(fake, 1).first)
        let secondBody = try #require(sent["body"]?.stringValue)
        #expect(secondBody.count < firstBody.count)
        #expect(secondBody.hasSuffix("…"))
        #expect(sent.jsonText.utf8.count <= ExpoAdapter.shrunkPayloadBytes)
        #expect(!adapter.tooBig.contains(id))

        // Refused again after the cut: failed for good, not retried a second time.
        fake.setMaxMessageBytes(1000)
        let again = envelope(provider: .expo, address: "ExponentPushToken[big2]", payload: payload)
        let a1 = adapter.classify(rig.transport.perform(try adapter.request(for: [again])), envelopes: [again], now: Date())
        #expect(a1[0].outcome.code == "MessageTooBig" && a1[0].outcome.label == "retry")
        let a2 = adapter.classify(rig.transport.perform(try adapter.request(for: [again])), envelopes: [again], now: Date())
        #expect(a2[0].outcome.label == "permanent")
        #expect(a2[0].outcome.code == "MessageTooBig")
    }

    @Test func expoMessageRateExceededBacksOffBySeed003Schedule() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fake = try FakeExpo(tls: rig.certificates, accessToken: nil)
        defer { rig.closeTransport(); fake.shutdown() }
        let adapter = try ExpoAdapter(accessToken: nil, baseURL: fake.baseURL)
        fake.failTicket(token: "ExponentPushToken[busy]", error: "MessageRateExceeded")
        var waits: [Double?] = []
        for attempt in 1...5 {
            let e = envelope(provider: .expo, address: "ExponentPushToken[busy]", attempts: attempt)
            let ok = envelope(provider: .expo, address: "ExponentPushToken[calm]", attempts: attempt)
            let answers = adapter.classify(rig.transport.perform(try adapter.request(for: [e, ok])), envelopes: [e, ok], now: Date())
            guard case .retry(let after, "MessageRateExceeded", _) = answers[0].outcome else {
                Issue.record("expected a retry, got \(answers[0].outcome)"); return
            }
            // The one device waits; the provider is not throttled.
            #expect(answers[0].throttle == .destination(wait: after))
            #expect(answers[1].outcome.label == "delivered")
            waits.append(after)
        }
        #expect(waits == [5, 30, 120, 120, 120])
        #expect(ExpoAdapter.rateExceededWait(attempt: 0) == 5)
        // A retry after a wait is what the pass's backoff honours.
        #expect(Backoff.delay(attempt: 2, retryAfter: 30, random: 0.9) == 30)
    }

    // MARK: APNs

    func apnsAdapter(_ apns: FakeAPNs) throws -> APNsAdapter {
        try APNsAdapter(keyPEM: apns.keyPEM, keyId: apns.keyId, teamId: apns.teamId, topic: apns.topic,
                        environment: .sandbox, baseURL: apns.baseURL, timeout: 5)
    }

    @Test func apnsSilentIsABackgroundPush() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let apns = try FakeAPNs(certificates: rig.certificates)
        defer { rig.closeTransport(); apns.shutdown() }
        let adapter = try apnsAdapter(apns)
        let e = envelope(provider: .apns, address: "a1b2c3", kind: "prompt", silentKinds: ["prompt"], priority: .high)
        let outcome = adapter.classify(rig.transport.perform(try adapter.request(for: e)), now: e.now)
        #expect(outcome.outcome.label == "delivered")
        let request = try #require(apns.requests.first)
        #expect(request.header("apns-push-type") == "background")
        #expect(request.header("apns-priority") == "5")
        let body = try jsonObject(request.body)
        let aps = try #require(body["aps"] as? [String: Any])
        #expect(aps["content-available"] as? Int == 1)
        #expect(aps.count == 1)  // no alert, sound, badge
        #expect(body["kind"] as? String == "prompt")
    }

    @Test func apnsImageAndActions() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let apns = try FakeAPNs(certificates: rig.certificates)
        defer { rig.closeTransport(); apns.shutdown() }
        let adapter = try apnsAdapter(apns)
        let e = envelope(provider: .apns, address: "a1b2c4", payload: Self.richPayload)
        #expect(adapter.classify(rig.transport.perform(try adapter.request(for: e)), now: e.now).outcome.label == "delivered")
        let request = try #require(apns.requests.first)
        #expect(request.header("apns-push-type") == "alert")
        let body = try jsonObject(request.body)
        let aps = try #require(body["aps"] as? [String: Any])
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["category"] as? String == "REMINDER_CATEGORY")
        #expect((aps["alert"] as? [String: Any])?["title"] as? String == "Dose")
        #expect(body["image_url"] as? String == "https://cdn.example.com/pill.png")
        let actions = try #require(body["actions"] as? [[String: Any]])
        #expect(actions.map { $0["id"] as? String } == ["taken", "snooze"])
    }

    // MARK: FCM

    func fcmAdapter(_ fcm: FakeFCM) throws -> FCMAdapter {
        try FCMAdapter(serviceAccountJSON: fcm.serviceAccountJSON, baseURL: fcm.baseURL, timeout: 5)
    }

    func fcmMessage(_ fcm: FakeFCM) throws -> [String: Any] {
        let send = try #require(fcm.requests.first { $0.path.hasSuffix("/messages:send") })
        return try #require(try jsonObject(send.body)["message"] as? [String: Any])
    }

    @Test func fcmSilentIsDataOnly() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fcm = try FakeFCM(certificates: rig.certificates)
        defer { rig.closeTransport(); fcm.shutdown() }
        let adapter = try fcmAdapter(fcm)
        let e = envelope(provider: .fcm, address: "fcm-silent", kind: "system", payload: #"{"silent":true}"#)
        try adapter.prepare(now: e.now, transport: rig.transport)
        #expect(adapter.classify(rig.transport.perform(try adapter.request(for: e)), now: e.now).outcome.label == "delivered")
        let message = try fcmMessage(fcm)
        #expect(message["notification"] == nil)
        #expect((message["data"] as? [String: Any])?["kind"] as? String == "system")
        let apns = try #require(message["apns"] as? [String: Any])
        #expect((apns["headers"] as? [String: String]) == ["apns-priority": "5", "apns-push-type": "background",
                                                            "apns-collapse-id": e.item.id.lowercased])
        let aps = try #require((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps.count == 1 && aps["content-available"] as? Int == 1)
    }

    @Test func fcmImageAndActions() throws {
        let rig = try MessagingRig()
        defer { rig.remove() }
        let fcm = try FakeFCM(certificates: rig.certificates)
        defer { rig.closeTransport(); fcm.shutdown() }
        let adapter = try fcmAdapter(fcm)
        let e = envelope(provider: .fcm, address: "fcm-rich", payload: Self.richPayload)
        try adapter.prepare(now: e.now, transport: rig.transport)
        #expect(adapter.classify(rig.transport.perform(try adapter.request(for: e)), now: e.now).outcome.label == "delivered")
        let message = try fcmMessage(fcm)
        let notification = try #require(message["notification"] as? [String: Any])
        #expect(notification["image"] as? String == "https://cdn.example.com/pill.png")
        #expect(notification["title"] as? String == "Dose")
        let data = try #require(message["data"] as? [String: String])
        #expect(data["image_url"] == "https://cdn.example.com/pill.png")
        let actions = try #require(try JSONValue.parse(try #require(data["actions"])))
        #expect(actions.jsonText.contains("dose_marked_taken"))
        let apns = try #require(message["apns"] as? [String: Any])
        #expect((apns["fcm_options"] as? [String: Any])?["image"] as? String == "https://cdn.example.com/pill.png")
        let aps = try #require((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["category"] as? String == "REMINDER_CATEGORY")
    }
}
