import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The seeds' RPC functions, called as PostgREST would: with the caller's id in request.jwt.claim.sub.
@Suite struct SQLFunctionTests {
    struct World {
        let db: PGConnection
        let family = UUID(), admin = UUID(), member = UUID(), stranger = UUID()
        var alert = UUID()

        func asUser(_ id: UUID?) throws {
            try db.execute("select set_config('request.jwt.claim.sub', \(id?.uuidString ?? ""), false)")
        }
    }

    func world(_ body: (TestDB, World) throws -> Void) throws {
        try withTestDatabase { tdb in
            var w = World(db: try tdb.connect())
            let f = Fixtures(db: w.db)
            try f.profile(w.admin, timezone: "Asia/Tokyo")
            try f.profile(w.member)
            try f.profile(w.stranger)
            try w.db.execute("""
                insert into family_members (family_id, user_id, role) values
                  (\(w.family), \(w.admin), 'admin'), (\(w.family), \(w.member), 'member')
                """)
            w.alert = try f.alert(member: w.member, level: 7, severity: "attention")
            try body(tdb, w)
        }
    }

    @Test func snoozeIsForFamilyOnlyAndCountsInTheCallersDays() throws {
        try world { tdb, w in
            try w.asUser(w.stranger)
            #expect(throws: PGError.self) { try w.db.query("select snooze_pattern_alert(\(w.alert), 3)") }
            try w.asUser(nil)
            #expect(throws: PGError.self) { try w.db.query("select snooze_pattern_alert(\(w.alert), 3)") }
            try w.asUser(w.admin)
            #expect(throws: PGError.self) { try w.db.query("select snooze_pattern_alert(\(w.alert), 0)") }
            let result = try w.db.query("select snooze_pattern_alert(\(w.alert), 3)::text as r").first?["r"].string ?? ""
            #expect(result.contains(#""success": true"#))
            let row = try w.db.query("""
                select snooze_until = ((now() at time zone 'Asia/Tokyo')::date + 3) as ok, snooze_days
                  from pattern_alert_state where id = \(w.alert)
                """).first
            #expect(row?["ok"].bool == true)
            #expect(row?["snooze_days"].int == 3)
        }
    }

    @Test func dismissAndFamilyAlerts() throws {
        try world { tdb, w in
            try w.asUser(w.admin)
            #expect(try w.db.query("select * from get_family_pattern_alerts(\(w.family))").count == 1)
            try w.asUser(w.stranger)
            #expect(throws: PGError.self) { try w.db.query("select * from get_family_pattern_alerts(\(w.family))") }
            #expect(throws: PGError.self) { try w.db.query("select dismiss_pattern_alert(\(w.alert))") }
            try w.asUser(w.member)
            let first = try w.db.query("select dismiss_pattern_alert(\(w.alert))->>'dismissed_at' as at").first?["at"].string
            // Dismissed again (an app retrying the call): the first dismissal's time stays (migration 031).
            usleep(20_000)
            let again = try w.db.query("select dismiss_pattern_alert(\(w.alert))->>'dismissed_at' as at").first?["at"].string
            #expect(first != nil && again == first)
            try w.asUser(w.admin)
            #expect(try w.db.query("select * from get_family_pattern_alerts(\(w.family))").count == 0)
        }
    }

    @Test func deviceTokensRegisterForTheCallerOnly() throws {
        try world { tdb, w in
            try w.asUser(nil)
            #expect(throws: PGError.self) { try w.db.query("select register_device_token('abc', 'ios')") }
            try w.asUser(w.admin)
            let r = try w.db.query("select register_device_token('ExponentPushToken[abc123]', 'android', '1.0', null, null, 'ar')::text as r")
            #expect(r.first?["r"].string?.contains(#""provider": "expo""#) == true)
            try w.db.query("select register_device_token('0a1b2c', 'ios')")
            #expect(throws: PGError.self) { try w.db.query("select register_device_token('ExponentPushToken[bad token]', 'ios')") }
            #expect(throws: PGError.self) { try w.db.query("select register_device_token('x', 'blackberry')") }
            let tokens = try w.db.query("select device_token, provider, user_id from device_tokens order by device_token")
            #expect(tokens.map { $0["provider"].string } == ["apns", "expo"])
            #expect(tokens.allSatisfy { $0["user_id"].uuid == w.admin })
            // Another user cannot unregister the admin's token.
            try w.asUser(w.stranger)
            try w.db.query("select unregister_device_token('0a1b2c')")
            #expect(try w.db.query("select is_active from device_tokens where device_token = '0a1b2c'").first?["is_active"].bool == true)
            try w.asUser(w.admin)
            try w.db.query("select unregister_device_token('0a1b2c')")
            let t = try w.db.query("select is_active, deactivated_reason from device_tokens where provider = 'apns'").first
            #expect(t?["is_active"].bool == false)
            #expect(t?["deactivated_reason"].string == "unregistered")
            // Registering again re-activates it.
            try w.db.query("select register_device_token('0a1b2c', 'ios')")
            #expect(try w.db.query("select is_active from device_tokens where device_token = '0a1b2c'").first?["is_active"].bool == true)
        }
    }

    @Test func markReadTouchesOnlyTheCallersInbox() throws {
        try world { tdb, w in
            let mine = try w.db.query("""
                insert into inbox (user_id, type, title, body) values (\(w.admin), 'system', 't', 'b') returning id
                """).first!["id"].uuid!
            let theirs = try w.db.query("""
                insert into inbox (user_id, type, title, body) values (\(w.member), 'system', 't', 'b') returning id
                """).first!["id"].uuid!
            try w.asUser(w.admin)
            let r = try w.db.query("select mark_notifications_read(\([mine, theirs])::uuid[])::text as r").first?["r"].string ?? ""
            #expect(r.contains(#""updated_count": 1"#))
            #expect(try w.db.query("select is_read from inbox where id = \(theirs)").first?["is_read"].bool == false)
            #expect(try w.db.query("select is_read from inbox where id = \(mine)").first?["is_read"].bool == true)
        }
    }

    @Test func timezoneIsCheckedWhereItIsWritten() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            #expect(throws: PGError.self) {
                try db.execute("insert into user_profiles (user_id, timezone) values (\(UUID()), 'Mars/Olympus_Mons')")
            }
            try db.execute("insert into user_profiles (user_id, timezone) values (\(UUID()), 'America/New_York')")
        }
    }
}
