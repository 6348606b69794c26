import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A database that already holds over-long text upgrades: the migration that adds the limits puts
/// each row within them (cut where a prefix keeps the meaning, emptied where it would not) before it
/// validates them.
@Suite struct TextBoundsUpgradeTests {
    static let firstBounded = 47

    @Test func aDatabaseHoldingOverLongTextUpgradesWithItsRowsPutWithinTheLimits() throws {
        let all = try Migrator(directory: TestDatabase.migrationsDirectory)
        try SecurityTests.supabase(migrations: Migrator(migrations: all.migrations.filter { $0.version < Self.firstBounded })) { tdb, db in
            let user = UUID()
            let huge = String(repeating: "x", count: 2_000_000)
            try db.execute("""
                insert into user_profiles (user_id, locale, location_name, display_name, email)
                values (\(user), \("ar-" + huge), \(huge), \(huge), \(huge + "@example.com"))
                """)
            try db.execute("""
                insert into device_tokens (user_id, device_token, platform, provider, locale, device_name, app_version, os_version)
                values (\(user), 'ExponentPushToken[old-row]', 'ios', 'expo', \(huge), \(huge), \(huge), \(huge))
                """)
            try db.execute("""
                insert into reminders (user_id, schedule, local_time, title, body, related_entity_type, related_entity_id)
                values (\(user), 'daily', '09:00', \(huge), \(huge), 'test_step', \(huge))
                """)
            // Two dose rows whose ids differ only past the limit: cut, they would be one.
            for tail in ["a", "b"] {
                try db.execute("""
                    insert into dose_events (user_id, related_entity_id, scheduled_at) values (\(user), \(String(repeating: "s", count: 300) + tail), '2026-01-01')
                    """)
            }
            let waiting = try db.query("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, scheduled_at, dedupe_key)
                values (\(user), 'push', 'system', jsonb_build_object('body', \(huge)::text), now(), \(String(repeating: "k", count: 600)))
                returning id
                """).first!["id"].uuid!
            let fine = try db.query("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, scheduled_at)
                values (\(user), 'push', 'system', '{"body":"fine"}', now()) returning id
                """).first!["id"].uuid!

            let applied = try all.migrate(db)
            #expect(applied.map(\.version).contains(Self.firstBounded))

            let profile = try #require(try db.query("""
                select char_length(locale) as l, left(locale, 3) as lang, char_length(location_name) as ln,
                       char_length(display_name) as dn, email from user_profiles where user_id = \(user)
                """).first)
            #expect(profile["l"].int == 35 && profile["lang"].string == "ar-")
            #expect(profile["ln"].int == 200 && profile["dn"].int == 200 && profile["email"].isNull)
            let device = try #require(try db.query("""
                select char_length(locale) as l, char_length(device_name) as n, char_length(app_version) as a,
                       char_length(os_version) as o from device_tokens where user_id = \(user)
                """).first)
            #expect(device["l"].int == 35 && device["n"].int == 200 && device["a"].int == 100 && device["o"].int == 100)
            let reminder = try #require(try db.query("""
                select char_length(title) as t, char_length(body) as b, char_length(related_entity_id) as e from reminders where user_id = \(user)
                """).first)
            #expect(reminder["t"].int == 256 && reminder["b"].int == 2048 && reminder["e"].int == 256)
            #expect(try db.query("select count(*)::int as n from dose_events where related_entity_id is null").first?["n"].int == 2)
            let dropped = try #require(try db.query("select status, permanent, last_error, payload::text as p, dedupe_key from notification_queue where id = \(waiting)").first)
            #expect(dropped["status"].string == "failed" && dropped["permanent"].bool == true)
            #expect(dropped["last_error"].string == "payload over 65536 bytes: not sent")
            #expect(dropped["p"].string == "{}" && dropped["dedupe_key"].isNull)
            #expect(try db.query("select status, payload->>'body' as b from notification_queue where id = \(fine)").first?["b"].string == "fine")
            #expect(try db.query("""
                select count(*)::int as n from pg_constraint where contype = 'c' and not convalidated
                   and (conname like '%\\_length' or conname = 'notification_queue_payload_size')
                """).first?["n"].int == 0)
        }
    }
}
