import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A digested type's rows collect, per person, into one open window (`notification_digests`), joined by
/// one insert-or-update under the unique index of open windows, whatever writes the rows: the windows'
/// rules, the refusals of a policy that cannot work, and the types and rows that are never digested.
@Suite struct DigestTests {
    /// A message from `user`'s inbox to them at `at`, with `key` as its dedupe key.
    static func item(_ db: PGConnection, _ user: UUID, at: Date, key: String = UUID().uuidString,
                     title: String = "Hello", kind: String = "message", severity: String? = nil,
                     digestKey: String? = nil) throws {
        var payload: [String: JSONValue] = ["title_en": .string(title), "title_ar": .string("مرحبا " + title),
                                            "body_en": "…"]
        if let digestKey { payload["digest_key"] = .string(digestKey) }
        try db.execute("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, severity, payload,
                                            scheduled_at, run_after, dedupe_key)
            values (\(user), \(user), 'push', \(kind), \(severity), \(JSONValue.object(payload).pgJSONText)::jsonb,
                    \(at), \(at), \(key))
            on conflict do nothing
            """)
    }

    /// The windows of `user`: id, count, end and whether still open, oldest first.
    static func windows(_ db: PGConnection, _ user: UUID) throws -> [(id: UUID, count: Int, closes: Date, open: Bool)] {
        try db.query("""
            select id, item_count, closes_at, closed_at is null as open from notification_digests
             where user_id = \(user) order by opened_at, id
            """).map { (try #require($0["id"].uuid), $0["item_count"].int ?? 0, try #require($0["closes_at"].date),
                        $0["open"].bool ?? false) }
    }

    /// A digest policy that cannot work is refused when the type is written, with a message naming
    /// what is wrong: a window of zero or less, an unknown window kind, a local time missing, a sliding
    /// cap below its window, max_items below 1 or above 100, a critical type, a template without en.
    @Test func aPolicyThatCannotWorkIsRefusedWhenTheTypeIsWritten() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            try db.execute("insert into notification_types (type, critical) values ('alarm', true)")
            let refused: [(SQL, String)] = [
                ("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'fixed', 0)",
                 "window_seconds must be from 1 to 604800"),
                ("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'fixed', -60)",
                 "window_seconds must be from 1 to 604800"),
                ("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'weekly', 60)",
                 "window_kind must be fixed, sliding or local_time"),
                ("insert into notification_type_digests (type, window_kind) values ('message', 'local_time')",
                 "a local_time window needs send_at"),
                ("insert into notification_type_digests (type, window_kind, window_seconds, max_wait_seconds) values ('message', 'sliding', 600, 60)",
                 "max_wait_seconds from window_seconds"),
                ("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 60, 0)",
                 "max_items must be from 1 to 100"),
                ("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 60, 2000000000)",
                 "max_items must be from 1 to 100"),
                ("insert into notification_type_digests (type, window_kind, window_seconds) values ('alarm', 'fixed', 60)",
                 "a critical type is never digested"),
                ("insert into notification_type_digests (type, window_kind, window_seconds, title_template) values ('message', 'fixed', 60, '{\"ar\": \"x\"}')",
                 "title_template must be an object of en"),
            ]
            for (sql, message) in refused {
                do {
                    try db.execute(sql)
                    Issue.record("accepted: \(sql)")
                } catch let error as PGError {
                    #expect(error.sqlState == "23514", "\(error)")
                    #expect("\(error)".contains(message), "\(error)")
                }
            }
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'fixed', 60)")
            SecurityTests.refused(db, "update notification_type_digests set window_seconds = 0", "a window of zero",
                                  state: "23514")
            #expect(try Fixtures(db: db).count("select count(*) from notification_type_digests") == 1)
        }
    }

    /// Rows of a digested type for one person join one open window, each once: a row written again
    /// with its dedupe key (a retried enqueue) adds nothing. The row itself is skipped `digested`, and
    /// the digest's own row is due at the window's end with the count and the first items.
    @Test func rowsJoinOneOpenWindowAndARetriedRowJoinsOnce() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Fixtures(db: db).profile(timezone: "Asia/Riyadh", locale: "ar")
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, shown_items) values ('message', 'fixed', 900, 2)")
            let t0 = instant("2026-03-10T09:00:00Z")
            for (n, key) in ["a", "b", "a", "c", "b"].enumerated() {
                try Self.item(db, user, at: t0.addingTimeInterval(Double(n) * 60), key: key, title: "item \(key)")
            }
            let windows = try Self.windows(db, user)
            #expect(windows.count == 1 && windows.first?.count == 3 && windows.first?.open == true)
            #expect(windows.first?.closes == t0.addingTimeInterval(900))
            let digest = try #require(db.query("select * from notification_queue where dedupe_key like 'digest:%'").first)
            #expect(digest["status"].string == "pending" && digest["run_after"].date == t0.addingTimeInterval(900))
            let payload = try JSONValue.parse(digest["payload"].string ?? "")
            #expect(payload["title_ar"]?.stringValue == "3 إشعارات جديدة" && payload["title_en"]?.stringValue == "3 new notifications")
            #expect(payload["body_en"]?.stringValue == "12:00 PM item a\n12:01 PM item b\nand 1 more", "times in Riyadh")
            #expect(payload["body_ar"]?.stringValue == "12:00 مرحبا item a\n12:01 مرحبا item b\nو1 غيرها")
            #expect(try Fixtures(db: db).count("""
                select count(*) from notification_queue where status = 'skipped' and skip_reason = 'digested'
                """) == 3)
            #expect(try Fixtures(db: db).count("""
                select count(*) from notification_events where event = 'skipped' and reason = 'digested'
                """) == 3)
        }
    }

    /// A statement's digested rows join their window, whatever else it or its transaction wrote: one
    /// statement of digested and undigested rows, then another in the same transaction, join once each,
    /// and the undigested rows are queued as before.
    @Test func aStatementsDigestedRowsJoinOnceBesideUndigestedRows() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile()
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'fixed', 900)")
            let t0 = instant("2026-03-10T09:00:00Z")
            try db.transaction { db in
                for kinds in [["message", "assignment", "message"], ["assignment", "message"]] {
                    try db.execute("""
                        insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload,
                                                        scheduled_at, run_after)
                        select \(user), \(user), 'push', k, '{"title_en": "T", "title_ar": "T", "body_en": "b"}'::jsonb,
                               \(t0), \(t0)
                          from unnest(\(kinds)::text[]) k
                        """)
                }
            }
            #expect(try Self.windows(db, user).first?.count == 3)
            #expect(try f.count("select count(*) from notification_events where event = 'skipped' and reason = 'digested'") == 3)
            #expect(try f.count("select count(*) from notification_queue where kind = 'assignment' and status = 'pending'") == 2)

            // The policy removed, the type is queued as before.
            try db.execute("delete from notification_type_digests where type = 'message'")
            try Self.item(db, user, at: t0)
            #expect(try f.count("select count(*) from notification_queue where kind = 'message' and status = 'pending' and dedupe_key not like 'digest:%'") == 1)
        }
    }

    /// Types without a digest are queued as before, and a critical row of a digested type (or any row
    /// of a type made critical) is never digested.
    @Test func undigestedTypesAndCriticalRowsAreQueuedAsBefore() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Fixtures(db: db).profile()
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'fixed', 900)")
            let t0 = instant("2026-03-10T09:00:00Z")
            try Self.item(db, user, at: t0, kind: "assignment")
            try Self.item(db, user, at: t0, severity: "critical")
            try db.execute("update notification_types set critical = true where type = 'message'")
            try Self.item(db, user, at: t0)
            #expect(try Fixtures(db: db).count("select count(*) from notification_queue where status = 'pending'") == 3)
            #expect(try Self.windows(db, user).isEmpty)
        }
    }

    /// A statement that writes no digested row calls no digest function: the entries' trigger joins only
    /// when the type check marked a row, so an undigested type's insert costs what it did before digests.
    /// A digested row joins once, and the next undigested insert joins no more.
    @Test func onlyAStatementWithADigestedRowCallsTheJoin() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Fixtures(db: db).profile()
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'fixed', 900)")
            let t0 = instant("2026-03-10T09:00:00Z")
            func joinCalls(_ kinds: [String]) throws -> Int {
                try tdb.functionCalls(["herald_digest_join"]) { tx in
                    for kind in kinds { try Self.item(tx, user, at: t0, kind: kind) }
                }
            }
            #expect(try joinCalls(["assignment", "assignment"]) == 0)
            #expect(try joinCalls(["message", "assignment"]) == 1)
            #expect(try joinCalls(["message", "message", "assignment"]) == 2)
            #expect(try Self.windows(db, user).map(\.count) == [3])
        }
    }

    /// A sliding window ends its length after the latest row, never later than its cap after the first;
    /// a window that has ended takes no more rows (the next opens), and one that reaches max_items is
    /// due at once and closed.
    @Test func aSlidingWindowMovesUpToItsCapAndAFullWindowIsDueAtOnce() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Fixtures(db: db).profile()
            try db.execute("""
                insert into notification_type_digests (type, window_kind, window_seconds, max_wait_seconds, max_items)
                values ('message', 'sliding', 300, 600, 4)
                """)
            let t0 = instant("2026-03-10T09:00:00Z")
            try Self.item(db, user, at: t0)
            try Self.item(db, user, at: t0.addingTimeInterval(240))
            #expect(try Self.windows(db, user).first?.closes == t0.addingTimeInterval(540))
            try Self.item(db, user, at: t0.addingTimeInterval(500))
            #expect(try Self.windows(db, user).first?.closes == t0.addingTimeInterval(600), "capped")
            try Self.item(db, user, at: t0.addingTimeInterval(700))
            var windows = try Self.windows(db, user)
            #expect(windows.map(\.count) == [3, 1] && windows.map(\.open) == [false, true])
            for n in 1...3 { try Self.item(db, user, at: t0.addingTimeInterval(700 + Double(n))) }
            windows = try Self.windows(db, user)
            #expect(windows.map(\.count) == [3, 4] && windows.map(\.open) == [false, false])
            #expect(windows.last?.closes == t0.addingTimeInterval(703))
            let due = try db.query("select run_after from notification_queue where dedupe_key = \("digest:\(windows[1].id.lowercased)")")
            #expect(due.first?["run_after"].date == t0.addingTimeInterval(703), "due at once")
        }
    }

    /// A window at a local time ends at that time in each person's zone: 19:00 in Tokyo and in New York
    /// for rows written at the same instant, and 19:00 on the day New York moves its clocks (23:00 UTC,
    /// not 00:00); a row after 19:00 waits for the next day's.
    @Test func aLocalTimeWindowEndsAtThatTimeInEachPersonsZoneAndOnADSTDay() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let tokyo = try f.profile(timezone: "Asia/Tokyo")
            let newYork = try f.profile(timezone: "America/New_York")
            try db.execute("insert into notification_type_digests (type, window_kind, send_at) values ('message', 'local_time', '19:00')")
            try Self.item(db, tokyo, at: instant("2026-03-08T06:00:00Z"))
            try Self.item(db, newYork, at: instant("2026-03-08T06:00:00Z"))
            #expect(try Self.windows(db, tokyo).first?.closes == instant("2026-03-08T10:00:00Z"))
            #expect(try Self.windows(db, newYork).first?.closes == instant("2026-03-08T23:00:00Z"), "EDT from 02:00")
            try Self.item(db, tokyo, at: instant("2026-03-08T10:30:00Z"))
            #expect(try Self.windows(db, tokyo).map(\.closes) == [instant("2026-03-08T10:00:00Z"), instant("2026-03-09T10:00:00Z")])
        }
    }

    /// A digest's window and its items go with the prune once its entry is gone, whichever way the
    /// entry went, and the window closed more than the entries' 30 days ago: nothing is left behind for
    /// a digest nobody can list, and a delete from inbox fires nothing (a type that is not digested
    /// pays nothing when its entries go). A window whose entry is still listed stays.
    @Test func aDigestsWindowGoesWithThePruneOnceItsEntryHasGone() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let (gone, kept) = (try f.profile(), try f.profile())
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds) values ('message', 'fixed', 60)")
            let t0 = instant("2026-03-10T09:00:00Z")
            for user in [gone, kept] {
                for n in 0..<3 { try Self.item(db, user, at: t0.addingTimeInterval(Double(n))) }
            }
            try db.execute("update notification_digests set closed_at = \(t0.addingTimeInterval(60))")
            #expect(try f.count("""
                select count(*)::int from pg_trigger
                 where tgrelid = 'inbox'::regclass and not tgisinternal and tgtype & 8 <> 0
                """) == 0, "no trigger fires on a delete from inbox")
            try db.execute("delete from inbox where user_id = \(gone)")
            let store = QueueStore(db: db, passId: "p")
            try store.pruneTerminal(retentionDays: 30, now: t0.addingTimeInterval(20 * 86_400))
            #expect(try Self.windows(db, gone).count == 1, "closed 20 days ago: kept")
            try store.pruneTerminal(retentionDays: 30, now: t0.addingTimeInterval(40 * 86_400))
            #expect(try Self.windows(db, gone).isEmpty)
            #expect(try Self.windows(db, kept).count == 1, "its entry is still listed")
            #expect(try f.count("select count(*)::int from notification_digest_items") == 3, "the items went with their window")
        }
    }

    /// A queue split into partitions by recipient (`herald migrate --queue-partitions`) digests as the
    /// plain one: partitioning keeps the digest trigger, and a full window's next row opens another.
    @Test func aPartitionedQueueDigestsAsThePlainOne() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            _ = try db.transaction { try $0.query("select herald_partition_queue(4)") }
            let user = try Fixtures(db: db).profile()
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 900, 3)")
            let t0 = instant("2026-03-10T09:00:00Z")
            for n in 0..<5 { try Self.item(db, user, at: t0.addingTimeInterval(Double(n))) }
            #expect(try Self.windows(db, user).map(\.count) == [3, 2])
            #expect(try Fixtures(db: db).count("select count(*) from notification_queue where dedupe_key like 'digest:%'") == 2)
        }
    }

    /// Rows written at the same time on eight connections meet in one window: one open window, one
    /// digest row, every row counted once.
    @Test func concurrentWritersOpenOneWindow() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let user = try Fixtures(db: db).profile()
            try db.execute("insert into notification_type_digests (type, window_kind, window_seconds, max_items) values ('message', 'fixed', 900, 100)")
            let t0 = instant("2026-03-10T09:00:00Z")
            let url = tdb.url
            inParallel(8) { n in
                guard let c = try? PGConnection(url, applicationName: "herald-tests") else { return }
                defer { c.close() }
                for i in 0..<5 { try? Self.item(c, user, at: t0.addingTimeInterval(Double(i)), key: "w\(n)-\(i)") }
            }
            #expect(try Self.windows(db, user).map(\.count) == [40])
            #expect(try Fixtures(db: db).count("select count(*) from notification_queue where dedupe_key like 'digest:%'") == 1)
            #expect(try Fixtures(db: db).count("select count(*) from notification_digest_items") == 40)
        }
    }
}
