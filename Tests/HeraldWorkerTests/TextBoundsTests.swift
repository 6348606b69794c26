import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// An app's text has a length limit wherever it is stored, on a database set up like Supabase: the
/// functions the app calls and the profile's own columns refuse a longer value with `validation_error`
/// naming the field, never repeating the value back, and a CHECK holds every other writer.
@Suite struct TextBoundsTests {
    /// A megabyte that still reads as a language tag: `en-abcdefgh-abcdefgh-…`.
    static let longTag = "en" + String(repeating: "-abcdefgh", count: 110_000)
    static let megabyte = String(repeating: "x", count: 1_000_000)

    /// Runs `sql` and returns the refusal's code and detail; records an issue when it succeeds.
    static func refusal(_ db: PGConnection, _ sql: SQL, _ what: String,
                        sourceLocation: SourceLocation = #_sourceLocation) -> (state: String?, message: String, detail: String) {
        do {
            let rows = try db.query(sql)
            let echoed = rows.first?[0].string?.utf8.count ?? 0
            Issue.record("\(what): accepted (answer of \(echoed) bytes)", sourceLocation: sourceLocation)
        } catch let error as PGError {
            return (error.sqlState, error.message, error.detail ?? "")
        } catch {
            Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
        }
        return (nil, "", "")
    }

    /// The device's locale (at most 35 characters, BCP 47's longest tag), name (200), app and OS versions
    /// (100 each) are refused over their limit at registration, naming the field, with an answer of a
    /// few hundred bytes; within it they are stored.
    @Test func registrationRefusesAnOverLongLocaleNameOrVersionAndEchoesNothing() throws {
        try SecurityTests.supabase { tdb, db in
            let user = UUID()
            try SecurityTests.act(db, as: "authenticated", user)
            let token = "ExponentPushToken[bounded-device]"
            for (field, sql) in [
                ("locale", "select register_device_token(push_token => \(token), device_type => 'ios', locale => \(Self.longTag))::text"),
                ("device_name", "select register_device_token(push_token => \(token), device_type => 'ios', device_name => \(Self.megabyte))::text"),
                ("app_version", "select register_device_token(push_token => \(token), device_type => 'ios', app_version => \(Self.megabyte))::text"),
                ("os_version", "select register_device_token(device_token => \(token), platform => 'ios', os_version => \(Self.megabyte))::text"),
            ] as [(String, SQL)] {
                let r = Self.refusal(db, sql, field)
                #expect(r.state == "PT422" && r.message == "validation_error", "\(field): \(r.state ?? "accepted")")
                #expect(r.detail.hasPrefix(field + " must be at most"), "\(field)")
                #expect(r.detail.utf8.count < 100)
            }
            let at35 = "en-" + String(repeating: "abcdefgh-", count: 3) + "abcde"
            #expect(at35.count == 35)
            let answer = try db.query("""
                select register_device_token(push_token => \(token), device_type => 'ios', locale => \(at35),
                                             device_name => \(String(repeating: "n", count: 200)),
                                             app_version => \(String(repeating: "1", count: 100)))::text as a
                """).first?["a"].string ?? ""
            #expect(answer.contains(at35) && answer.utf8.count < 1_000)
            try SecurityTests.owner(db)
            #expect(try db.query("select count(*)::int as n from device_tokens where user_id = \(user)").first?["n"].int == 1)
        }
    }

    /// The profile's locale (35), location name and display name (200 each) and time zone (64), which
    /// the app updates itself, are refused over their limit naming the column; the time zone's own
    /// check, which would quote it, is not reached.
    @Test func theAppCannotStoreAnOverLongLocaleLocationOrNameInItsProfile() throws {
        try SecurityTests.supabase { tdb, db in
            let user = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(user))")
            try SecurityTests.act(db, as: "authenticated", user)
            for (column, value) in [("locale", Self.longTag), ("location_name", Self.megabyte),
                                    ("display_name", Self.megabyte), ("timezone", Self.megabyte)] {
                let r = Self.refusal(db, "update user_profiles set \(identifier: column) = \(value) returning 1", column)
                #expect(r.state == "PT422" && r.detail.hasPrefix(column + " must be at most"),
                        "\(column): \(r.state ?? "accepted"), \(r.message.utf8.count + r.detail.utf8.count) bytes")
                #expect(r.message.utf8.count + r.detail.utf8.count < 100, "\(column): the value is not repeated")
            }
            #expect(try db.execute("update user_profiles set locale = 'pt-BR', location_name = 'Lisboa'") == 1)
            // The CHECK holds a writer the trigger does not stop.
            try SecurityTests.owner(db)
            try db.execute("alter table user_profiles disable trigger user_profiles_text_lengths")
            SecurityTests.refused(db, "update user_profiles set locale = \(String(repeating: "a", count: 36))",
                                  "the CHECK", state: PGError.checkViolation, message: "user_profiles_locale_length")
        }
    }

    /// Every text column an app or a backend writes has a validated length CHECK (`<table>_<column>_length`),
    /// and the queue's payload a size CHECK.
    @Test func everyTextColumnAnAppOrABackendWritesHasAValidatedLimit() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let bounded: [String: [String]] = [
                "user_profiles": ["display_name", "locale", "location_name", "timezone", "email"],
                "device_tokens": ["locale", "device_name", "app_version", "os_version"],
                "reminders": ["title", "title_ar", "body", "body_ar", "related_entity_type", "related_entity_id", "channel"],
                "dose_events": ["related_entity_id"],
                "notification_queue": ["dedupe_key", "notification_group", "related_entity_type", "related_entity_id"],
                "inbox": ["title", "body", "title_en", "title_ar", "body_en", "body_ar", "deep_link", "image_url",
                          "related_entity_type", "related_entity_id"],
                "daily_forecasts": ["location_name", "forecast_locale", "forecast_summary", "why_explanation", "comfort_tip"],
                "wearable_daily_metrics": ["source"],
            ]
            let names = bounded.flatMap { table, columns in columns.map { "\(table).\(table)_\($0)_length" } }
                + ["notification_queue.notification_queue_payload_size"]
            let found = Set(try db.query("""
                select conrelid::regclass::text || '.' || conname as c from pg_constraint
                 where contype = 'c' and convalidated and conname = any(\(names.map { String($0.split(separator: ".")[1]) })::text[])
                """).compactMap { $0["c"].string })
            #expect(Set(names).subtracting(found).isEmpty, "missing: \(Set(names).subtracting(found).sorted())")
            // prompt_settings holds no text.
            #expect(try db.query("""
                select 1 from information_schema.columns where table_name = 'prompt_settings' and data_type = 'text'
                """).isEmpty)
        }
    }
}
