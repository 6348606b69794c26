import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// The user's notifications are one entry per notification (sql/037_notification_entries.sql): written
/// when it is enqueued, listed once a row of it is sent, whatever channels carried it, and kept 30 days
/// after its delivery.
@Suite struct NotificationEntryTests {
    static func asUser(_ db: PGConnection, _ id: UUID?) throws { try AppContractTests.asUser(db, id) }
    static func json(_ db: PGConnection, _ sql: SQL) throws -> JSONValue { try AppContractTests.json(db, sql) }
    static func array(_ v: JSONValue?) -> [JSONValue] { AppContractTests.array(v) }

    /// A notification fanned out to push and in-app (one `notification_group`) is one entry: listed
    /// once, in the history once (on the channel that carried it first), and acted on or marked read by
    /// any of its rows' ids, as the push payload names them.
    @Test func aNotificationOnTwoChannelsIsOneEntry() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile()
            try f.token(a, provider: "expo")
            let now = Date()
            let ids = try db.query("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at,
                                                run_after, notification_group)
                select \(a), \(a), c, 'reminder', '{"title":"Dose","body":"now"}', \(now), \(now), 'dose-1'
                  from unnest(array['push', 'in_app']) c
                returning id, channel
                """)
            let pushed = try #require(ids.first { $0["channel"].string == "push" }?["id"].uuid)
            #expect(try f.count("select count(*) from inbox where user_id = \(a)") == 1, "written when enqueued")
            try tdb.withoutSpacing()
            let (summary, _) = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_PUSH": "log", "HERALD_LOG_ADAPTER_FILE": "/dev/null"])
                .run(now: now)
            #expect(summary.sent == 2)
            #expect(try f.count("select count(*) from inbox where user_id = \(a)") == 1, "sending wrote no row")

            try Self.asUser(db, a)
            let list = try Self.json(db, "select get_notifications()")
            #expect(list["total_count"]?.intValue == 1 && list["unread_count"]?.intValue == 1)
            let history = Self.array(try Self.json(db, "select get_notification_history()"))
            #expect(history.count == 1)
            let answer = try Self.json(db, "select record_notification_action(\(pushed), 'opened')")
            #expect(answer["marked_read"]?.boolValue == true)
            #expect(try Self.json(db, "select get_notifications()")["unread_count"]?.intValue == 0)
            #expect(Self.array(try Self.json(db, "select get_notification_history()")).first?["action"]?.stringValue == "opened")
        }
    }

    /// A notification not yet sent (due later, or deferred) is not in the list; once a pass sends it, it
    /// is, and counts as unread.
    @Test func aNotificationListsOnceItIsSent() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile()
            let later = Date().addingTimeInterval(3_600)
            try f.enqueue(to: a, channel: "in_app", at: later)
            try Self.asUser(db, a)
            #expect(try Self.json(db, "select get_notifications()")["total_count"]?.intValue == 0)
            #expect(Self.array(try Self.json(db, "select get_notification_history()")).isEmpty)
            _ = Worker(url: tdb.url).run(now: later)
            let list = try Self.json(db, "select get_notifications()")
            #expect(list["total_count"]?.intValue == 1 && list["unread_count"]?.intValue == 1)
        }
    }

    // MARK: - Retention

    /// Entries are kept 30 days after their delivery, whatever the queue keeps: a pruned queue row
    /// leaves its delivery in its entry, and an entry never delivered goes with its rows.
    @Test func historyIsKeptThirtyDaysWhateverTheQueueKeeps() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile()
            let now = Date()
            let id = try f.enqueue(to: a, channel: "in_app", at: now)
            let skipped = try f.enqueue(to: a, channel: "in_app", at: now)
            try db.execute("update notification_queue set status = 'skipped' where id = \(skipped)")
            try db.execute("update inbox set created_at = now() - interval '50 days' where id = \(skipped)")
            _ = Worker(url: tdb.url).run(now: now)
            try db.execute("""
                insert into inbox (user_id, type, title, body, delivered_at, created_at)
                values (\(a), 'reminder', 'old', 'old', now() - interval '31 days', now() - interval '31 days'),
                       (\(a), 'reminder', 'kept', 'kept', now() - interval '29 days', now() - interval '29 days')
                """)
            // The queue rows go after a day here; the sent one's entry stays, with its delivery.
            try db.execute("update notification_queue set updated_at = now() - interval '2 days'")
            let store = QueueStore(db: db, passId: "test-prune")
            // The queue rows go by their `updated_at`; the entries by the pass's clock: at a `--now` ten days
            // ago, no entry is a month old yet.
            #expect(try store.pruneTerminal(retentionDays: 1, now: now.addingTimeInterval(-10 * 86_400)) == 2)
            #expect(try f.count("select count(*) from inbox") == 3, "the never-delivered entry went with its row")
            #expect(try store.pruneTerminal(retentionDays: 1, now: now) == 0)
            #expect(try f.count("select count(*) from notification_queue") == 0)
            let titles = try db.query("select title from inbox order by delivered_at").compactMap { $0["title"].string }
            #expect(titles == ["kept", "Hello"])
            #expect(try db.query("select channel from inbox where id = \(id)").first?["channel"].string == "in_app")
            try Self.asUser(db, a)
            #expect(Self.array(try Self.json(db, "select get_notification_history(30)")).count == 2)
            #expect(Self.array(try Self.json(db, "select get_notification_history(1)")).count == 1)
        }
    }

    // MARK: - The badge

    /// A server-side send is in the user's list once sent, and each push's badge is the list's unread
    /// count including the notification it carries: 1, then 2, then 2 again after one is read.
    @Test func theBadgeIsTheListsUnreadCount() throws {
        let p = try SendPushTests.Providers()
        defer { p.shutdown() }
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try SendPushTests.person(db)
            var badges: [Int] = []
            for step in 0..<3 {
                let id = try SendPushTests.send(db, SendNotificationTests.request(user, [:]))
                let (summary, _) = ProviderPass.pass(tdb.url, p.settings, now: SendPushTests.dueNow())
                #expect(summary.sent == 1, "\(summary.error ?? "")")
                badges.append(try #require(try p.pushes(for: id).expo?["badge"]?.intValue))
                try Self.asUser(db, user)
                let list = try Self.json(db, "select get_notifications()")
                #expect(list["total_count"]?.intValue == step + 1)
                #expect(list["unread_count"]?.intValue == badges.last, "the list and the badge agree")
                #expect(Self.array(list["notifications"]).first?["id"]?.stringValue == id, "newest first")
                if step == 1 { _ = try Self.json(db, "select mark_notifications_read(array[\(UUID(uuidString: id))]::uuid[])") }
                try Self.asUser(db, nil)
            }
            #expect(badges == [1, 2, 2])
        }
    }

    // MARK: - Hostile payloads

    /// A payload is the enqueuer's to write: whatever it holds, the enqueue succeeds and the entry keeps
    /// only text strings (at most 4,000 characters), a deep link the app can open (`scheme://…`, printable
    /// ASCII, at most 512 bytes), an http(s) image and a `data` object.
    @Test(arguments: [
        (#"[1, 2]"#, nil, nil, nil),
        (#""just a string""#, nil, nil, nil),
        (#"{"title": 42, "title_en": {"x": 1}, "deep_link": "javascript:alert(1)"}"#, nil, nil, nil),
        (#"{"title": "", "title_en": "Hi", "deep_link": "app://a\nb"}"#, "Hi", nil, nil),
        (#"{"title": "T", "deep_link": "intldossier://dossiers/1", "image_url": "ftp://x/y.png"}"#, "T", "intldossier://dossiers/1", nil),
        (#"{"title": "T", "image_url": "https://example.com/a.png", "data": [1]}"#, "T", nil, "https://example.com/a.png"),
    ] as [(String, String?, String?, String?)])
    func aHostilePayloadNeverFailsTheEnqueue(payload: String, title: String?, link: String?, image: String?) throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let id = try f.enqueue(to: try f.profile(), payload: payload, at: Date())
            let entry = try #require(try db.query("select title, deep_link, image_url, data from inbox where queue_id = \(id)").first)
            #expect(entry["title"].string == title)
            #expect(entry["deep_link"].string == link)
            #expect(entry["image_url"].string == image)
            #expect(entry["data"].string == "{}")
        }
    }

    /// Random payloads of random bytes (as JSON strings, numbers, nesting, keys of the entry's names):
    /// every enqueue succeeds and writes exactly one entry, never a title longer than 4,000.
    @Test func randomPayloadsAlwaysEnqueue() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile(locale: "ar")
            var rng = Fuzz(seed: 2026)
            let keys = ["title", "title_en", "title_ar", "body", "body_ar", "deep_link", "image_url", "data", "x"]
            for _ in 0..<200 {
                var o: [String: JSONValue] = [:]
                for key in keys where Bool.random(using: &rng) {
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: o[key] = .string(String((0..<Int.random(in: 0..<5000, using: &rng)).map { _ in
                        Character(Unicode.Scalar(UInt8.random(in: 1...255, using: &rng))) }))
                    case 1: o[key] = .number(Double.random(in: -1e300...1e300, using: &rng))
                    case 2: o[key] = .object(["k": .string("v")])
                    default: o[key] = .null
                    }
                }
                try f.enqueue(to: user, payload: JSONValue.object(o).pgJSONTextAnyOrder, at: Date())
            }
            #expect(try f.count("select count(*)::int from inbox where user_id = \(user)") == 200)
            #expect(try f.count("select count(*)::int from inbox where length(title) > 4000 or length(body) > 4000") == 0)
        }
    }

    /// The rule the entry's text follows, as the renderer picks a payload's own text: for `lang`, the
    /// first non-empty string of `<key>_<lang>` (the language's first part, lower case), `<key>_en`,
    /// `<key>`, cut at 4,000 characters; nothing for a payload that is not an object.
    static func payloadText(_ payload: JSONValue, _ key: String, _ lang: String?) -> String? {
        guard case .object(let o) = payload else { return nil }
        let first = (lang ?? "en").replacingOccurrences(of: "_", with: "-").split(separator: "-", omittingEmptySubsequences: false)
            .first.map { $0.lowercased() } ?? ""
        for name in [key + "_" + first, key + "_en", key] {
            if case .string(let text)? = o[name], !text.isEmpty { return String(String.UnicodeScalarView(text.unicodeScalars.prefix(4000))) }
        }
        return nil
    }

    /// `herald_payload_text` answers as the rule says for 300 random payloads, each asked for a title
    /// and a body in six spellings of a language.
    @Test func theEntrysTextFollowsTheRendererRuleForRandomPayloads() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            var rng = Fuzz(seed: 20261126)
            let keys = ["title", "title_en", "title_ar", "title_pt", "body", "body_ar", "body_en"]
            for _ in 0..<300 {
                var o: [String: JSONValue] = [:]
                for key in keys where Bool.random(using: &rng) {
                    switch Int.random(in: 0..<5, using: &rng) {
                    case 0: o[key] = .string(String((0..<Int.random(in: 0..<4100, using: &rng)).map { _ in
                        Unicode.Scalar(UInt32.random(in: 1...0x7FF, using: &rng)).map { Character($0) } ?? "x" }))
                    case 1: o[key] = .string("")
                    case 2: o[key] = .number(Double.random(in: -1e9...1e9, using: &rng))
                    case 3: o[key] = .object(["k": .string("v")])
                    default: o[key] = .null
                    }
                }
                let payload: JSONValue = Int.random(in: 0..<20, using: &rng) == 0 ? .array([.string("x")]) : .object(o)
                for lang in ["en", "ar", "pt-BR", "PT_br", "AR-eg", nil] as [String?] {
                    for key in ["title", "body"] {
                        let got = try db.query("""
                            select herald_payload_text(\(payload.pgJSONTextAnyOrder)::jsonb, \(key), \(lang)) as t
                            """).first?["t"].string
                        #expect(got == Self.payloadText(payload, key, lang), "\(key) \(lang ?? "null")")
                    }
                }
            }
        }
    }
}
