import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Herald's functions look names up only where no app role can create (sql/051, written by
/// scripts/qualify-functions.py): each has `search_path = pg_catalog, pg_temp`, the migration is what
/// the script writes from the migrations before it, and Supabase's advisor finds no mutable path.
@Suite struct QualifiedFunctionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Herald's functions (those in public the migrating role owns) whose `search_path` setting is
    /// missing, or names a schema that an app role (anon, authenticated, service_role, PUBLIC, or any
    /// role but the owner, a superuser or a built-in `pg_` role) may create in; each with its path.
    static func offenders(_ db: PGConnection) throws -> [String] {
        try db.query("""
            with roles as (
              select 'public'::text as role_name
              union all
              select rolname from pg_roles where rolname <> current_user and not rolsuper and rolname !~ '^pg_'
            )
            select p.oid::regprocedure::text || ': ' || coalesce(s.path, 'no search_path') as offender
              from pg_proc p
              left join lateral (select substr(c, 13) as path from unnest(p.proconfig) c
                                  where c like 'search_path=%') s on true
             where p.pronamespace = 'public'::regnamespace and p.proowner = current_user::regrole
               and (s.path is null or exists (
                     select from unnest(string_to_array(s.path, ',')) e
                       join pg_namespace n on n.nspname = btrim(btrim(e), '"')
                       cross join roles r
                      where has_schema_privilege(r.role_name, n.oid, 'CREATE')))
             order by 1
            """).compactMap { $0["offender"].string }
    }

    /// With CREATE on public granted to `authenticated` (as a database may have it), no herald function
    /// names a schema on its path that an app role may create in, nor lacks a search_path setting.
    @Test func noHeraldFunctionLooksNamesUpWhereAnAppRoleMayCreate() throws {
        try SecurityTests.supabase { tdb, db in
            try db.execute("grant create on schema public to authenticated")
            #expect(try db.query("select count(*)::int as n from pg_proc where pronamespace = 'public'::regnamespace").first?["n"].int ?? 0 >= 60)
            #expect(try Self.offenders(db) == [])
        }
    }

    /// sql/051 is exactly what `scripts/qualify-functions.py` writes from the migrations before it, so a
    /// function a new earlier migration defines or changes is not left out or undone: after adding one,
    /// run the script again (the migration's header says how).
    @Test(.enabled(if: Self.canRun("python3") && Self.canRun("psql"), "needs python3 and psql"))
    func theFunctionsMigrationIsWhatItsScriptWritesFromTheMigrationsBeforeIt() throws {
        let run = DeployTests.run("python3", [Self.root.appendingPathComponent("scripts/qualify-functions.py").path,
                                             try TestDatabase.serverURL(), "--check",
                                             "--output", "sql/051_functions_resolve_in_catalog.sql"])
        #expect(run?.status == 0, "\(run?.out ?? "python3 did not start")")
    }

    /// Supabase's Security Advisor (splinter's `function_search_path_mutable`) finds no herald function
    /// whose search_path a caller could change.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: Self.splinter.path),
                   "needs ../shared/vendor/splinter.sql (Supabase's advisor lints)"))
    func supabasesAdvisorFindsNoFunctionWithAMutableSearchPath() throws {
        try SecurityTests.supabase { tdb, db in
            let findings = try Self.advisor(db).filter { $0.name == "function_search_path_mutable" }
            #expect(findings.map(\.detail) == [])
        }
    }

    /// Nothing Supabase's advisor would show a team as a warning or an error on herald's schema (its
    /// INFO findings, such as a table herald alone reads having no policy, are by design).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: Self.splinter.path),
                   "needs ../shared/vendor/splinter.sql (Supabase's advisor lints)"))
    func supabasesAdvisorShowsNoWarningOrErrorOnHeraldsSchema() throws {
        try SecurityTests.supabase { tdb, db in
            let serious = try Self.advisor(db).filter { $0.level != "INFO" }
            #expect(serious.map { "\($0.level) \($0.name): \($0.detail)" } == [])
        }
    }

    static let splinter = root.deletingLastPathComponent().appendingPathComponent("shared/vendor/splinter.sql")

    /// splinter's findings on `db`, run as Supabase Studio runs it (its own `set local search_path`).
    static func advisor(_ db: PGConnection) throws -> [(name: String, level: String, detail: String)] {
        let text = try String(contentsOf: splinter, encoding: .utf8)
        let prelude = "set local search_path = '';"
        #expect(text.hasPrefix(prelude))
        return try db.transaction { db in
            try db.execute("set local search_path = ''")
            return try db.query("\(unescaped: String(text.dropFirst(prelude.count)))").map {
                (name: $0["name"].string ?? "?", level: $0["level"].string ?? "?", detail: $0["detail"].string ?? "?")
            }
        }
    }

    static func canRun(_ program: String) -> Bool {
        DeployTests.run("sh", ["-c", "command -v \(program)"])?.status == 0
    }
}
