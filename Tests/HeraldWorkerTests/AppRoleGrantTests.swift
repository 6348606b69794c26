import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// App roles that appear after herald was migrated (a local database prepared after the fact) get what
/// herald's migrations give app roles once the operator asks: `select herald_grant_app_roles()`, which
/// scripts/supabase-like.sql runs (docs/app-contract.md#trying-the-rpcs-locally).
@Suite struct AppRoleGrantTests {
    /// Every privilege `role` holds on the tables, columns, sequences and functions of `public`.
    static func held(_ db: PGConnection, _ role: String) throws -> Set<String> {
        Set(try db.query("""
            select c.relname || ' ' || p.priv as held
              from pg_class c
              cross join unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) as p(priv)
             where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
               and has_table_privilege(\(role)::name, c.oid, p.priv)
            union all
            select c.relname || '.' || a.attname || ' ' || p.priv
              from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
              cross join unnest(array['SELECT', 'INSERT', 'UPDATE']) as p(priv)
             where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
               and has_column_privilege(\(role)::name, c.oid, a.attnum, p.priv)
            union all
            select c.relname || ' ' || p.priv
              from pg_class c cross join unnest(array['USAGE', 'SELECT', 'UPDATE']) as p(priv)
             where c.relnamespace = 'public'::regnamespace and c.relkind = 'S'
               and has_sequence_privilege(\(role)::name, c.oid, p.priv)
            union all
            select p.oid::regprocedure::text || ' EXECUTE' from pg_proc p
             where p.pronamespace = 'public'::regnamespace and has_function_privilege(\(role)::name, p.oid, 'EXECUTE')
            union all
            select 'schema auth USAGE' where has_schema_privilege(\(role)::name, 'auth', 'USAGE')
            """).compactMap { $0["held"].string })
    }

    /// The database as herald migrated it where the app roles did not exist yet: they hold nothing on
    /// its objects (roles belong to the whole server, so other tests' roles are stripped here).
    static func migratedBeforeTheRoles(_ body: (TestDB, PGConnection) throws -> Void) throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            try SecurityTests.prepareLikeSupabase(db)  // the roles exist on the server from here on
            try db.executeScript("""
                revoke all on all tables in schema public from anon, authenticated, service_role;
                revoke all on all sequences in schema public from anon, authenticated, service_role;
                revoke all on all functions in schema public from anon, authenticated, service_role;
                revoke all on schema auth from anon, authenticated, service_role;
                """)
            try body(tdb, db)
        }
    }

    /// Roles made after `herald migrate` hold nothing, and a second `herald migrate` has nothing to
    /// apply; once the operator calls `herald_grant_app_roles()`, `authenticated` and `anon` hold exactly
    /// what they hold on a database prepared before migrating, and the RPCs answer.
    @Test func appRolesMadeAfterHeraldWasMigratedAreGrantedWhenTheOperatorAsks() throws {
        try Self.migratedBeforeTheRoles { tdb, db in
            let user = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(user))")
            try SecurityTests.act(db, as: "authenticated", user, claimsJSON: true)
            SecurityTests.refused(db, "select get_notifications()", "the list before the grants")
            try SecurityTests.owner(db)
            #expect(try Migrator(directory: TestDatabase.migrationsDirectory).migrate(db).isEmpty)
            #expect(try Self.held(db, "authenticated").isEmpty)

            let found = try db.query("select herald_grant_app_roles()::text as r").first?["r"].string
            #expect(found == "{anon,authenticated,service_role}")
            try SecurityTests.supabase { reference, referenceDB in
                for role in ["anon", "authenticated"] {
                    #expect(try Self.held(db, role) == Self.held(referenceDB, role), "\(role)")
                }
                #expect(try Self.held(db, "anon").isEmpty)

                try SecurityTests.act(db, as: "authenticated", user, claimsJSON: true)
                #expect(try db.query("select get_notifications() ->> 'total_count' as n").first?["n"].string == "0")
                SecurityTests.refused(db, "select herald_grant_app_roles()", "the grant itself", message: "permission denied")
                try SecurityTests.act(db, as: "service_role", nil, claimsJSON: true)
                SecurityTests.refused(db, "select send_notification('{}')", "send without a request", state: "PT400")
                #expect(try db.execute("insert into notification_types (type) values ('appointment')") == 1)
                try SecurityTests.act(db, as: "anon", nil)
                SecurityTests.refused(db, "select get_notifications()", "anon")
            }
        }
    }

    /// The recipe's script, run again after migrating, grants the roles too; and run again on a
    /// database whose roles hold their grants, it changes nothing.
    @Test func theRecipeRunAfterMigratingGrantsTheRolesAndRunAgainChangesNothing() throws {
        try Self.migratedBeforeTheRoles { tdb, db in
            try SecurityTests.prepareLikeSupabase(db)
            let granted = try ["anon", "authenticated", "service_role"].map { try Self.held(db, $0) }
            #expect(granted[1].contains("get_notifications(integer,integer,text,boolean) EXECUTE"))
            #expect(granted[2].contains("send_notification(jsonb) EXECUTE"))
            try SecurityTests.prepareLikeSupabase(db)
            #expect(try ["anon", "authenticated", "service_role"].map { try Self.held(db, $0) } == granted)
        }
    }
}
