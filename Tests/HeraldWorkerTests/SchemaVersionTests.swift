import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A pass against a database whose migration record says it is behind the binary claims nothing: its
/// record could fail after the sends, and the rows would go out again at each lease expiry.
@Suite struct SchemaVersionTests {
    /// The migration files' versions.
    static func versions() throws -> [Int] {
        try FileManager.default.contentsOfDirectory(atPath: TestDatabase.migrationsDirectory.path)
            .filter { $0.hasSuffix(".sql") }.compactMap { Int($0.prefix { $0.isNumber }) }
    }

    @Test func theRequiredVersionIsTheNewestMigration() throws {
        #expect(SchemaVersion.required == (try Self.versions().max()))
    }

    /// A database migrated with every migration but the newest (copied to a folder of their own).
    static func databaseBehind() throws -> TestDB {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for file in try FileManager.default.contentsOfDirectory(atPath: TestDatabase.migrationsDirectory.path)
        where file.hasSuffix(".sql") && Int(file.prefix { $0.isNumber }) != SchemaVersion.required {
            try FileManager.default.copyItem(at: TestDatabase.migrationsDirectory.appendingPathComponent(file),
                                             to: dir.appendingPathComponent(file))
        }
        return try TestDatabase.create(migrationsDirectory: dir)
    }

    /// `body` with a database migrated with every migration but the newest, dropped when it ends.
    static func databaseBehind(_ body: (TestDB) throws -> Void) throws {
        let tdb = try databaseBehind()
        defer { tdb.drop() }
        try body(tdb)
    }

    @Test func aPassRefusesASchemaBehindItAndClaimsNothing() throws {
        try Self.databaseBehind { tdb in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile()
            let row = try f.enqueue(to: user, channel: "in_app", at: seedInstant)

            let (behind, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .configuration)
            #expect(behind.error?.contains("herald migrate") == true, "\(behind.error ?? "")")
            #expect(behind.error?.contains("\(SchemaVersion.required)") == true)
            #expect(try f.row(row)["status"].string == "pending")
            #expect(try f.count("select count(*)::int from herald_passes") == 0)

            // Migrated (the repository's sql/ adds only the newest), the same pass sends it.
            _ = try Migrator(directory: TestDatabase.migrationsDirectory).migrate(f.db)
            let (summary, okCode) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(okCode == .ok, "\(summary.error ?? "")")
            #expect(summary.sent == 1)
        }
    }

    /// No `schema_migrations` (the files applied by another tool): nothing says the schema is behind,
    /// and refusing on a guess would stop every notification. The pass runs, with a warning.
    @Test func aDatabaseWithoutAMigrationRecordIsRunAgainst() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            // A role the record is not granted to cannot tell either.
            let other = try tdb.connect()
            defer { other.close() }
            try other.execute("do $$ begin create role herald_cannot_read nologin; exception when duplicate_object then null; end $$")
            try other.execute("set role herald_cannot_read")
            #expect(try SchemaVersion.check(other) == nil)
            try f.db.execute("drop table schema_migrations")
            #expect(try SchemaVersion.check(f.db) == nil)
            let row = try f.enqueue(to: try f.profile(), channel: "in_app", at: seedInstant)
            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(try f.row(row)["status"].string == "sent")
        }
    }

    @Test func aSchemaAheadOfTheBinaryIsRunAgainst() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            try f.db.execute("""
                insert into schema_migrations (version, name, checksum) values (\(SchemaVersion.required + 1), 'from_a_later_release', 'x')
                """)
            let row = try f.enqueue(to: try f.profile(), channel: "in_app", at: seedInstant)
            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(try f.row(row)["status"].string == "sent")
        }
    }
}
