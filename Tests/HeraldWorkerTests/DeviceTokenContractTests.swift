import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// The app's device tokens (sql/013_app_contract.sql): registered and unregistered in both request
/// shapes, called as PostgREST calls them (the caller's id in request.jwt.claim.sub).
@Suite struct DeviceTokenContractTests {
    static func asUser(_ db: PGConnection, _ id: UUID?) throws { try AppContractTests.asUser(db, id) }
    static func json(_ db: PGConnection, _ sql: SQL) throws -> JSONValue { try AppContractTests.json(db, sql) }
    static func fails(_ db: PGConnection, _ sql: SQL, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
        AppContractTests.fails(db, sql, code, sourceLocation: sourceLocation)
    }

    // MARK: - Device tokens (seed 003 §1, §2)

    @Test func tokensRegisterAndUnregisterInBothShapes() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let (a, b) = (try f.profile(), try f.profile())
            let token = "ExponentPushToken[jH7fKr23kP9mN8qL5vR1sT]"

            try Self.asUser(db, a)
            let before = Int(Date().timeIntervalSince1970 * 1000) - 5_000
            let r = try Self.json(db, """
                select register_device_token(push_token => \(token), device_type => 'ios', device_name => 'iPhone 14 Pro',
                                             app_version => '1.0.0', locale => 'ar')
                """)
            #expect(r["push_token"]?.stringValue == token)
            #expect(r["device_type"]?.stringValue == "ios")
            #expect(r["locale"]?.stringValue == "ar")
            #expect(r["status"]?.stringValue == "active")
            #expect(r["user_id"]?.stringValue == a.uuidString.lowercased())
            #expect(r["id"]?.stringValue?.count == 36)
            #expect(r["registered_at"]?.intValue ?? 0 > before, "Unix milliseconds")
            #expect(Set(["id", "user_id", "push_token", "device_type", "locale", "registered_at", "status"])
                .isSubset(of: Set(r.objectValue?.keys.map { $0 } ?? [])))
            let row = try db.query("select provider, device_name, app_version from device_tokens where device_token = \(token)").first
            #expect(row?["provider"].string == "expo")
            #expect(row?["device_name"].string == "iPhone 14 Pro")
            #expect(row?["app_version"].string == "1.0.0")

            // The original shape, positional and named, still works and answers its old names too.
            let old = try Self.json(db, "select register_device_token('0a1b2c3d', 'android', '2.0', '14', 'fcm', 'en')")
            #expect(old["device_token"]?.stringValue == "0a1b2c3d")
            #expect(old["platform"]?.stringValue == "android")
            #expect(old["provider"]?.stringValue == "fcm")
            #expect(old["status"]?.stringValue == "active")
            _ = try Self.json(db, "select register_device_token(device_token => 'ffee', platform => 'ios')")
            #expect(try f.count("select count(*) from device_tokens where user_id = \(a) and is_active") == 3)

            // Seed 003's errors.
            Self.fails(db, "select register_device_token(push_token => 'invalid-token-format', device_type => 'ios', app_version => '1.0.0', locale => 'en')", "invalid_token")
            Self.fails(db, "select register_device_token(push_token => 'ExponentPushToken[bad token]', device_type => 'ios')", "invalid_token")
            Self.fails(db, "select register_device_token(push_token => \(token), device_type => 'blackberry')", "validation_error")
            Self.fails(db, "select register_device_token(push_token => \(token))", "validation_error")
            Self.fails(db, "select register_device_token(device_type => 'ios')", "validation_error")
            Self.fails(db, "select register_device_token(push_token => \(token), device_type => 'ios', locale => 'not a locale')", "validation_error")
            Self.fails(db, "select register_device_token(device_token => 'x1', push_token => 'x2', platform => 'ios')", "validation_error")
            Self.fails(db, "select unregister_device_token()", "validation_error")
            try Self.asUser(db, nil)
            Self.fails(db, "select register_device_token(push_token => \(token), device_type => 'ios')", "unauthorized")
            Self.fails(db, "select unregister_device_token(push_token => \(token))", "unauthorized")

            // B cannot unregister A's token.
            try Self.asUser(db, b)
            let notMine = try Self.json(db, "select unregister_device_token(push_token => \(token))")
            #expect(notMine["status"]?.stringValue == "not_found")
            #expect(try db.query("select is_active from device_tokens where device_token = \(token)").first?["is_active"].bool == true)

            // A unregisters it in seed 003's shape.
            try Self.asUser(db, a)
            let u = try Self.json(db, "select unregister_device_token(push_token => \(token))")
            #expect(u["push_token"]?.stringValue == token)
            #expect(u["status"]?.stringValue == "unregistered")
            #expect(u["unregistered_at"]?.intValue ?? 0 > before)
            // The row stays, with only the token's hash (DeviceTokenLeaveTests).
            #expect(try db.query("""
                select deactivated_reason from device_tokens where device_token = 'sha256:' || encode(sha256(convert_to(\(token), 'UTF8')), 'hex')
                """).first?["deactivated_reason"].string == "unregistered")
            // And in the old shape.
            #expect(try Self.json(db, "select unregister_device_token('0a1b2c3d')")["status"]?.stringValue == "unregistered")

            // 008's rule holds for the seed's shape: B registering A's token takes it over.
            _ = try Self.json(db, "select register_device_token(push_token => \(token), device_type => 'ios')")
            try Self.asUser(db, b)
            _ = try Self.json(db, "select register_device_token(push_token => \(token), device_type => 'android', locale => 'en')")
            let owners = try db.query("""
                select user_id, is_active, deactivated_reason from device_tokens
                 where device_token in (\(token), 'sha256:' || encode(sha256(convert_to(\(token), 'UTF8')), 'hex')) order by is_active
                """)
            #expect(owners.map { $0["user_id"].uuid } == [a, b])
            #expect(owners.first?["deactivated_reason"].string == "reassigned")
        }
    }
}
