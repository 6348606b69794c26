import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// What a device receives for a notification the server-side send (`send_notification`) enqueued:
/// real passes against the real PostgreSQL and the fake APNs, FCM and Expo over TLS. The push carries
/// the sender's `data`, `notification_type`, `notification_id` and the deep link, in the token's
/// language, at the priority asked for (low: silent), with the sound and badge asked for, within each
/// provider's 4 KB.
@Suite struct SendPushTests {
    typealias Pass = ProviderPass

    /// The three fakes, the settings that reach them, and the app's deep-link scheme.
    final class Providers {
        let lab: Pass.Lab
        let apns: FakeAPNs
        let fcm: FakeFCM
        let expo: FakeExpo
        let settings: [String: String]

        init() throws {
            lab = try Pass.Lab()
            apns = try FakeAPNs(certificates: lab.certificates)
            fcm = try FakeFCM(certificates: lab.certificates)
            expo = try FakeExpo(tls: lab.certificates)
            settings = lab.base.merging(try lab.apns(apns)) { $1 }.merging(try lab.fcm(fcm)) { $1 }
                .merging(lab.expo(expo)) { $1 }.merging(["HERALD_DEEP_LINK_SCHEME": "intldossier"]) { $1 }
        }

        func shutdown() {
            apns.shutdown()
            fcm.shutdown()
            expo.shutdown()
            lab.cleanup()
        }

        /// The push each provider was asked to deliver for notification `id`: Expo's message, FCM's
        /// `message`, APNs's payload and headers.
        func pushes(for id: String) throws -> (expo: JSONValue?, fcm: JSONValue?, apns: (JSONValue, FakeRequest)?) {
            let expoMessages = try expo.sendRequests.flatMap { r -> [JSONValue] in
                if case .array(let list) = try JSONValue.parse(Data(r.body)) { return list }
                return []
            }
            let fcmMessages = try fcm.requests.filter { $0.path.hasSuffix("/messages:send") }
                .compactMap { try JSONValue.parse(Data($0.body))["message"] }
            let apnsPushes = try apns.requests.filter { $0.path.hasPrefix("/3/device/") }
                .map { (try JSONValue.parse(Data($0.body)), $0) }
            return (expoMessages.first { $0["data"]?["notification_id"]?.stringValue == id },
                    fcmMessages.first { $0["data"]?["notification_id"]?.stringValue == id },
                    apnsPushes.first { $0.0["notification_id"]?.stringValue == id })
        }
    }

    /// A person with an Expo token in Arabic, an FCM token in English and an APNs token in Arabic.
    static func person(_ db: PGConnection, fcmToken: String = "fcm-" + UUID().uuidString) throws -> UUID {
        let user = UUID()
        try db.execute("insert into user_profiles (user_id, locale, notify_push) values (\(user), 'en', true)")
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider, locale) values
              (\(user), \("ExponentPushToken[\(UUID().uuidString.prefix(22))]"), 'android', 'expo', 'ar'),
              (\(user), \(fcmToken), 'android', 'fcm', 'en'),
              (\(user), \(Pass.apnsToken()), 'ios', 'apns', 'ar')
            """)
        return user
    }

    static func send(_ db: PGConnection, _ request: JSONValue) throws -> String {
        let answer = try SendNotificationTests.send(db, request)
        return try #require(answer["notification_id"]?.stringValue)
    }

    /// The next whole second, once it has come: every row enqueued before it is due, and the fakes,
    /// which check provider tokens against the real clock to the second, accept it.
    static func dueNow() -> Date {
        let next = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down) + 1)
        Thread.sleep(until: next)
        return next
    }

    /// A high-priority notification reaches all three providers at their immediate priority, each in
    /// its token's language, with the sender's data, its type, its id and its deep link; the badge is
    /// the unread count plus `badge_increment`.
    @Test func aSentNotificationCarriesItsDataTypeIdLinkAndLanguageEverywhere() throws {
        let p = try Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Self.person(db)
            try db.execute("insert into inbox (user_id, type, title, body, is_read) values (\(user), 'system', 't', 'b', false), (\(user), 'system', 't', 'b', false), (\(user), 'system', 't', 'b', true)")
            let id = try Self.send(db, SendNotificationTests.request(user, ["badge_increment": 2]))
            let (summary, code) = Pass.pass(tdb.url, p.settings, now: Self.dueNow())
            #expect(code == .ok && summary.sent == 1, "\(summary.error ?? "")")
            let link = "intldossier://dossiers/660e8400-e29b-41d4-a716-446655440001"
            let pushes = try p.pushes(for: id)

            let expo = try #require(pushes.expo)
            #expect(expo["title"]?.stringValue == "تكليف جديد" && expo["body"]?.stringValue == "تم تعيينك في ملف ألمانيا كمحلل قطري")
            #expect(expo["priority"]?.stringValue == "high" && expo["badge"]?.intValue == 4 && expo["sound"]?.stringValue == "default")
            for data in [expo["data"], pushes.fcm?["data"], pushes.apns?.0] {
                #expect(data?["dossier_id"]?.stringValue == "660e8400-e29b-41d4-a716-446655440001")
                #expect(data?["assignment_role"]?.stringValue == "country_analyst")
                #expect(data?["notification_type"]?.stringValue == "assignment")
                #expect(data?["deep_link"]?.stringValue == link)
            }

            let fcm = try #require(pushes.fcm)
            #expect(fcm["notification"]?["title"]?.stringValue == "New Assignment", "the FCM token is English")
            #expect(fcm["android"]?["priority"]?.stringValue == "HIGH")
            #expect(fcm["apns"]?["headers"]?["apns-priority"]?.stringValue == "10")
            #expect(fcm["apns"]?["payload"]?["aps"]?["badge"]?.intValue == 4)
            if case .object(let data)? = fcm["data"] {
                #expect(data.values.allSatisfy { if case .string = $0 { true } else { false } }, "FCM data values are strings")
            } else {
                Issue.record("FCM message without data")
            }

            let (apns, request) = try #require(pushes.apns)
            #expect(request.header("apns-priority") == "10" && request.header("apns-push-type") == "alert")
            #expect(apns["aps"]?["alert"]?["title"]?.stringValue == "تكليف جديد")
            #expect(apns["aps"]?["badge"]?.intValue == 4 && apns["aps"]?["sound"]?.stringValue == "default")
        }
    }

    /// `normal` goes out at once at the providers' normal priority; `low` is silent (no alert, body,
    /// sound or badge: APNs background at 5, FCM data-only, Expo `_contentAvailable`); `sound` custom
    /// plays HERALD_CUSTOM_SOUND and null none.
    @Test func normalAndLowPrioritiesAndTheSoundsAskedFor() throws {
        let p = try Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Self.person(db)
            let normal = try Self.send(db, SendNotificationTests.request(user, ["notification_type": "message", "priority": "normal", "sound": "custom"]))
            let low = try Self.send(db, SendNotificationTests.request(user, ["notification_type": "system", "priority": "low"]))
            let quiet = try Self.send(db, SendNotificationTests.request(user, ["notification_type": "signal", "sound": .null]))
            let settings = p.settings.merging(["HERALD_CUSTOM_SOUND": "chime.caf"]) { $1 }
            let (summary, code) = Pass.pass(tdb.url, settings, now: Self.dueNow())
            #expect(code == .ok && summary.sent == 3, "\(summary.error ?? "")")

            let n = try p.pushes(for: normal)
            #expect(n.expo?["priority"]?.stringValue == "default" && n.expo?["sound"]?.stringValue == "chime.caf")
            #expect(n.fcm?["android"]?["priority"]?.stringValue == "NORMAL" && n.fcm?["notification"] != nil)
            #expect(n.fcm?["apns"]?["headers"]?["apns-priority"]?.stringValue == "5")
            #expect(n.apns?.1.header("apns-priority") == "5" && n.apns?.1.header("apns-push-type") == "alert")
            #expect(n.apns?.0["aps"]?["sound"]?.stringValue == "chime.caf")

            let l = try p.pushes(for: low)
            let expo = try #require(l.expo)
            #expect(expo["_contentAvailable"]?.boolValue == true)
            for key in ["title", "body", "sound", "badge"] { #expect(expo[key] == nil, "silent Expo message has \(key)") }
            #expect(expo["data"]?["dossier_id"] != nil)
            #expect(l.fcm?["notification"] == nil && l.fcm?["data"]?["dossier_id"] != nil, "FCM data-only")
            #expect(l.fcm?["apns"]?["headers"]?["apns-push-type"]?.stringValue == "background")
            let (apns, request) = try #require(l.apns)
            #expect(request.header("apns-push-type") == "background" && request.header("apns-priority") == "5")
            #expect(apns["aps"] == ["content-available": 1])
            #expect(apns["dossier_id"] != nil && apns["notification_type"]?.stringValue == "system")

            let q = try p.pushes(for: quiet)
            #expect(q.apns?.0["aps"]?["sound"] == nil && q.apns?.0["aps"]?["alert"] != nil)
            #expect(q.expo?["sound"] == .null && q.expo?["priority"]?.stringValue == "high")
        }
    }

    /// A notification scheduled ahead is not sent before its time, and is sent once it comes.
    @Test func aScheduledNotificationWaitsForItsTime() throws {
        let p = try Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            // Expo alone: the fake checks no provider token against the clock, so a pass may run ahead of it.
            let (user, _) = try SendNotificationTests.person(db)
            let at = Date().addingTimeInterval(600)
            let id = try Self.send(db, SendNotificationTests.request(user, ["scheduled_at": .number((at.timeIntervalSince1970 * 1000).rounded())]))
            let early = Pass.pass(tdb.url, p.settings, now: Self.dueNow())
            #expect(early.0.sent == 0 && p.expo.sendRequests.isEmpty)
            let late = Pass.pass(tdb.url, p.settings, now: at.addingTimeInterval(1))
            #expect(late.0.sent == 1, "\(late.0.error ?? "")")
            #expect(try p.pushes(for: id).expo != nil)
        }
    }

    /// The largest request the send accepts (data, deep link and image at the combined limit, a type
    /// name of 63 characters, the longest texts, a 200-byte FCM token) still fits every provider's 4 KB
    /// with all its data: the refusal is at the send, never at delivery.
    @Test func theLargestAcceptedRequestFitsEveryProvider() throws {
        let p = try Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let type = "t" + String(repeating: "y", count: 62)
            try db.execute("insert into notification_types (type) values (\(type))")
            let user = try Self.person(db, fcmToken: String(repeating: "f", count: 200))
            let data = JSONValue.object(Dictionary(uniqueKeysWithValues: (0..<20).map {
                (String(format: "k%02d", $0), JSONValue.string(String(repeating: "v", count: 92)))
            }))
            let request = SendNotificationTests.request(user, [
                "notification_type": .string(type), "data": data,
                "deep_link": .string("intldossier://dossiers/" + String(repeating: "d", count: 489)),
                "image_url": .string("https://example.com/" + String(repeating: "i", count: 150)),
                "title_en": .string(String(repeating: "T", count: 256)), "title_ar": .string(String(repeating: "ع", count: 256)),
                "body_en": .string(String(repeating: "B", count: 2048)), "body_ar": .string(String(repeating: "ب", count: 2048)),
            ])
            let id = try Self.send(db, request)
            let (summary, code) = Pass.pass(tdb.url, p.settings, now: Self.dueNow())
            #expect(code == .ok && summary.sent == 1, "\(summary.error ?? "")")
            let outcomes = try db.query("select provider, outcome from notification_deliveries where queue_id = \(id)::uuid order by provider")
            #expect(outcomes.map { "\($0["provider"].string ?? ""):\($0["outcome"].string ?? "")" }
                    == ["apns:delivered", "expo:delivered", "fcm:delivered"])
            let pushes = try p.pushes(for: id)
            for (name, data) in [("expo", pushes.expo?["data"]), ("fcm", pushes.fcm?["data"]), ("apns", pushes.apns?.0)] {
                #expect((0..<20).allSatisfy { data?[String(format: "k%02d", $0)] != nil }, "\(name) lost data")
            }
            // Expo's limit is per message (a request is an array of them), FCM's and APNs's per request.
            let bodies = [pushes.expo.map { $0.jsonText.utf8.count } ?? 0]
                + p.fcm.requests.filter { $0.path.hasSuffix("/messages:send") }.map(\.body.count)
                + p.apns.requests.filter { $0.path.hasPrefix("/3/device/") }.map(\.body.count)
            #expect(bodies.count == 3 && bodies.allSatisfy { $0 <= 4096 }, "\(bodies)")
            #expect((pushes.expo?["title"]?.stringValue ?? "").isEmpty == false, "the title survives, shortened")
        }
    }
}
