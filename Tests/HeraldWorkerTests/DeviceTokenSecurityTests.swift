import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A device token belongs to one user at a time, on a database set up like Supabase: registering it
/// again moves it to its new user, simultaneous registrations leave one active owner, and the
/// migration settles tokens already shared before it.
@Suite struct DeviceTokenSecurityTests {
    @Test func aReRegisteredDeviceTokenReachesOnlyItsNewUser() throws {
        try SecurityTests.supabase { (tdb, db) throws in
            let (a, b) = (UUID(), UUID())
            let token = "ExponentPushToken[shared-phone]"
            func owners() throws -> [String] {
                try db.query("""
                    select case when user_id = \(a) then 'A' else 'B' end || ':' || is_active::text
                           || ':' || coalesce(deactivated_reason, '-') as o
                      from device_tokens where device_token in (\(token), herald_departed_device_token(\(token)))
                     order by user_id = \(b), user_id
                    """).compactMap { $0["o"].string }
            }

            try SecurityTests.act(db, as: "authenticated", a)
            try db.query("select register_device_token(\(token), 'ios')")
            try SecurityTests.act(db, as: "authenticated", b)
            try db.query("select register_device_token(\(token), 'ios')")
            try SecurityTests.owner(db)
            #expect(try owners() == ["A:false:reassigned", "B:true:-"])
            // A no longer sees it as theirs.
            try SecurityTests.act(db, as: "authenticated", a)
            #expect(try db.query("select 1 from device_tokens where is_active").isEmpty)
            // Back to A (A signs in again on the phone): B's row goes, A's returns.
            try db.query("select register_device_token(\(token), 'ios')")
            try SecurityTests.owner(db)
            #expect(try owners() == ["A:true:-", "B:false:reassigned"])
            // The same user registering again changes nothing else.
            try SecurityTests.act(db, as: "authenticated", a)
            try db.query("select register_device_token(\(token), 'ios', '2.0')")
            try SecurityTests.owner(db)
            #expect(try owners() == ["A:true:-", "B:false:reassigned"])
            // And the table itself refuses a second active owner, whoever writes it.
            SecurityTests.refused(db, "insert into device_tokens (user_id, device_token, provider) values (\(UUID()), \(token), 'expo')",
                         "second active row", state: PGError.uniqueViolation)
        }
    }

    /// Several users registering one token at the same moment take turns: none fails, one ends up active.
    @Test func simultaneousRegistrationsLeaveOneActiveOwner() throws {
        try SecurityTests.supabase { (tdb, db) throws in
            let token = "ExponentPushToken[contended]"
            let users = (0..<6).map { _ in UUID() }
            let url = tdb.url
            let failures = Failures()
            inParallel(users.count) { i in
                do {
                    let conn = try PGConnection(url, applicationName: "herald-tests")
                    defer { conn.close() }
                    for _ in 0..<5 {
                        try SecurityTests.act(conn, as: "authenticated", users[i])
                        try conn.query("select register_device_token(\(token), 'android')")
                    }
                } catch {
                    failures.add("\(error)")
                }
            }
            #expect(failures.all == [])
            #expect(try db.query("select count(*) from device_tokens where device_token = \(token) and is_active")
                .first?[0].int == 1)
            #expect(try db.query("""
                select count(*) from device_tokens where device_token in (\(token), herald_departed_device_token(\(token)))
                """).first?[0].int == 6)
        }
    }

    /// Tokens already active for several users when 008 is applied: the most recently used keeps it.
    @Test func theMigrationSettlesTokensAlreadySharedBeforeIt() throws {
        let all = try Migrator(directory: TestDatabase.migrationsDirectory)
        try SecurityTests.supabase(migrations: Migrator(migrations: all.migrations.filter { $0.version < 8 })) { tdb, db in
            let (a, b, c) = (UUID(), UUID(), UUID())
            try db.execute("""
                insert into device_tokens (user_id, device_token, last_used_at) values
                  (\(a), 'cafe01', now() - interval '3 days'), (\(b), 'cafe01', now() - interval '1 day'),
                  (\(c), 'cafe01', now() - interval '2 days'), (\(c), 'beef02', null)
                """)
            // The catalog check (SchemaCatalogTests) sees what 008 fixes.
            #expect(try SchemaCatalogTests.unindexedForeignKeys(db) == ["push_receipts.push_receipts_device_token_id_fkey",
                                                                        "push_receipts.push_receipts_queue_id_fkey"])
            try all.migrate(db)
            let active = try db.query("select user_id, device_token from device_tokens where is_active order by device_token")
            #expect(active.map { $0["device_token"].string } == ["beef02", "cafe01"])
            #expect(active.map { $0["user_id"].uuid } == [c, b])
            #expect(try db.query("select count(*) from device_tokens where deactivated_reason = 'reassigned'").first?[0].int == 2)
        }
    }
}

/// Errors collected from several threads.
private final class Failures: @unchecked Sendable {
    private var list: [String] = []
    private let lock = NSLock()
    func add(_ failure: String) { lock.withLock { list.append(failure) } }
    var all: [String] { lock.withLock { list } }
}
