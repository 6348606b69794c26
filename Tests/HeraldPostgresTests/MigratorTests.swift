import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A temporary directory of migration files.
final class MigrationDirectory {
    let url: URL

    init(_ files: [String: String]) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for (name, text) in files { try write(name, text) }
    }

    func write(_ name: String, _ text: String) throws {
        try text.write(to: url.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A value shared between threads, behind a lock.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A fresh database with no migrations applied.
func emptyDatabase(_ body: (TestDB) throws -> Void) throws {
    let empty = try MigrationDirectory([:])
    try withExtendedLifetime(empty) { try withTestDatabase(migrationsDirectory: empty.url, body) }
}

@Suite struct MigratorTests {
    let files = [
        "1_create.sql": "create table things (id int primary key);\ncreate table log (version int);\ninsert into log values (1);",
        "2_insert.sql": "insert into things values (1), (2); insert into log values (2);",
        // Numeric order: 10 comes after 2, though it sorts before it as text.
        "10_column.sql": "alter table things add column label text default 'x'; insert into log values (10);",
        "README.md": "not a migration",
    ]

    @Test func readsFilesInNumericOrder() throws {
        let dir = try MigrationDirectory(files)
        let migrator = try Migrator(directory: dir.url)
        #expect(migrator.migrations.map(\.version) == [1, 2, 10])
        #expect(migrator.migrations.map(\.name) == ["create", "insert", "column"])
        #expect(migrator.migrations[1].text == files["2_insert.sql"])
        #expect(throws: MigratorError.self) { try Migrator(directory: dir.url.appendingPathComponent("missing")) }
        try dir.write("02_dup.sql", "select 1")
        #expect(throws: MigratorError.self) { try Migrator(directory: dir.url) }
    }

    @Test func appliesInOrderRecordsAndIsIdempotent() throws {
        try emptyDatabase { db in
            let conn = try db.connect()
            let dir = try MigrationDirectory(files)
            let migrator = try Migrator(directory: dir.url)

            #expect(try migrator.pending(conn).map(\.version) == [1, 2, 10])
            let applied = try migrator.migrate(conn)
            #expect(applied.map(\.version) == [1, 2, 10])
            #expect(try conn.query("select version from log").map { $0["version"].int } == [1, 2, 10])
            #expect(try conn.query("select id, label from things order by id").map { $0["label"].string } == ["x", "x"])
            let recorded = try conn.query("select version, name, checksum, applied_at from schema_migrations order by version")
            #expect(recorded.map { $0["version"].int } == [1, 2, 10])
            #expect(recorded.map { $0["name"].string } == ["create", "insert", "column"])
            #expect(recorded.map { $0["checksum"].string } == migrator.migrations.map(\.checksum))
            #expect(recorded.allSatisfy { $0["applied_at"].date != nil })

            #expect(try migrator.migrate(conn).isEmpty)
            #expect(try migrator.pending(conn).isEmpty)
            #expect(try conn.query("select count(*) as n from log")[0]["n"].int == 3)

            // A new file is pending, and dry runs change nothing.
            try dir.write("11_more.sql", "create table more (id int); insert into log values (11);")
            let next = try Migrator(directory: dir.url)
            #expect(try next.pending(conn).map(\.version) == [11])
            #expect(try next.migrate(conn, dryRun: true).map(\.version) == [11])
            #expect(try conn.query("select to_regclass('more') is null as absent")[0]["absent"].bool == true)
            #expect(try conn.query("select count(*) as n from schema_migrations")[0]["n"].int == 3)
            #expect(try next.migrate(conn).map(\.version) == [11])
            #expect(try conn.query("select count(*) as n from schema_migrations")[0]["n"].int == 4)
        }
    }

    @Test func dryRunOnAFreshDatabaseCreatesNothing() throws {
        try emptyDatabase { db in
            let conn = try db.connect()
            try conn.execute("drop table schema_migrations")  // the (empty) template has one
            let dir = try MigrationDirectory(files)
            let migrator = try Migrator(directory: dir.url)
            #expect(try migrator.migrate(conn, dryRun: true).map(\.version) == [1, 2, 10])
            let row = try conn.query("select to_regclass('schema_migrations') is null as a, to_regclass('things') is null as b")[0]
            #expect(row["a"].bool == true)
            #expect(row["b"].bool == true)
        }
    }

    @Test func refusesAChangedChecksum() throws {
        try emptyDatabase { db in
            let conn = try db.connect()
            let dir = try MigrationDirectory(files)
            try Migrator(directory: dir.url).migrate(conn)
            try dir.write("2_insert.sql", "insert into things values (3); insert into log values (2);")
            let edited = try Migrator(directory: dir.url)
            let error = try #require(throws: MigratorError.self) { try edited.migrate(conn) }
            guard case .checksumMismatch(let version, _, _, _) = error else {
                Issue.record("expected a checksum mismatch, got \(error)")
                return
            }
            #expect(version == 2)
            #expect(error.description.contains("2 (insert)"))
            #expect(throws: MigratorError.self) { try edited.pending(conn) }
            #expect(try conn.query("select count(*) as n from things")[0]["n"].int == 2)
        }
    }

    @Test func acceptsTheFormerChecksumOfACommentOnlyEdit() throws {
        try emptyDatabase { db in
            let conn = try db.connect()
            let dir = try MigrationDirectory(files)
            let before = try Migrator(directory: dir.url)
            try before.migrate(conn)
            let former = before.migrations[1].checksum
            try dir.write("2_insert.sql", "-- Two things.\n" + files["2_insert.sql"]!)
            let current = try Migrator(directory: dir.url).migrations[1].checksum
            #expect(current != former)
            let edits = [2: FormerChecksums(current: current, former: [former])]

            // Listed as a former checksum of version 2: the database applied what the file says now.
            let reworded = try Migrator(directory: dir.url, formerChecksums: edits)
            #expect(try reworded.pending(conn).isEmpty)
            #expect(try reworded.migrate(conn).isEmpty)
            #expect(try conn.query("select checksum from schema_migrations where version = 2")[0]["checksum"].string == former)
            // Not listed (or listed for another version): refused as before.
            #expect(throws: MigratorError.self) { try Migrator(directory: dir.url, formerChecksums: [:]).pending(conn) }
            #expect(throws: MigratorError.self) {
                try Migrator(directory: dir.url, formerChecksums: [10: FormerChecksums(current: current, former: [former])]).pending(conn)
            }

            // A change to the SQL itself is refused, though the recorded checksum is listed as a former one.
            try dir.write("2_insert.sql", "-- Two things.\ninsert into things values (3); insert into log values (2);")
            let error = try #require(throws: MigratorError.self) {
                try Migrator(directory: dir.url, formerChecksums: edits).migrate(conn)
            }
            guard case .checksumMismatch(let version, _, let recorded, _) = error else {
                Issue.record("expected a checksum mismatch, got \(error)")
                return
            }
            #expect(version == 2)
            #expect(recorded == former)
            #expect(try conn.query("select count(*) as n from things")[0]["n"].int == 2)
        }
    }

    /// The repository's migrations whose comments were reworded: a database that recorded their former
    /// text's checksums (migrated before the edit) is up to date, and a real SQL change is still refused.
    @Test func repositoryMigrationsAcceptTheirFormerChecksums() throws {
        let repository = try Migrator(directory: TestDatabase.migrationsDirectory)
        let byVersion = Dictionary(uniqueKeysWithValues: repository.migrations.map { ($0.version, $0) })
        #expect(!Migration.formerChecksums.isEmpty)
        for (version, edits) in Migration.formerChecksums {
            let migration = try #require(byVersion[version], "former checksums for version \(version), which sql/ lacks")
            // Its comments were edited again without moving the entry on: databases that recorded a
            // former text would be refused.
            #expect(edits.current == migration.checksum,
                    "sql/ version \(version) has checksum \(migration.checksum), not \(edits.current) as formerChecksums says")
            #expect(!edits.former.contains(migration.checksum), "version \(version) lists its current checksum as a former one")
            #expect(edits.former.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) })
        }

        try withTestDatabase { db in
            let conn = try db.connect()
            for (version, edits) in Migration.formerChecksums {
                try conn.execute("update schema_migrations set checksum = \(edits.former.sorted()[0]) where version = \(version)")
            }
            #expect(try repository.pending(conn).isEmpty)
            #expect(try repository.migrate(conn).isEmpty)

            // The same files, with a statement added to a reworded migration: refused.
            let (version, edits) = try #require(Migration.formerChecksums.min { $0.key < $1.key })
            let changed = try #require(byVersion[version])
            var texts: [String: String] = [:]
            for m in repository.migrations {
                texts["\(m.version)_\(m.name).sql"] = m.version == version ? m.text + "\nselect 1;\n" : m.text
            }
            let dir = try MigrationDirectory(texts)
            let error = try #require(throws: MigratorError.self) { try Migrator(directory: dir.url).pending(conn) }
            guard case .checksumMismatch(let refused, _, let recorded, _) = error else {
                Issue.record("expected a checksum mismatch, got \(error)")
                return
            }
            #expect(refused == changed.version)
            #expect(edits.former.contains(recorded))
        }
    }

    @Test func aFailingMigrationIsRolledBackAndNotRecorded() throws {
        try emptyDatabase { db in
            let conn = try db.connect()
            let dir = try MigrationDirectory(files)
            try dir.write("12_broken.sql", "create table half (id int); insert into nowhere values (1);")
            let error = try #require(throws: MigratorError.self) { try Migrator(directory: dir.url).migrate(conn) }
            guard case .migrationFailed(let migration, let underlying) = error else {
                Issue.record("expected a failed migration, got \(error)")
                return
            }
            #expect(migration.version == 12)
            #expect(underlying.sqlState == "42P01")
            #expect(try conn.query("select max(version) as v from schema_migrations")[0]["v"].int == 10)
            #expect(try conn.query("select to_regclass('half') is null as absent")[0]["absent"].bool == true)
            // The session is usable and the lock was released: another connection can migrate.
            let other = try db.connect()
            try dir.write("12_broken.sql", "create table half (id int);")
            #expect(try Migrator(directory: dir.url).migrate(other).map(\.version) == [12])
        }
    }

    @Test func concurrentMigrationsApplyEachOnce() throws {
        try emptyDatabase { db in
            var slowFiles = files
            slowFiles["1_create.sql"] = files["1_create.sql"]! + "\nselect pg_sleep(0.5);"
            let dir = try MigrationDirectory(slowFiles)
            let migrator = try Migrator(directory: dir.url)

            let results = Locked<[Result<[Int], any Error>]>([])
            let url = db.url
            let threads = (0..<2).map { _ in
                Thread {
                    let result = Result {
                        let conn = try PGConnection(url)
                        defer { conn.close() }
                        return try migrator.migrate(conn).map(\.version)
                    }
                    results.withLock { $0.append(result) }
                }
            }
            threads.forEach { $0.start() }
            let deadline = Date().addingTimeInterval(60)
            while results.withLock({ $0.count }) < 2 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }

            let applied = try results.withLock { try $0.map { try $0.get() } }
            #expect(applied.count == 2)
            #expect(applied.sorted { $0.count < $1.count } == [[], [1, 2, 10]])
            let conn = try db.connect()
            #expect(try conn.query("select version from log order by version").map { $0["version"].int } == [1, 2, 10])
            #expect(try conn.query("select count(*) as n from schema_migrations")[0]["n"].int == 3)
        }
    }
}

@Suite struct TestDatabaseTests {
    @Test func createsIndependentMigratedDatabases() throws {
        let dir = try MigrationDirectory(["1_t.sql": "create table t (v text); insert into t values ('seed');"])
        try withTestDatabase(migrationsDirectory: dir.url) { a in
            try withTestDatabase(migrationsDirectory: dir.url) { b in
                #expect(a.name != b.name)
                #expect(a.url != b.url)

                let ca = try a.connect()
                let cb = try b.connect()
                #expect(try ca.query("select current_database() as d")[0]["d"].string == a.name)
                try ca.execute("insert into t values (\("only in a"))")
                #expect(try ca.query("select count(*) as n from t")[0]["n"].int == 2)
                #expect(try cb.query("select v from t").map { $0["v"].string } == ["seed"])
                #expect(try cb.query("select count(*) as n from schema_migrations")[0]["n"].int == 1)
            }
        }
    }

    @Test func dropRemovesTheDatabase() throws {
        try emptyDatabase { db in
            let conn = try db.connect()
            db.drop()
            let server = try serverConnection()
            #expect(try server.query("select count(*) as n from pg_database where datname = \(db.name)")[0]["n"].int == 0)
            #expect(throws: PGError.self) { try conn.query("select 1") }
        }
    }

    @Test func parallelCreatesShareOneTemplate() throws {
        // A schema no other test uses, so its template is built here, by racing threads.
        let dir = try MigrationDirectory(["1_t.sql": "create table t (id int); -- \(UUID())"])
        defer { withExtendedLifetime(dir) {} }
        let made = Locked<[Result<TestDB, any Error>]>([])
        let url = dir.url
        for _ in 0..<4 {
            Thread { let r = Result { try TestDatabase.create(migrationsDirectory: url) }; made.withLock { $0.append(r) } }.start()
        }
        let deadline = Date().addingTimeInterval(60)
        while made.withLock({ $0.count }) < 4 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let dbs = try made.withLock { try $0.map { try $0.get() } }
        defer { dbs.forEach { $0.drop() } }
        #expect(Set(dbs.map(\.name)).count == 4)
        for db in dbs {
            #expect(try db.connect().query("select count(*) as n from t")[0]["n"].int == 0)
        }
        let server = try serverConnection()
        // Its own template only: other tests may be building theirs at this moment.
        let building = "herald_tpl_" + TestDatabase.schemaHash(try Migrator(directory: url).migrations) + "_building"
        #expect(try server.query("select count(*) as n from pg_database where datname = \(building)")[0]["n"].int == 0)
        #expect(try server.query("select count(*) as n from pg_database where datname = \(String(building.dropLast(9)))")[0]["n"].int == 1)
    }

    @Test func repositorySchema() throws {
        // sql/ may be empty while the schema is being written; either way create() must work.
        try withTestDatabase { db in
            let conn = try db.connect()
            let expected = (try? Migrator(directory: TestDatabase.migrationsDirectory).migrations.count) ?? 0
            let recorded = try conn.query("select to_regclass('schema_migrations') is not null as e")[0]["e"].bool == true
                ? try conn.query("select count(*) as n from schema_migrations")[0]["n"].int ?? -1 : 0
            #expect(recorded == expected)
        }
    }

    @Test func notConfiguredMessage() {
        #expect(TestDatabase.NotConfigured().description
                == "HERALD_TEST_DATABASE_URL is not set: run `make test`, which starts a disposable PostgreSQL")
    }
}
