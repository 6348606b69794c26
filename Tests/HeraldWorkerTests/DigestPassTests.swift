import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A digest goes out through real passes to the Expo fake (HTTP/2 over TLS): once, at its window's end
/// (`--now`) or at its maximum, with the count and the first items in the person's language and zone;
/// the list shows it as one entry with its items, and reading it reads them all.
@Suite struct DigestPassTests {
    typealias Pass = ProviderPass

    /// A person in `zone` writing `locale`, with one Expo token in that locale.
    static func person(_ db: PGConnection, zone: String = "UTC", locale: String = "en") throws -> UUID {
        let user = try Fixtures(db: db).profile(timezone: zone, locale: locale)
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider, locale)
            values (\(user), \("ExponentPushToken[\(UUID().uuidString.prefix(22))]"), 'android', 'expo', \(locale))
            """)
        return user
    }

    /// Every message the Expo fake was asked to deliver.
    static func messages(_ expo: FakeExpo) throws -> [JSONValue] {
        try expo.sendRequests.flatMap { r -> [JSONValue] in
            if case .array(let list) = try JSONValue.parse(Data(r.body)) { return list }
            return []
        }
    }

    /// The digest rows of `user` (their queue ids), oldest first.
    static func digestRows(_ db: PGConnection, _ user: UUID) throws -> [UUID] {
        try db.query("""
            select queue_id from notification_digests where user_id = \(user) order by opened_at, id
            """).compactMap { $0["queue_id"].uuid }
    }

    /// Three messages sent with `send_notification` to a person in Riyadh who reads Arabic: nothing
    /// goes before the window's end; at its end one push, in Arabic, says 3 and shows the first two
    /// with their Riyadh times. The list has one entry with the three items; reading it reads them.
    @Test func aDigestGoesOnceAtItsEndInThePersonsLanguageAndListsAsOneEntry() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Self.person(db, zone: "Asia/Riyadh", locale: "ar")
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, shown_items) values ('message', 'fixed', 900, 2)")
            for n in 1...3 {
                _ = try SendPushTests.send(db, SendNotificationTests.request(user, [
                    "notification_type": "message", "priority": "normal", "title_en": .string("Note \(n)"),
                    "title_ar": .string("رسالة \(n)")]))
            }
            let window = try #require(db.query("select closes_at, opened_at from notification_digests").first)
            let closes = try #require(window["closes_at"].date)
            let opened = try #require(window["opened_at"].date)

            let (early, _) = Pass.pass(tdb.url, p.settings, now: closes.addingTimeInterval(-1))
            #expect(early.sent == 0)
            #expect(try Self.messages(p.expo).isEmpty, "not before the window's end")
            let (summary, code) = Pass.pass(tdb.url, p.settings, now: closes)
            #expect(code == .ok && summary.sent == 1, "\(summary.error ?? "")")
            let messages = try Self.messages(p.expo)
            #expect(messages.count == 1)
            let push = try #require(messages.first)
            #expect(push["title"]?.stringValue == "3 إشعارات جديدة")
            let riyadh = DateFormatter()
            riyadh.dateFormat = "HH:mm"
            riyadh.timeZone = TimeZone(identifier: "Asia/Riyadh")
            let first = riyadh.string(from: opened)
            #expect(push["body"]?.stringValue?.hasPrefix("\(first) رسالة 1\n") == true, "\(push["body"] ?? .null)")
            #expect(push["body"]?.stringValue?.hasSuffix("\nو1 غيرها") == true)
            #expect(push["data"]?["notification_type"]?.stringValue == "message")
            #expect(push["data"]?["digest_count"]?.intValue == 3)
            _ = Pass.pass(tdb.url, p.settings, now: closes.addingTimeInterval(60))
            #expect(try Self.messages(p.expo).count == 1, "sent once")

            try AppContractTests.asUser(db, user)
            let list = try AppContractTests.json(db, "select get_notifications()")
            #expect(list["total_count"]?.intValue == 1 && list["unread_count"]?.intValue == 1)
            let entry = try #require(AppContractTests.array(list["notifications"]).first)
            #expect(entry["digest"]?["count"]?.intValue == 3)
            let items = AppContractTests.array(entry["digest"]?["items"])
            #expect(items.compactMap { $0["title_en"]?.stringValue } == ["Note 1", "Note 2", "Note 3"])
            let id = try #require(entry["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
            _ = try AppContractTests.json(db, "select mark_notifications_read(array[\(id)]::uuid[])")
            let read = try AppContractTests.json(db, "select get_notifications()")
            #expect(read["unread_count"]?.intValue == 0)
            let readItems = AppContractTests.array(AppContractTests.array(read["notifications"]).first?["digest"]?["items"])
            #expect(readItems.count == 3 && readItems.allSatisfy { $0["is_read"]?.boolValue == true })
        }
    }

    /// A 19:00 window goes at 19:00 in each person's zone: on the day New York moves its clocks, a
    /// Londoner's digest at 19:00 UTC, a New Yorker's at 23:00 UTC (19:00 EDT), and neither a minute
    /// before.
    @Test func aDigestAt1900GoesAtThatMinuteInEachZoneOnADSTDay() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let london = try Self.person(db, zone: "Europe/London")
            let newYork = try Self.person(db, zone: "America/New_York")
            try db.execute("insert into notification_type_digests (type, window_kind, send_at) values ('message', 'local_time', '19:00')")
            for user in [london, newYork] {
                try DigestTests.item(db, user, at: instant("2026-03-08T06:00:00Z"), title: "one")
                try DigestTests.item(db, user, at: instant("2026-03-08T12:00:00Z"), title: "two")
            }
            let londonRow = try #require(Self.digestRows(db, london).first)
            let newYorkRow = try #require(Self.digestRows(db, newYork).first)
            func sent() throws -> Set<String> {
                Set(try Self.messages(p.expo).compactMap { $0["data"]?["notification_id"]?.stringValue })
            }
            for (now, expected) in [("2026-03-08T18:59:00Z", Set<UUID>()), ("2026-03-08T19:00:00Z", [londonRow]),
                                    ("2026-03-08T22:59:00Z", [londonRow]), ("2026-03-08T23:00:00Z", [londonRow, newYorkRow])] {
                let (summary, code) = Pass.pass(tdb.url, p.settings, now: instant(now))
                #expect(code == .ok, "\(summary.error ?? "")")
                #expect(try sent() == Set(expected.map { $0.uuidString.lowercased() }), "at \(now)")
            }
            let push = try #require(Self.messages(p.expo).first)
            #expect(push["title"]?.stringValue == "2 new notifications")
            #expect(push["body"]?.stringValue == "6:00 AM one\n12:00 PM two", "London's times (GMT)")
        }
    }

    /// A window that reaches its maximum goes at once, before its end; the next row opens the next
    /// window, which waits for its own end.
    @Test func aFullDigestGoesAtOnceAndTheNextRowWaits() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Self.person(db)
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 3600, 3)")
            let t0 = instant("2026-03-10T09:00:00Z")
            for n in 0..<4 { try DigestTests.item(db, user, at: t0.addingTimeInterval(Double(n) * 60), title: "n\(n)") }
            let (summary, _) = Pass.pass(tdb.url, p.settings, now: t0.addingTimeInterval(120))
            #expect(summary.sent == 1)
            let rows = try Self.digestRows(db, user)
            #expect(rows.count == 2)
            #expect(try Self.messages(p.expo).map { $0["data"]?["notification_id"]?.stringValue } == [rows[0].uuidString.lowercased()])
            #expect(try Self.messages(p.expo).first?["data"]?["digest_count"]?.intValue == 3)
            let (later, _) = Pass.pass(tdb.url, p.settings, now: t0.addingTimeInterval(3599))
            #expect(later.sent == 0, "the second window ends at 10:03")
        }
    }
}
