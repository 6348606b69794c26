import Foundation
import HeraldTestSupport
import Testing

/// docs/schema.sql (the schema as a fresh `herald migrate` leaves it) and docs/schema-index.md (the
/// migration that last defined each object) are what scripts/schema.py makes from sql/: after adding a
/// migration, `make schema` writes them again. The script needs python3, psql and pg_dump, which
/// scripts/deps.sh installs; without them these tests fail rather than let the files drift.
@Suite struct SchemaFileTests {
    static let script = DeployTests.root.appendingPathComponent("scripts/schema.py").path

    /// Runs scripts/schema.py against the test server with the built herald binary.
    static func schema(_ arguments: [String]) throws -> (status: Int32, out: String) {
        let run = DeployTests.run("python3", [script, try TestDatabase.serverURL(),
                                             "--herald", HeraldBinary.url.path] + arguments)
        return try #require(run, "python3 did not start: scripts/deps.sh installs it")
    }

    /// The schema file and its index are exactly what the migrations of sql/ make.
    @Test func theSchemaFileIsWhatTheMigrationsMake() throws {
        let run = try Self.schema(["--check"])
        #expect(run.status == 0, "\(run.out)")
    }

    /// A migration that changes a function's body fails the check, which says to run `make schema`,
    /// until the files are made again; the index then names that migration as the function's last
    /// definition and the first migration as where it was made.
    @Test func aMigrationThatChangesAFunctionFailsTheCheckUntilTheSchemaIsMadeAgain() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-schema-\(UUID().uuidString)")
        let sql = dir.appendingPathComponent("sql")
        try FileManager.default.createDirectory(at: sql, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(at: TestDatabase.migrationsDirectory.appendingPathComponent("001_auth.sql"),
                                         to: sql.appendingPathComponent("001_auth.sql"))
        let files = ["--sql-dir", sql.path, "--schema", dir.appendingPathComponent("schema.sql").path,
                     "--index", dir.appendingPathComponent("schema-index.md").path]

        #expect(try Self.schema(files).status == 0)
        #expect(try Self.schema(files + ["--check"]).status == 0)
        try """
            create or replace function herald_is_timezone(tz text) returns boolean
            language sql stable
            as $$ select exists (select from pg_catalog.pg_timezone_names where name = tz) $$;
            """.write(to: sql.appendingPathComponent("002_time_zones_by_name.sql"), atomically: true, encoding: .utf8)

        let stale = try Self.schema(files + ["--check"])
        #expect(stale.status == 1, "\(stale.out)")
        #expect(stale.out.contains("run `make schema`"), "\(stale.out)")
        #expect(stale.out.contains("pg_timezone_names"), "the difference is shown: \(stale.out)")

        #expect(try Self.schema(files).status == 0)
        #expect(try Self.schema(files + ["--check"]).status == 0)
        let schema = try String(contentsOf: dir.appendingPathComponent("schema.sql"), encoding: .utf8)
        #expect(schema.contains("-- Last defined in sql/002_time_zones_by_name.sql\n--\n\nCREATE FUNCTION public.herald_is_timezone"))
        let index = try String(contentsOf: dir.appendingPathComponent("schema-index.md"), encoding: .utf8)
        #expect(index.contains("| `herald_is_timezone(text)` | sql/001_auth.sql | sql/002_time_zones_by_name.sql |"), "\(index)")
    }
}
