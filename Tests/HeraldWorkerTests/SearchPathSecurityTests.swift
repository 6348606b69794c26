import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// What a role that may create in `public` can do to herald's functions. Supabase grants no app role
/// CREATE on `public`, but a database may (a dashboard click, an old default). PostgreSQL picks the best
/// argument match across the whole search_path, so `public.to_timestamp(numeric)` beats the built-in's
/// `double precision`, and an exact-typed overload beats a polymorphic or `any` built-in; a SECURITY
/// DEFINER body that finds it runs it as herald's owner. Every herald function resolves in pg_catalog
/// only and names herald's own objects `public.<name>` (sql/051).
@Suite struct SearchPathSecurityTests {
    /// The attacker's functions, created as `authenticated`: each records its name in a table the
    /// attacker owns and rewrites every profile's email and phone, then answers as the built-in would.
    static let overloads = """
        create table public.pwned (fn text not null);
        grant select, insert on public.pwned to public;
        create function public.pwned_mark(what text) returns void language plpgsql as $$
        begin
          insert into public.pwned values (what);
          update public.user_profiles set email = 'pwned@example.org', phone_e164 = '+15550666';
        end $$;
        create function public.to_timestamp(numeric) returns timestamptz language plpgsql as $$
        begin perform public.pwned_mark('to_timestamp(numeric)'); return pg_catalog.to_timestamp($1::float8); end $$;
        create function public.cardinality(uuid[]) returns int language plpgsql as $$
        begin perform public.pwned_mark('cardinality(uuid[])'); return pg_catalog.cardinality($1); end $$;
        create function public.to_jsonb(uuid[]) returns jsonb language plpgsql as $$
        begin perform public.pwned_mark('to_jsonb(uuid[])'); return pg_catalog.to_jsonb($1); end $$;
        create function public.unnest(text[]) returns setof text language plpgsql as $$
        begin perform public.pwned_mark('unnest(text[])'); return query select pg_catalog.unnest($1); end $$;
        create function public.pwned_add(uuid[], uuid) returns uuid[] language plpgsql as $$
        begin perform public.pwned_mark('array_agg(uuid)'); return pg_catalog.array_append($1, $2); end $$;
        create aggregate public.array_agg(uuid) (sfunc = public.pwned_add, stype = uuid[]);
        create function public.pwned_add(text[], text) returns text[] language plpgsql as $$
        begin perform public.pwned_mark('array_agg(text)'); return pg_catalog.array_append($1, $2); end $$;
        create aggregate public.array_agg(text) (sfunc = public.pwned_add, stype = text[]);
        """

    /// `jsonb_build_object` overloads with the types of the calls in `unregister_device_token`'s and
    /// `register_device_token`'s answers (keys are text; `variadic "any"` has no exact match to beat them).
    static let builders: [String: [String]] = [
        "unregister_device_token": ["text", "text", "text", "text", "text", "text", "text", "bigint"],
        "register_device_token": ["text", "uuid", "text", "uuid", "text", "text", "text", "text", "text", "text",
                                  "text", "bigint", "text", "text", "text", "text", "text", "text", "text", "text",
                                  "text", "text", "text", "text"],
    ]

    static func builder(_ rpc: String, _ types: [String]) -> String {
        let args = (1...types.count).map { "$\($0)" }.joined(separator: ", ")
        return """
            create function public.jsonb_build_object(\(types.joined(separator: ", "))) returns jsonb language plpgsql as $$
            begin perform public.pwned_mark('jsonb_build_object in \(rpc)'); return pg_catalog.jsonb_build_object(\(args)); end $$;
            """
    }

    /// Every name the attacker's functions record when they run.
    static let everyMark: Set<String> = [
        "to_timestamp(numeric)", "cardinality(uuid[])", "to_jsonb(uuid[])", "unnest(text[])", "array_agg(uuid)",
        "array_agg(text)", "jsonb_build_object in unregister_device_token", "jsonb_build_object in register_device_token",
    ]

    /// The database granted to allow `authenticated` to create in public, and the attacker's functions
    /// created there as A.
    static func plant(_ db: PGConnection, _ p: SecurityTests.People) throws {
        try db.execute("grant create on schema public to authenticated")
        try SecurityTests.act(db, as: "authenticated", p.a)
        try db.executeScript(overloads + builders.sorted { $0.key < $1.key }.map { builder($0.key, $0.value) }.joined())
    }

    /// The app's calls as A (a phone registered and unregistered, the list read by type, entries marked
    /// read, a reminder at a Unix-milliseconds instant), and the backend's send as the service role.
    static func callTheFunctions(_ db: PGConnection, _ p: SecurityTests.People) throws {
        try SecurityTests.act(db, as: "authenticated", p.a)
        let token = "ExponentPushToken[\(UUID().uuidString.prefix(22))]"
        _ = try db.query("select register_device_token(device_token => \(token), platform => 'ios', provider => 'expo')")
        _ = try db.query("select unregister_device_token(device_token => \(token))")
        _ = try db.query("select get_notifications(type => 'pattern_alert,reminder')")
        _ = try db.query("select mark_notifications_read(array[\(p.inbox[p.a]!)]::uuid[])")
        let at = String(Int64((Date().timeIntervalSince1970 + 86_400) * 1000))
        _ = try db.query("select schedule_reminder(reminder_type => 'daily', trigger => 'once', at => \(at))")

        try SecurityTests.act(db, as: "service_role", nil, claimsJSON: true)
        let request = SendNotificationTests.request(p.b, ["scheduled_at": .number(Double(at)!)])
        _ = try SendNotificationTests.send(db, request)
        try SecurityTests.owner(db)
    }

    static func marks(_ db: PGConnection) throws -> Set<String> {
        try SecurityTests.owner(db)
        return Set(try db.query("select distinct fn from public.pwned").compactMap { $0["fn"].string })
    }

    /// No function an app role creates in `public` runs inside herald's functions: the attacker's
    /// overloads of `to_timestamp`, `cardinality`, `to_jsonb`, `unnest`, `array_agg` and
    /// `jsonb_build_object` never run, and every profile keeps its email and phone.
    @Test func functionsAnAppRoleCreatesInPublicNeverRunAsHeraldsOwner() throws {
        try SecurityTests.supabase { tdb, db in
            let p = try SecurityTests.people(db)
            try Self.plant(db, p)
            try Self.callTheFunctions(db, p)
            #expect(try Self.marks(db) == [])
            let profiles = try db.query("select email, phone_e164 from user_profiles")
            #expect(profiles.count == 2)
            for row in profiles {
                #expect(row["email"].string == "x@example.com" && row["phone_e164"].string == "+15550100")
            }
        }
    }

    /// The same calls against the functions as the migrations before sql/051 left them (`public` on
    /// their path) run every one of the attacker's functions as the owner: the attack above is real, and
    /// each overload matches a call these functions make.
    @Test func theAttackersFunctionsRanAsTheOwnerBeforeFunctionsResolvedInPgCatalog() throws {
        let before = try Migrator(directory: TestDatabase.migrationsDirectory).migrations.filter { $0.version < 51 }
        try SecurityTests.supabase(migrations: Migrator(migrations: before)) { tdb, db in
            let p = try SecurityTests.people(db)
            try Self.plant(db, p)
            try Self.callTheFunctions(db, p)
            #expect(try Self.marks(db) == Self.everyMark)
            #expect(try db.query("select 1 from user_profiles where email = 'pwned@example.org'").count == 2)
        }
    }
}
