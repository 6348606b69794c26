import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The server-side send, `send_notification(request jsonb)` (sql/036_send_notification.sql), against the
/// real PostgreSQL prepared as Supabase prepares it: the request checked whole before anything is
/// written, each refusal with the push API contract's code, the service role alone allowed to call it,
/// and one push row per accepted request.
@Suite struct SendNotificationTests {
    /// The push API contract's example request, to `user`.
    static func request(_ user: UUID, _ changes: [String: JSONValue?] = [:]) -> JSONValue {
        var r: [String: JSONValue] = [
            "user_id": .string(user.uuidString.lowercased()), "notification_type": "assignment", "priority": "high",
            "title_en": "New Assignment", "title_ar": "تكليف جديد",
            "body_en": "You have been assigned to Germany dossier as Country Analyst",
            "body_ar": "تم تعيينك في ملف ألمانيا كمحلل قطري",
            "deep_link": "intldossier://dossiers/660e8400-e29b-41d4-a716-446655440001",
            "image_url": "https://example.com/flags/germany.png",
            "data": ["dossier_id": "660e8400-e29b-41d4-a716-446655440001", "dossier_type": "country",
                     "assignment_role": "country_analyst"],
            "badge_increment": 1, "sound": "default",
        ]
        for (key, value) in changes { r[key] = value }
        return .object(r)
    }

    /// A person with a profile and one active Expo token (locale `locale`).
    @discardableResult
    static func person(_ db: PGConnection, locale: String = "en", token: String? = nil) throws -> (UUID, String) {
        let user = UUID()
        let t = token ?? "ExponentPushToken[\(UUID().uuidString.prefix(22))]"
        try db.execute("insert into user_profiles (user_id, locale, notify_push) values (\(user), 'en', true)")
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider, locale) values (\(user), \(t), 'ios', 'expo', \(locale))
            """)
        return (user, t)
    }

    /// The answer of `send_notification(request)` on `db` as it is (the owner, or the role it acts as).
    static func send(_ db: PGConnection, _ request: JSONValue) throws -> JSONValue {
        try JSONValue.parse(try db.query("select send_notification(\(request.pgJSONText)::jsonb)::text as r").first?["r"].string ?? "null")
    }

    /// The error `send_notification` raises for `request`, or nil when it succeeds.
    static func refusal(_ db: PGConnection, _ request: JSONValue) -> PGError? {
        do {
            _ = try send(db, request)
            return nil
        } catch let error as PGError {
            return error
        } catch {
            return nil
        }
    }

    static func count(_ db: PGConnection, _ table: String) throws -> Int {
        try db.query("select count(*)::int as n from \(identifier: table)").first?["n"].int ?? -1
    }

    /// Every refusal: its SQLSTATE, the contract's code as the message, a DETAIL naming what is wrong,
    /// and nothing enqueued nor counted towards the rate limit.
    @Test func everyRefusalNamesItsCodeAndEnqueuesNothing() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, _) = try Self.person(db)
            let noProfile = UUID()
            try db.execute("insert into device_tokens (user_id, device_token, provider) values (\(noProfile), 'ExponentPushToken[np]', 'expo')")
            let noToken = UUID(), unregistered = UUID(), dead = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(noToken)), (\(unregistered)), (\(dead))")
            try db.execute("""
                insert into device_tokens (user_id, device_token, provider, is_active, deactivated_at, deactivated_reason) values
                  (\(unregistered), 'ExponentPushToken[un]', 'expo', false, now(), 'unregistered'),
                  (\(dead), 'ExponentPushToken[dd]', 'expo', false, now(), 'expo DeviceNotRegistered: gone')
                """)
            let long = { (n: Int) in String(repeating: "x", count: n) }
            let bigData = JSONValue.object(Dictionary(uniqueKeysWithValues: (0..<20).map { ("k\($0)", JSONValue.string(long(100))) }))
            let nearData = JSONValue.object(Dictionary(uniqueKeysWithValues: (0..<19).map { ("k\($0)", JSONValue.string(long(90))) }))
            let invalid: [(String, [String: JSONValue?])] = [
                ("title_ar is required", ["title_ar": nil]),
                ("body_en is required", ["body_en": "  "]),
                ("title_en must be a string, not a number", ["title_en": 5]),
                ("user_id must be a UUID", ["user_id": "user-uuid-456"]),
                ("unknown field(s): badge", ["badge": 1]),
                ("lowercase slug", ["notification_type": "Assignment"]),
                ("\"meeting\" is not a notification type", ["notification_type": "meeting"]),
                ("priority must be", ["priority": "urgent"]),
                ("title_en must be at most 256", ["title_en": .string(long(257))]),
                ("body_ar must be at most 2048", ["body_ar": .string(long(2049))]),
                ("data must be a JSON object", ["data": "x"]),
                ("data must be a JSON object", ["data": [1, 2]]),
                ("herald's or the providers' own: queue_id", ["data": ["queue_id": "x"]]),
                ("google.c.a", ["data": ["google.c.a": "x"]]),
                ("at most 2048", ["data": bigData]),
                ("at most 3072", ["data": nearData, "image_url": .string("https://example.com/" + long(380))]),
                ("image_url must be an https URL", ["image_url": "http://example.com/a.png"]),
                ("image_url must be an https URL", ["image_url": "https://example.com/a b.png"]),
                ("image_url must be an https URL", ["image_url": .string("https://example.com/" + long(500))]),
                ("deep_link must be scheme", ["deep_link": "javascript:alert(1)"]),
                ("deep_link must be scheme", ["deep_link": "intldossier://a b"]),
                ("deep_link must be scheme", ["deep_link": .string("intldossier://" + long(500))]),
                ("badge_increment", ["badge_increment": -1]),
                ("badge_increment", ["badge_increment": 101]),
                ("badge_increment", ["badge_increment": 1.5]),
                ("badge_increment", ["badge_increment": "2"]),
                ("sound must be", ["sound": "loud"]),
                ("sound must be", ["sound": 5]),
                ("scheduled_at must be a number", ["scheduled_at": "tomorrow"]),
                ("from a day ago to 366 days ahead", ["scheduled_at": 0]),
                ("from a day ago to 366 days ahead", ["scheduled_at": 1e20]),
            ]
            var cases: [(what: String, request: JSONValue, state: String, code: String, detail: String)] = invalid.map {
                ($0.0, Self.request(user, $0.1), "PT400", "invalid_request", $0.0)
            }
            cases += [
                ("not an object", .array([]), "PT400", "invalid_request", "must be a JSON object"),
                ("no profile", Self.request(noProfile), "PT404", "user_not_found", "no user_profiles row"),
                ("no token", Self.request(noToken), "PT404", "user_not_found", "no registered device tokens"),
                ("only an unregistered token", Self.request(unregistered), "PT404", "user_not_found", "no registered device tokens"),
                ("a token the provider reported dead", Self.request(dead), "PT422", "invalid_token", "invalid or expired"),
            ]
            try SecurityTests.act(db, as: "service_role", nil, claimsJSON: true)
            for c in cases {
                let error = Self.refusal(db, c.request)
                #expect(error?.sqlState == c.state, "\(c.what): \(String(describing: error))")
                #expect(error?.message == c.code, "\(c.what): \(String(describing: error))")
                #expect(error?.detail?.contains(c.detail) == true, "\(c.what): \(error?.detail ?? "no detail")")
            }
            try SecurityTests.owner(db)
            #expect(try Self.count(db, "notification_queue") == 0)
            #expect(try Self.count(db, "notification_send_windows") == 0)
            // The same request, right, is accepted.
            #expect(try Self.send(db, Self.request(user))["status"]?.stringValue == "scheduled")
        }
    }

    /// An accepted request is one push row of its type and priority, its payload holding what the device
    /// gets; the answer has the contract's fields.
    @Test func anAcceptedRequestIsOnePushRowAndTheContractsAnswer() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, token) = try Self.person(db, locale: "ar")
            try SecurityTests.act(db, as: "service_role", nil, claimsJSON: true)
            let answer = try Self.send(db, Self.request(user, ["badge_increment": 3, "sound": .null]))
            let later = Date().addingTimeInterval(3600)
            let low = try Self.send(db, Self.request(user, ["priority": "low", "scheduled_at": .number((later.timeIntervalSince1970 * 1000).rounded())]))
            try SecurityTests.owner(db)

            let id = try #require(answer["notification_id"]?.stringValue.flatMap(UUID.init(uuidString:)))
            #expect(answer["user_id"]?.stringValue == user.uuidString.lowercased())
            #expect(answer["push_token"]?.stringValue == token)
            #expect(answer["status"]?.stringValue == "scheduled")
            #expect(answer["sent_at"] == .null)
            #expect(answer["scheduled_at"]?.doubleValue ?? 0 > 1_600_000_000_000)
            let row = try #require(try db.query("""
                select channel, kind, priority, payload::text as payload, recipient_user_id, status from notification_queue where id = \(id)
                """).first)
            #expect(row["channel"].string == "push" && row["kind"].string == "assignment" && row["priority"].string == "high")
            #expect(row["recipient_user_id"].uuid == user && row["status"].string == "pending")
            let payload = try JSONValue.parse(row["payload"].string ?? "{}")
            #expect(payload["title_ar"]?.stringValue == "تكليف جديد" && payload["body_en"]?.stringValue?.hasPrefix("You have") == true)
            #expect(payload["data"]?["dossier_type"]?.stringValue == "country")
            #expect(payload["deep_link"]?.stringValue == "intldossier://dossiers/660e8400-e29b-41d4-a716-446655440001")
            #expect(payload["image_url"]?.stringValue == "https://example.com/flags/germany.png")
            #expect(payload["badge_increment"]?.intValue == 3)
            #expect(payload["sound"] == .null, "null: no sound")
            #expect(payload["silent"] == nil)

            // Low priority is silent; a later time is the row's time.
            let lowId = try #require(low["notification_id"]?.stringValue.flatMap(UUID.init(uuidString:)))
            let lowRow = try #require(try db.query("""
                select payload ->> 'silent' as silent, payload ->> 'sound' as sound, extract(epoch from run_after)::float8 as run_after,
                       extract(epoch from scheduled_at)::float8 as scheduled_at from notification_queue where id = \(lowId)
                """).first)
            #expect(lowRow["silent"].string == "true" && lowRow["sound"].string == "default")
            #expect(abs((lowRow["run_after"].double ?? 0) - later.timeIntervalSince1970) < 0.01)
            #expect(abs((lowRow["scheduled_at"].double ?? 0) - later.timeIntervalSince1970) < 0.01)
            #expect(low["scheduled_at"]?.doubleValue == (later.timeIntervalSince1970 * 1000).rounded())
        }
    }

    /// Only the service role (and herald, the owner) may send: `authenticated` and `anon` hold no
    /// privilege on the function; a signed-in user who reaches it through another SECURITY DEFINER
    /// function is refused by its own check (`forbidden`). Nothing is enqueued for them.
    @Test func onlyTheServiceRoleMaySend() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, _) = try Self.person(db)
            let request = Self.request(user)
            try db.execute("""
                create function app_send_wrapper(request jsonb) returns jsonb language sql security definer
                  set search_path = public as $$ select send_notification(request) $$
                """)
            try db.execute("revoke all on function app_send_wrapper(jsonb) from public")
            try db.execute("grant execute on function app_send_wrapper(jsonb) to authenticated")
            for role in ["authenticated", "anon"] {
                for claimsJSON in [true, false] {
                    try SecurityTests.act(db, as: role, user, claimsJSON: claimsJSON)
                    SecurityTests.refused(db, "select send_notification(\(request.pgJSONText)::jsonb)", "\(role) sends",
                                          message: "permission denied for function")
                    SecurityTests.refused(db, "select send_notification_status(\(UUID()))", "\(role) reads a send",
                                          message: "permission denied for function")
                }
            }
            for claimsJSON in [true, false] {
                try SecurityTests.act(db, as: "authenticated", user, claimsJSON: claimsJSON)
                SecurityTests.refused(db, "select app_send_wrapper(\(request.pgJSONText)::jsonb)", "through a wrapper",
                                      state: "PT403", message: "forbidden")
            }
            try SecurityTests.owner(db)
            #expect(try Self.count(db, "notification_queue") == 0)

            try SecurityTests.act(db, as: "service_role", nil, claimsJSON: true)
            let sent = try Self.send(db, request)
            let id = try #require(sent["notification_id"]?.stringValue)
            let status = try db.query("select send_notification_status(\(id)::uuid)::text as s").first?["s"].string ?? ""
            #expect(try JSONValue.parse(status)["status"]?.stringValue == "scheduled")
            try SecurityTests.owner(db)
            #expect(try Self.count(db, "notification_queue") == 1)
        }
    }

    /// 100 sends a minute to one recipient: the 101st is refused with `retry_after` (seconds until the
    /// oldest of the minute leaves it) as JSON in DETAIL, and is not enqueued; another recipient is not
    /// held back.
    @Test func theHundredAndFirstSendInAMinuteIsRefusedWithRetryAfter() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, _) = try Self.person(db)
            let (other, _) = try Self.person(db)
            let started = Date()
            for _ in 0..<100 { _ = try Self.send(db, Self.request(user)) }
            let error = try #require(Self.refusal(db, Self.request(user)))
            let elapsed = Date().timeIntervalSince(started)
            #expect(error.sqlState == "PT429" && error.message == "rate_limit_exceeded")
            let detail = try JSONValue.parse(error.detail ?? "")
            let wait = try #require(detail["retry_after"]?.intValue)
            // The oldest send leaves the minute 60 s after it was made, `elapsed` ago at most.
            #expect(wait >= 1 && wait <= 60 && Double(wait) >= 60 - elapsed - 1, "retry_after \(wait) after \(elapsed) s")
            #expect(detail["message"]?.stringValue?.contains("Retry after \(wait) seconds") == true)
            #expect(try db.query("select count(*)::int as n from notification_queue where recipient_user_id = \(user)").first?["n"].int == 100)
            #expect(try Self.send(db, Self.request(other))["status"]?.stringValue == "scheduled")
        }
    }

    /// Exact under concurrency: 120 sends to one recipient from six connections at once, and exactly 100
    /// are accepted (each takes the recipient's advisory lock until its transaction ends).
    @Test func theLimitHoldsExactlyUnderConcurrentSends() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, _) = try Self.person(db)
            let url = tdb.url
            let tally = Tally()
            let started = Date()
            inParallel(6) { _ in
                do {
                    let conn = try PGConnection(url, applicationName: "herald-tests")
                    defer { conn.close() }
                    try SecurityTests.act(conn, as: "service_role", nil, claimsJSON: true)
                    for _ in 0..<20 {
                        switch Self.refusal(conn, Self.request(user)) {
                        case nil: tally.add("sent")
                        case let e? where e.sqlState == "PT429": tally.add("limited")
                        case let e?: tally.add("error \(e)")
                        }
                    }
                } catch {
                    tally.add("error \(error)")
                }
            }
            #expect(Date().timeIntervalSince(started) < 60, "the sends took longer than the window: the count below cannot hold")
            #expect(tally.counts == ["sent": 100, "limited": 20])
            #expect(try Self.count(db, "notification_queue") == 100)
        }
    }
}

/// Outcomes counted from several threads.
final class Tally: @unchecked Sendable {
    private var byName: [String: Int] = [:]
    private let lock = NSLock()
    func add(_ name: String) { lock.withLock { byName[name, default: 0] += 1 } }
    var counts: [String: Int] { lock.withLock { byName } }
}
