import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A push token has one stored form, whoever writes it: surrounding whitespace and control characters
/// are dropped, APNs hex is lower case, and what does not have the provider's shape is refused. So a
/// padded copy of someone's token is that same phone, one active owner at a time, and the owner's next
/// registration takes it back. Written as an attacker's calls through PostgREST's roles.
@Suite struct DeviceTokenFormTests {
    static let victim = UUID(), attacker = UUID()

    /// Who holds `token` now, as "V:true" / "A:false" lines, in user order; and the stored tokens.
    static func holders(_ db: PGConnection, _ token: String) throws -> [String] {
        try SecurityTests.owner(db)
        return try db.query("""
            select case when user_id = \(victim) then 'V' else 'A' end || ':' || is_active::text as h
              from device_tokens where device_token = \(token) or device_token = herald_departed_device_token(\(token))
             order by user_id = \(attacker), user_id
            """).compactMap { $0["h"].string }
    }

    static func register(_ db: PGConnection, _ user: UUID, _ token: String, provider: String) throws {
        try SecurityTests.act(db, as: "authenticated", user)
        try db.query("select register_device_token(\(token), 'android', null, null, \(provider))")
    }

    /// Padded, tab-ended or upper-cased copies of the victim's token are the victim's phone: never a
    /// second active row; the victim's next registration takes the phone back.
    @Test func aPaddedCopyOfATokenIsTheSamePhoneAndGoesBackToItsOwner() throws {
        try SecurityTests.supabase { tdb, db in
            let fcm = "dXk3pQ:APA91bH" + String(repeating: "x", count: 40)
            let apns = String(repeating: "ab12", count: 16)
            let cases: [(provider: String, stored: String, copies: [String])] = [
                ("fcm", fcm, [fcm + "\n", " " + fcm, fcm + "\t", "\r\n" + fcm + " "]),
                ("apns", apns, [apns.uppercased(), apns + "\n", " " + apns.uppercased() + " "]),
            ]
            for c in cases {
                try Self.register(db, Self.victim, c.stored, provider: c.provider)
                for copy in c.copies {
                    try Self.register(db, Self.attacker, copy, provider: c.provider)
                    #expect(try Self.holders(db, c.stored) == ["V:false", "A:true"], "\(c.provider) \(copy.debugDescription)")
                    try SecurityTests.owner(db)
                    #expect(try db.query("select count(*) from device_tokens where is_active and user_id = \(Self.attacker)")
                        .first?[0].int == 1, "one phone, one row")
                    try Self.register(db, Self.victim, c.stored, provider: c.provider)
                    #expect(try Self.holders(db, c.stored) == ["V:true", "A:false"], "back to its owner")
                }
            }
            // Whoever writes the table gets the same form: a padded copy is the same active token.
            try SecurityTests.owner(db)
            SecurityTests.refused(db, """
                insert into device_tokens (user_id, device_token, provider) values (\(Self.attacker), \(fcm + "\n"), 'fcm')
                """, "a padded copy written straight into the table", state: PGError.uniqueViolation)
        }
    }

    /// What no provider could take is refused with `invalid_token`, by the RPC and by the table.
    @Test func aTokenWithInnerSpacesOrForeignCharactersIsRefused() throws {
        try SecurityTests.supabase { tdb, db in
            let refusals: [(token: String, provider: String)] = [
                ("abcd ef01", "apns"), ("abcdeg01", "apns"), ("abc", "apns"), ("ab\u{200B}cd", "apns"),
                ("fcm token", "fcm"), ("fcm\u{00A0}token", "fcm"), ("fcm\u{7F}token", "fcm"), ("fcmtokén", "fcm"),
                ("ExponentPushToken[a b]", "expo"), ("ExponentPushToken[x]\u{0}", "expo"),
            ]
            for r in refusals where !r.token.contains("\u{0}") {
                try SecurityTests.act(db, as: "authenticated", Self.attacker)
                SecurityTests.refused(db, "select register_device_token(\(r.token), 'ios', null, null, \(r.provider))",
                                      r.token.debugDescription, state: "PT400", message: "invalid_token")
                try SecurityTests.owner(db)
                SecurityTests.refused(db, """
                    insert into device_tokens (user_id, device_token, provider) values (\(Self.attacker), \(r.token), \(r.provider))
                    """, "the table: \(r.token.debugDescription)", state: PGError.checkViolation)
            }
            try SecurityTests.owner(db)
            #expect(try db.query("select count(*) from device_tokens").first?[0].int == 0)
        }
    }

    /// Tokens stored before the canonical form: a person's copies of one token become one row (its
    /// deliveries kept), the most recently used account keeps the phone, a token no provider could
    /// take is kept only as a hash, and phones that already left an account keep only their hash there.
    @Test func theMigrationSettlesCopiesAlreadyStored() throws {
        let all = try Migrator(directory: TestDatabase.migrationsDirectory)
        try SecurityTests.supabase(migrations: Migrator(migrations: all.migrations.filter { $0.version < 46 })) { tdb, db in
            let (v, a, c) = (Self.victim, Self.attacker, UUID())
            let copy = try db.query("""
                insert into device_tokens (user_id, device_token, provider, is_active, last_used_at) values
                  (\(v), 'fcmtokenV', 'fcm', true, now() - interval '1 day'),
                  (\(a), E'fcmtokenV\\n', 'fcm', true, now()),
                  (\(v), ' fcmtokenV', 'fcm', false, now() - interval '3 days'),
                  (\(v), 'ABCDEF01', 'apns', true, now()),
                  (\(v), 'bad token', 'fcm', true, now())
                returning id, device_token
                """).first { $0["device_token"].string == " fcmtokenV" }?["id"].uuid
            try db.execute("""
                insert into device_tokens (user_id, device_token, provider, is_active, deactivated_reason)
                values (\(c), 'ExponentPushToken[left]', 'expo', false, 'unregistered')
                """)
            let queue = try Fixtures(db: db).enqueue(to: v, channel: "push", at: Date())
            try db.execute("""
                insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination, device_token_id, outcome)
                values (\(queue), 'a pass', 1, 'push', 'fcm', 'fcmtokenV', \(copy), 'delivered')
                """)
            try all.migrate(db)
            let rows = try db.query("""
                select case user_id when \(v) then 'V' when \(a) then 'A' else 'C' end || ':' || device_token || ':'
                       || is_active::text || ':' || coalesce(deactivated_reason, '-') as r
                  from device_tokens order by 1
                """).compactMap { $0["r"].string }
            let hashed = { (t: String) in try db.query("select herald_departed_device_token(\(t)) as h").first!["h"].string! }
            #expect(rows == ["A:fcmtokenV:true:-", "C:\(try hashed("ExponentPushToken[left]")):false:unregistered",
                             "V:\(try hashed("bad token")):false:invalid_token", "V:\(try hashed("fcmtokenV")):false:reassigned",
                             "V:abcdef01:true:-"].sorted())
            #expect(try db.query("select count(*) from notification_deliveries where device_token_id is not null").first?[0].int == 1,
                    "the delivery points at the row kept")
        }
    }
}
