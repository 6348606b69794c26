import Foundation
import HeraldPostgres

/// A fresh database for `body`, migrated with the repository's `sql/` (or `migrationsDirectory`'s
/// files), dropped when `body` returns or throws: the one way a test takes a database.
///
///     @Test func aReminderGoesAtItsMinute() throws {
///         try withTestDatabase { tdb in
///             let f = Fixtures(db: try tdb.connect())
///             …
///         }
///     }
@discardableResult
public func withTestDatabase<R>(migrationsDirectory: URL = TestDatabase.migrationsDirectory,
                                _ body: (TestDB) throws -> R) throws -> R {
    let tdb = try TestDatabase.create(migrationsDirectory: migrationsDirectory)
    defer { tdb.drop() }
    return try body(tdb)
}

/// `withTestDatabase` for a body that awaits.
@discardableResult
public func withTestDatabase<R>(migrationsDirectory: URL = TestDatabase.migrationsDirectory,
                                _ body: (TestDB) async throws -> R) async throws -> R {
    let tdb = try TestDatabase.create(migrationsDirectory: migrationsDirectory)
    defer { tdb.drop() }
    return try await body(tdb)
}

/// Disposable databases for tests: each `create()` gives a fresh database with the repository's
/// `sql/` migrations applied, cloned from a template that is migrated once per schema version. Tests
/// take theirs through `withTestDatabase`, which drops it; `create()` is for what outlives a scope
/// (a benchmark's database, a fixture's own).
public enum TestDatabase {
    public struct NotConfigured: Error, CustomStringConvertible {
        public init() {}
        public var description: String {
            "HERALD_TEST_DATABASE_URL is not set: run `make test`, which starts a disposable PostgreSQL"
        }
    }

    /// The server URL from `HERALD_TEST_DATABASE_URL` (set by `make test`; it points at db `postgres`).
    public static func serverURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"], !url.isEmpty else {
            throw NotConfigured()
        }
        return url
    }

    /// The repository's `sql/` directory, found from this file: `Tests/Support/../../sql`.
    public static var migrationsDirectory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("sql")
    }

    /// A fresh database migrated with the repository's `sql/`.
    public static func create() throws -> TestDB {
        try create(migrationsDirectory: migrationsDirectory)
    }

    /// A fresh database migrated with the files of `directory` (absent or empty: no migrations).
    /// Made by `CREATE DATABASE … TEMPLATE herald_tpl_<hash of the files>`; the template is built
    /// once, under an advisory lock so parallel tests and processes do not race, and nobody stays
    /// connected to it (which would make `CREATE DATABASE … TEMPLATE` fail).
    public static func create(migrationsDirectory directory: URL) throws -> TestDB {
        let serverURL = try serverURL()
        let migrator: Migrator
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue {
            migrator = try Migrator(directory: directory)
        } else {
            migrator = Migrator(migrations: [])
        }
        let template = "herald_tpl_" + schemaHash(migrator.migrations)
        let name = "herald_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)

        let server = try PGConnection(serverURL, applicationName: "herald-tests")
        defer { server.close() }
        try server.execute("select pg_advisory_lock(\(templateLockKey))")
        defer { _ = try? server.execute("select pg_advisory_unlock(\(templateLockKey))") }

        if try !databaseExists(template, on: server) {
            // Built under another name and renamed when complete, so a failed or interrupted build
            // never leaves a half-migrated template behind.
            let building = template + "_building"
            try server.execute("drop database if exists \(identifier: building) with (force)")
            try server.execute("create database \(identifier: building)")
            do {
                let conn = try PGConnection(url(serverURL, database: building), applicationName: "herald-tests")
                defer { conn.close() }
                try migrator.migrate(conn)
            } catch {
                _ = try? server.execute("drop database if exists \(identifier: building) with (force)")
                throw error
            }
            try server.execute("alter database \(identifier: building) rename to \(identifier: template)")
        }
        try server.execute("create database \(identifier: name) template \(identifier: template)")
        return TestDB(name: name, url: url(serverURL, database: name), serverURL: serverURL)
    }

    /// Key of the advisory lock (taken in the server's `postgres` database) guarding template builds.
    static let templateLockKey: Int64 = 0x6865_7261_6C64_7470

    /// 16 hex digits identifying the schema: every migration's version, name and checksum.
    public static func schemaHash(_ migrations: [Migration]) -> String {
        let summary = migrations.map { "\($0.version) \($0.name) \($0.checksum)\n" }.joined()
        return FNV1a64.hex(Array(summary.utf8))
    }

    static func databaseExists(_ name: String, on conn: PGConnection) throws -> Bool {
        try conn.query("select 1 from pg_database where datname = \(name)").count > 0
    }

    /// `serverURL` pointing at another database: the URI's path replaced, or `dbname=` appended to a
    /// key=value conninfo (the last occurrence wins).
    public static func url(_ serverURL: String, database: String) -> String {
        if serverURL.hasPrefix("postgres://") || serverURL.hasPrefix("postgresql://"),
           var components = URLComponents(string: serverURL) {
            components.path = "/" + database
            if let url = components.string { return url }
        }
        return serverURL + " dbname=" + database
    }
}

/// A database made by `TestDatabase.create()`. Drop it when done; it is not dropped automatically,
/// since dropping forcibly ends connections that may still be in use.
public final class TestDB: Sendable {
    /// A connection URL for this database.
    public let url: String
    public let name: String
    private let serverURL: String

    init(name: String, url: String, serverURL: String) {
        self.name = name
        self.url = url
        self.serverURL = serverURL
    }

    /// A new connection to this database.
    public func connect() throws -> PGConnection {
        try PGConnection(url, applicationName: "herald-tests")
    }

    /// Gives every notification type the same rate limits (nil: no such limit), for a test about
    /// something else than pacing: `notification_types` is where a pass reads them.
    public func setRateLimits(dailyCap: Int? = nil, spacingSeconds: Int? = nil, perMinute: Int? = nil) throws {
        let db = try connect()
        defer { db.close() }
        try db.execute("""
            update notification_types
               set daily_cap = \(dailyCap), min_spacing_seconds = \(spacingSeconds), per_minute_cap = \(perMinute)
            """)
    }

    /// The herald rate limits with the spacing between two of a type turned off (the cap of 10 a day
    /// on the capped types and 100 a minute stay).
    public func withoutSpacing() throws {
        let db = try connect()
        defer { db.close() }
        try db.execute("update notification_types set min_spacing_seconds = null")
    }

    /// How many times the PL/pgSQL functions `names` ran while `work` ran, in one transaction on a fresh
    /// connection: a backend flushes its function counts at most once a second, and until then its
    /// transaction's view holds the earlier transactions' calls too.
    ///
    ///     try tdb.functionCalls(["herald_digest_join"]) { try $0.execute("insert …") }   // 0
    public func functionCalls(_ names: [String], during work: (PGConnection) throws -> Void) throws -> Int {
        let c = try connect()
        defer { c.close() }
        return try c.transaction { tx in
            try tx.execute("set local track_functions = 'pl'")
            try work(tx)
            return try tx.query("""
                select coalesce(sum(calls), 0)::int as n from pg_stat_xact_user_functions
                 where funcname = any(\(names)::text[])
                """).first?["n"].int ?? -1
        }
    }

    /// Drops the database, ending any connections to it. Errors are reported on stderr, not thrown.
    public func drop() {
        do {
            let server = try PGConnection(serverURL, applicationName: "herald-tests")
            defer { server.close() }
            try server.execute("drop database if exists \(identifier: name) with (force)")
        } catch {
            FileHandle.standardError.write(Data("TestDB: could not drop \(name): \(error)\n".utf8))
        }
    }
}
