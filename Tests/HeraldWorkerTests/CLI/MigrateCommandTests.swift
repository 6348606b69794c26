import Foundation
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// `herald migrate` reads herald's migrations and no other folder's: a folder named by `--sql-dir` or
/// `HERALD_SQL_DIR` is used or refused, never replaced by `./sql`; an app's own migrations or an empty
/// folder are refused before anything is applied.
@Suite struct MigrateCommandTests {
    /// A fresh database with nothing in it.
    static func emptyDatabase(_ body: (TestDB) throws -> Void) throws {
        try withTestDatabase(migrationsDirectory: URL(fileURLWithPath: "/nonexistent/herald-no-migrations"), body)
    }

    /// What was applied to `url`'s database: the tables of its public schema besides an empty
    /// `schema_migrations`, and the migrations that records.
    static func applied(_ url: String) throws -> [String] {
        let db = try PGConnection(url)
        defer { db.close() }
        return try db.query("""
            select tablename::text as t from pg_tables where schemaname = 'public' and tablename <> 'schema_migrations'
            union all
            select 'migration ' || version from schema_migrations
            """).compactMap { $0["t"].string }
    }

    /// A mistyped folder, by flag or by setting, run from an app's repository whose `sql/` holds the
    /// app's own migrations: exit 1 naming the folder and where it was named; nothing is applied.
    @Test(arguments: [true, false])
    func aFolderThatDoesNotExistIsRefusedNotReplacedByTheWorkingDirectorysSql(byFlag: Bool) throws {
        try Self.emptyDatabase { tdb in
            let app = try HeraldCLI.AppRepository()
            let typo = "/usr/share/heral/sql"
            let r = try HeraldCLI.run(byFlag ? ["migrate", "--sql-dir", typo] : ["migrate"],
                                      env: ["DATABASE_URL": tdb.url].merging(byFlag ? [:] : ["HERALD_SQL_DIR": typo]) { $1 },
                                      in: app.url)
            #expect(r.status == 1, "\(r.stdout)\n\(r.stderr)")
            #expect(r.stderr.contains(typo) && r.stderr.contains(byFlag ? "--sql-dir" : "HERALD_SQL_DIR"), "\(r.stderr)")
            #expect(try Self.applied(tdb.url) == [])
        }
    }

    /// Another app's migrations folder, or an empty one: exit 1 naming it; nothing is applied.
    @Test func anotherAppsFolderAndAnEmptyOneAreRefused() throws {
        try Self.emptyDatabase { tdb in
            let app = try HeraldCLI.AppRepository()
            let foreign = try HeraldCLI.run(["migrate", "--sql-dir", app.sql.path], env: ["DATABASE_URL": tdb.url])
            #expect(foreign.status == 1, "\(foreign.stdout)\n\(foreign.stderr)")
            #expect(foreign.stderr.contains(app.sql.path) && foreign.stderr.contains("001_orders.sql"), "\(foreign.stderr)")

            let empty = app.url.appendingPathComponent("empty")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
            let none = try HeraldCLI.run(["migrate"], env: ["DATABASE_URL": tdb.url, "HERALD_SQL_DIR": empty.path])
            #expect(none.status == 1, "\(none.stdout)\n\(none.stderr)")
            #expect(none.stderr.contains(empty.path) && none.stderr.contains("no migration"), "\(none.stderr)")
            #expect(try Self.applied(tdb.url) == [])
        }
    }

    /// herald's first migration as released is what tells its folder from another's: the constant is
    /// the repository's `sql/001_auth.sql`.
    @Test func theFirstMigrationHeraldRecognisesIsTheRepositorysOwn() throws {
        let one = try #require(try Migrator(directory: TestDatabase.migrationsDirectory).migrations.first)
        #expect(String(format: "%03d_%@.sql", one.version, one.name) == MigrationsFolder.first.file)
        #expect(one.checksum == MigrationsFolder.first.checksum)
        #expect(throws: MigrationsFolderError.self) {
            try MigrationsFolder.open(HeraldCLI.AppRepository().sql, origin: .flag)
        }
    }

    /// `--quiet` prints nothing; "already applied" counts the migrations the database recorded, not the
    /// folder's files (here the database also has a later release's).
    @Test func quietIsQuietAndAlreadyAppliedCountsTheDatabase() throws {
        try Self.emptyDatabase { tdb in
            let sql = TestDatabase.migrationsDirectory.path
            let quiet = try HeraldCLI.run(["migrate", "--sql-dir", sql, "--quiet"], env: ["DATABASE_URL": tdb.url])
            #expect(quiet.status == 0, "\(quiet.stderr)")
            #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stdout)\n\(quiet.stderr)")

            let db = try tdb.connect()
            defer { db.close() }
            try db.execute("insert into schema_migrations (version, name, checksum) values (9999, 'a_later_release', '0')")
            let count = try #require(try db.query("select count(*)::int as n from schema_migrations").first?["n"].int)
            let again = try HeraldCLI.run(["migrate", "--sql-dir", sql], env: ["DATABASE_URL": tdb.url])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdout == "herald migrate: nothing to apply; \(count) migrations already applied\n", "\(again.stdout)")
        }
    }
}
