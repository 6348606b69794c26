import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// The app's side of the contract (sql/013_app_contract.sql): seed 003's notification list and
/// push-token shapes, seed 001's actions and history, and seed 003's error codes as a PostgREST client
/// reads them (SQLSTATE PTxyz → HTTP xyz, the code in `message`). Called as PostgREST calls them: the
/// caller's id in request.jwt.claim.sub, and, where roles matter, as `authenticated`.
@Suite struct AppContractTests {
    static func asUser(_ db: PGConnection, _ id: UUID?) throws {
        try db.execute("select set_config('request.jwt.claim.sub', \(id?.uuidString.lowercased() ?? ""), false)")
    }

    static func json(_ db: PGConnection, _ sql: SQL) throws -> JSONValue {
        let text = try db.query(sql).first?[0].string ?? "null"
        return try JSONValue.parse(text)
    }

    static func array(_ v: JSONValue?) -> [JSONValue] {
        if case .array(let a)? = v { return a }
        return []
    }

    /// Expects seed 003's error `code`, raised as PostgREST reads it: SQLSTATE PTxyz, the code as the
    /// message, an explanation in DETAIL.
    static func fails(_ db: PGConnection, _ sql: SQL, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let state = ["invalid_token": "PT400", "unauthorized": "PT401", "user_not_found": "PT404",
                     "validation_error": "PT422"][code]
        do {
            _ = try db.query(sql)
            Issue.record("expected \(code), but it succeeded", sourceLocation: sourceLocation)
        } catch let error as PGError {
            #expect(error.sqlState == state, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.detail?.isEmpty == false, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    static let recordFields: Set<String> = [
        "id", "user_id", "notification_type", "priority", "title_en", "title_ar", "body_en", "body_ar",
        "deep_link", "image_url", "is_read", "read_at", "created_at",
    ]
    static let historyFields: Set<String> = [
        "id", "user_id", "notification_type", "title", "body", "scheduled_time", "delivered_time",
        "actioned_time", "action", "related_entity_id", "related_entity_type", "created_at",
    ]

    // MARK: - Notification list (seed 003 §4)

    @Test func theListPagesCountsAndFiltersTheCallersOwnRows() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let (a, b, stranger) = (try f.profile(), try f.profile(), try f.profile())
            // 300 for A: 150 reminders, 100 prompts, 50 system, one second apart; every 5th (60) read.
            try db.execute("""
                insert into inbox (user_id, type, priority, title, body, title_en, title_ar, body_en, body_ar,
                                   is_read, read_at, created_at)
                select \(a), case when g % 6 < 3 then 'reminder' when g % 6 < 5 then 'prompt' else 'system' end,
                       'normal', 'T' || g, 'B' || g, 'T' || g, 'ع' || g, 'B' || g, 'ب' || g,
                       g % 5 = 0, case when g % 5 = 0 then now() end, now() - make_interval(secs => g)
                  from generate_series(1, 300) g
                """)
            try db.execute("""
                insert into inbox (user_id, type, title, body) select \(b), 'prompt', 'b', 'b' from generate_series(1, 5)
                """)

            try Self.asUser(db, a)
            let first = try Self.json(db, "select get_notifications()")
            #expect(first["limit"]?.intValue == 20)
            #expect(first["offset"]?.intValue == 0)
            #expect(first["total_count"]?.intValue == 300)
            #expect(first["unread_count"]?.intValue == 240)
            let records = Self.array(first["notifications"])
            #expect(records.count == 20)
            #expect(records.first?["title_en"]?.stringValue == "T1", "newest first")
            #expect(records.first?["title_ar"]?.stringValue == "ع1")
            #expect(Set(records.first?.objectValue?.keys.map { $0 } ?? []) == Self.recordFields)
            let newest = try db.query("select herald_ms(max(created_at)) as ms from inbox where user_id = \(a)").first?["ms"].int
            #expect(records.first?["created_at"]?.intValue == newest, "Unix milliseconds")
            #expect(records.allSatisfy { $0["user_id"]?.stringValue == a.uuidString.lowercased() })

            // Paging through all of them, 100 at a time: every row once, newest first.
            var seen: [String] = []
            var created: [Int] = []
            for offset in stride(from: 0, through: 300, by: 100) {
                let page = try Self.json(db, "select get_notifications(100, \(offset))")
                #expect(page["total_count"]?.intValue == 300)
                for r in Self.array(page["notifications"]) {
                    seen.append(r["id"]?.stringValue ?? "")
                    created.append(r["created_at"]?.intValue ?? 0)
                }
            }
            #expect(seen.count == 300)
            #expect(Set(seen).count == 300)
            #expect(created == created.sorted(by: >))

            // Filters: type (comma-separated, spaces allowed), unread_only, both; named as PostgREST names them.
            let typed = try Self.json(db, #"select get_notifications(type => 'reminder, prompt', "limit" => 100)"#)
            #expect(typed["total_count"]?.intValue == 250)
            #expect(typed["unread_count"]?.intValue == 240, "the badge counts every unread notification")
            #expect(Self.array(typed["notifications"]).allSatisfy { ["reminder", "prompt"].contains($0["notification_type"]?.stringValue ?? "") })
            let unread = try Self.json(db, #"select get_notifications("limit" => 50, unread_only => true)"#)
            #expect(unread["total_count"]?.intValue == 240)
            #expect(Self.array(unread["notifications"]).count == 50)
            #expect(Self.array(unread["notifications"]).allSatisfy { $0["is_read"]?.boolValue == false })
            let both = try Self.json(db, #"select get_notifications("limit" => 100, "offset" => 0, type => 'system', unread_only => true)"#)
            #expect(both["total_count"]?.intValue == 40)
            let read = try Self.json(db, "select get_notifications(100, 0, 'system')")
            #expect(Self.array(read["notifications"]).contains { $0["read_at"]?.intValue ?? 0 > 0 && $0["is_read"]?.boolValue == true })
            #expect(try Self.json(db, "select get_notifications(20, 1000)")["notifications"] == JSONValue.array([]))

            // Bad arguments.
            for sql: SQL in ["select get_notifications(0)", "select get_notifications(101)", "select get_notifications(null)",
                             "select get_notifications(20, -1)", "select get_notifications(20, 0, ' , ')"] {
                Self.fails(db, sql, "validation_error")
            }

            // B sees B's five; a stranger sees nothing; no caller is unauthorized.
            try Self.asUser(db, b)
            let theirs = try Self.json(db, "select get_notifications(100)")
            #expect(theirs["total_count"]?.intValue == 5)
            #expect(Self.array(theirs["notifications"]).allSatisfy { $0["user_id"]?.stringValue == b.uuidString.lowercased() })
            try Self.asUser(db, stranger)
            let none = try Self.json(db, "select get_notifications()")
            #expect(none["total_count"]?.intValue == 0 && none["unread_count"]?.intValue == 0)
            #expect(none["notifications"] == JSONValue.array([]))
            try Self.asUser(db, nil)
            Self.fails(db, "select get_notifications()", "unauthorized")
        }
    }

    // MARK: - A real pass: bilingual inbox, history across channels, actions

    @Test func aPassFillsTheBilingualInboxAndTheHistoryOnEveryChannel() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile(locale: "ar", email: "a@example.com", emailOn: true)
            let b = try f.profile()
            try f.token(a, provider: "expo")
            let now = Date()
            let prompt = try f.enqueue(to: a, kind: "prompt", payload: "{}", at: now)
            let reminder = try f.enqueue(to: a, kind: "reminder", payload: """
                {"title":"Take your dose","title_ar":"تناول جرعتك","body":"Step 2, 10:00","body_ar":"الخطوة 2، 10:00",
                 "image_url":"https://example.com/pill.png"}
                """, at: now)
            let pushed = try #require(try db.query("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at,
                                                run_after, related_entity_type, related_entity_id)
                values (\(a), \(a), 'push', 'reminder',
                        '{"title":"Dose soon","title_ar":"جرعة قريبًا","body":"in 30 minutes"}', \(now), \(now),
                        'test_step', 'step-2')
                returning id
                """).first?["id"].uuid)
            let mailed = try f.enqueue(to: a, channel: "email", kind: "system", at: now)
            let hooked = try f.enqueue(to: a, channel: "webhook", kind: "reminder", at: now)
            let skipped = try f.enqueue(to: a, channel: "sms", kind: "system", at: now)  // SMS off: skipped, no history
            // Push, email and SMS on the log adapter; the webhook over real HTTP to a loopback receiver.
            let server = try FakeHTTPServer { _ in FakeResponse(status: 204) }
            defer { server.shutdown() }
            let settings = ["HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_EMAIL": "log", "HERALD_CHANNEL_SMS": "log",
                            "HERALD_LOG_ADAPTER_FILE": "/dev/null"].merging(WebhookDeliveryTests.settings(server)) { a, _ in a }
            // Several rows of one type within the hour: spacing would defer all but one; this test is about
            // what a sent row leaves behind, so spacing is off here (RateLimiter has its own tests).
            try tdb.withoutSpacing()
            let (summary, _) = Worker(url: tdb.url, settings: settings).run(now: now)
            #expect(summary.sent == 5)
            #expect(server.requests.count == 1)
            #expect(try f.row(skipped)["status"].string == "skipped")

            // The entries: the recipient's language in title/body, both languages beside it; the id is the
            // queue row's. The prompt's text is its template's, filled when it was sent.
            let promptCopy = try db.query("select * from inbox where queue_id = \(prompt)").first
            #expect(promptCopy?["id"].uuid == prompt)
            #expect(promptCopy?["title_en"].string == "Meditation Check-in")
            #expect(promptCopy?["title_ar"].string == "وقفة تأمل")
            #expect(promptCopy?["body_en"].string == "In the View?")
            #expect(promptCopy?["title"].string == promptCopy?["title_ar"].string, "A reads Arabic")
            let reminderCopy = try db.query("select * from inbox where queue_id = \(reminder)").first
            #expect(reminderCopy?["title_en"].string == "Take your dose")
            #expect(reminderCopy?["title_ar"].string == "تناول جرعتك")
            #expect(reminderCopy?["body_en"].string == "Step 2, 10:00")
            #expect(reminderCopy?["body_ar"].string == "الخطوة 2، 10:00")
            #expect(reminderCopy?["image_url"].string == "https://example.com/pill.png")

            try Self.asUser(db, a)
            // The list is every notification sent, whatever carried it: five, not the skipped one.
            let list = try Self.json(db, "select get_notifications()")
            #expect(list["total_count"]?.intValue == 5)
            #expect(list["unread_count"]?.intValue == 5)
            let listed = Self.array(list["notifications"]).first { $0["id"]?.stringValue == reminder.uuidString.lowercased() }
            #expect(listed?["title_ar"]?.stringValue == "تناول جرعتك")
            #expect(listed?["image_url"]?.stringValue == "https://example.com/pill.png")
            #expect(listed?["notification_type"]?.stringValue == "reminder")

            // History: the five sent rows on four channels, not the skipped one.
            let history = Self.array(try Self.json(db, "select get_notification_history()"))
            #expect(history.count == 5)
            #expect(Set(history.compactMap { $0["id"]?.stringValue }) ==
                    Set([prompt, reminder, pushed, mailed, hooked].map { $0.uuidString.lowercased() }))
            #expect(Set(history.compactMap { $0["channel"]?.stringValue }) == ["in_app", "push", "email", "webhook"])
            for entry in history {
                #expect(Self.historyFields.isSubset(of: Set(entry.objectValue?.keys.map { $0 } ?? [])))
                #expect(entry["delivered_time"]?.intValue ?? 0 > 0)
                #expect(entry["scheduled_time"]?.intValue ?? 0 > 0)
                #expect(entry["title"]?.stringValue?.isEmpty == false)
                #expect(entry["action"] == JSONValue.null && entry["actioned_time"] == JSONValue.null)
            }
            let push = history.first { $0["id"]?.stringValue == pushed.uuidString.lowercased() }
            #expect(push?["related_entity_type"]?.stringValue == "test_step")
            #expect(push?["related_entity_id"]?.stringValue == "step-2")
            #expect(push?["title"]?.stringValue == "جرعة قريبًا", "what A was sent, in A's language")
            #expect(push?["notification_type"]?.stringValue == "reminder")

            // Actions: on the push (by its queue id, as the payload names it) and on an in-app copy (by its id).
            let taken = try Self.json(db, "select record_notification_action(\(pushed), 'dose_marked_taken')")
            #expect(taken["action"]?.stringValue == "dose_marked_taken")
            #expect(taken["actioned_time"]?.intValue ?? 0 > 0)
            let opened = try Self.json(db, "select record_notification_action(\(reminder), 'opened')")
            #expect(opened["marked_read"]?.boolValue == true)
            #expect(try db.query("select is_read, read_at is not null as r from inbox where id = \(reminder)").first?["is_read"].bool == true)
            #expect(try Self.json(db, "select get_notifications()")["unread_count"]?.intValue == 4)
            _ = try Self.json(db, "select record_notification_action(\(mailed), 'snoozed')")
            _ = try Self.json(db, "select record_notification_action(\(mailed), 'dismissed')")  // the latest wins
            let after = Self.array(try Self.json(db, "select get_notification_history(7)"))
            let actions = Dictionary(uniqueKeysWithValues: after.map {
                ($0["id"]?.stringValue ?? "", $0["action"]?.stringValue ?? "-")
            })
            #expect(actions == [pushed.uuidString.lowercased(): "dose_marked_taken", reminder.uuidString.lowercased(): "opened",
                                mailed.uuidString.lowercased(): "dismissed", prompt.uuidString.lowercased(): "-",
                                hooked.uuidString.lowercased(): "-"])
            #expect(try db.query("select is_read from inbox where id = \(prompt)").first?["is_read"].bool == false,
                    "another notification's action leaves the copy unread")

            // Bad arguments.
            Self.fails(db, "select record_notification_action(\(prompt), 'liked')", "validation_error")
            Self.fails(db, "select record_notification_action(\(prompt), null)", "validation_error")
            Self.fails(db, "select record_notification_action(null, 'opened')", "validation_error")
            Self.fails(db, "select record_notification_action(\(UUID()), 'opened')", "validation_error")
            for days in [0, 31, -1] { Self.fails(db, "select get_notification_history(\(days))", "validation_error") }

            // Another user: A's notifications are not theirs to act on, and their history is empty.
            try Self.asUser(db, b)
            Self.fails(db, "select record_notification_action(\(prompt), 'opened')", "validation_error")
            Self.fails(db, "select record_notification_action(\(pushed), 'dismissed')", "validation_error")
            #expect(try Self.json(db, "select get_notification_history()") == JSONValue.array([]))
            try Self.asUser(db, nil)
            Self.fails(db, "select get_notification_history()", "unauthorized")
            Self.fails(db, "select record_notification_action(\(prompt), 'opened')", "unauthorized")
            try Self.asUser(db, a)
            #expect(try db.query("select is_read from inbox where id = \(prompt)").first?["is_read"].bool == false)
            #expect(Self.array(try Self.json(db, "select get_notification_history()")).first {
                $0["id"]?.stringValue == pushed.uuidString.lowercased() }?["action"]?.stringValue == "dose_marked_taken")
        }
    }

    /// An in-app copy written before 013 (its own random id, no history row) can still be acted on.
    @Test func anOlderInboxRowCanBeOpened() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let a = try Fixtures(db: db).profile()
            let id = try db.query("insert into inbox (user_id, type, title, body) values (\(a), 'system', 't', 'b') returning id")
                .first!["id"].uuid!
            try Self.asUser(db, a)
            #expect(try Self.json(db, "select record_notification_action(\(id), 'opened')")["marked_read"]?.boolValue == true)
            let history = Self.array(try Self.json(db, "select get_notification_history()"))
            #expect(history.count == 1)
            #expect(history.first?["action"]?.stringValue == "opened")
            #expect(history.first?["channel"]?.stringValue == "in_app")
        }
    }

    // MARK: - As PostgREST runs them: the `authenticated` role on a Supabase-like database

    @Test func theRPCsRunAsAuthenticatedAndNotAsAnon() throws {
        try SecurityTests.supabase { tdb, db in
            let (a, b) = (UUID(), UUID())
            for user in [a, b] { try db.execute("insert into user_profiles (user_id) values (\(user))") }
            let queue = try db.query("""
                insert into notification_queue (recipient_user_id, channel, kind, status, sent_at, payload)
                values (\(a), 'in_app', 'prompt', 'sent', now(),
                        '{"title":"t","body":"b","title_en":"T","title_ar":"ت","body_en":"B","body_ar":"ب"}')
                returning id
                """).first!["id"].uuid!

            try SecurityTests.act(db, as: "authenticated", a)
            #expect(try Self.json(db, "select get_notifications()")["total_count"]?.intValue == 1)
            #expect(try Self.json(db, "select record_notification_action(\(queue), 'opened')")["marked_read"]?.boolValue == true)
            #expect(Self.array(try Self.json(db, "select get_notification_history()")).count == 1)
            #expect(try Self.json(db, "select register_device_token(push_token => 'ExponentPushToken[a1]', device_type => 'ios')")["status"]?.stringValue == "active")
            #expect(try Self.json(db, "select unregister_device_token(push_token => 'ExponentPushToken[a1]')")["status"]?.stringValue == "unregistered")
            #expect(try Self.json(db, "select mark_notifications_read(\([queue])::uuid[])")["read_at"]?.intValue ?? 0 > 0)
            Self.fails(db, "select get_notifications(500)", "validation_error")
            // The former history table is not readable; the entries' columns are, for the caller's rows.
            SecurityTests.refused(db, "select * from notification_history", "history as authenticated")
            #expect(try db.query("select title_ar from inbox").map { $0["title_ar"].string } == ["ت"])
            SecurityTests.refused(db, "select herald_ms(now())", "herald_ms", message: "permission denied")
            SecurityTests.refused(db, "select herald_raise('validation_error')", "herald_raise", message: "permission denied")

            try SecurityTests.act(db, as: "authenticated", b)
            #expect(try Self.json(db, "select get_notifications()")["total_count"]?.intValue == 0)
            Self.fails(db, "select record_notification_action(\(queue), 'dismissed')", "validation_error")

            try SecurityTests.act(db, as: "anon", a)
            for sql: SQL in ["select get_notifications()", "select get_notification_history()",
                             "select record_notification_action(\(queue), 'opened')",
                             "select register_device_token(push_token => 'ExponentPushToken[a1]', device_type => 'ios')",
                             "select unregister_device_token(push_token => 'ExponentPushToken[a1]')"] {
                SecurityTests.refused(db, sql, "anon: \(sql)", message: "permission denied for function")
            }
            try SecurityTests.owner(db)
            #expect(try db.query("select action from inbox").first?["action"].string == "opened")
        }
    }
}
