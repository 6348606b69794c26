import HeraldPostgres

/// `database.search_path`: whether a role other than herald's owner may create objects in a schema
/// where herald's functions look names up. Those are the schemas of each function's `search_path`
/// setting (the caller's path for one without), and the schema the functions live in, which their
/// bodies name (`public.herald_raise(…)`). A role that may create there can add a better-matching
/// overload of a built-in or of one of herald's functions, and a SECURITY DEFINER function would run it
/// as the owner. Since sql/051 the functions resolve in pg_catalog only, so `public` is what remains.
///
///     SearchPathCheck.check([.init(role: "authenticated", schema: "public")], schemas: ["pg_catalog", "public"])
///     // warn  database.search_path  authenticated may create in schema public, …
enum SearchPathCheck {
    struct Creator: Equatable, Sendable {
        var role: String
        var schema: String
    }

    /// Herald's functions: those in the schema of `notification_queue` owned by its owner, less any an
    /// extension installed. The roles: PUBLIC and every role but the owner, superusers and the built-in
    /// `pg_` roles.
    static func read(_ db: PGConnection) throws -> (schemas: [String], creators: [Creator]) {
        let rows = try db.query("""
            with owner as (
              select c.relowner, c.relnamespace from pg_catalog.pg_class c
               where c.oid = pg_catalog.to_regclass('notification_queue')
            ), paths as (
              select pg_catalog.btrim(pg_catalog.btrim(e), '"') as schema_name
                from pg_catalog.pg_proc p
                join owner o on p.pronamespace = o.relnamespace and p.proowner = o.relowner
                cross join lateral pg_catalog.unnest(coalesce(
                  (select pg_catalog.string_to_array(pg_catalog.substr(c, 13), ',')
                     from pg_catalog.unnest(p.proconfig) c where c like 'search_path=%'),
                  pg_catalog.current_schemas(false)::text[])) e
               where not exists (select from pg_catalog.pg_depend d where d.classid = 'pg_catalog.pg_proc'::regclass
                                   and d.objid = p.oid and d.deptype = 'e')
              union
              select n.nspname from pg_catalog.pg_namespace n join owner o on n.oid = o.relnamespace
            ), schemas as (
              select n.oid, n.nspname from pg_catalog.pg_namespace n join paths s on s.schema_name = n.nspname
            ), roles as (
              select 'public'::text as role_name
              union all
              select r.rolname from pg_catalog.pg_roles r, owner o
               where r.oid <> o.relowner and not r.rolsuper and r.rolname !~ '^pg_'
            )
            select s.nspname::text as schema_name, r.role_name
              from schemas s left join roles r on pg_catalog.has_schema_privilege(r.role_name, s.oid, 'CREATE')
             order by 1, 2
            """)
        let schemas = Array(Set(rows.compactMap { $0["schema_name"].string })).sorted()
        let creators = rows.compactMap { row -> Creator? in
            guard let role = row["role_name"].string, let schema = row["schema_name"].string else { return nil }
            return Creator(role: role == "public" ? "PUBLIC" : role, schema: schema)
        }
        return (schemas, creators)
    }

    static func check(_ creators: [Creator], schemas: [String]) -> DoctorCheck {
        guard !creators.isEmpty else {
            let named = schemas.isEmpty ? "no herald function found" : "schemas " + schemas.joined(separator: ", ")
            return DoctorCheck("database.search_path", .ok, "only herald's owner may create where herald's functions look names up (\(named))")
        }
        let pairs = creators.prefix(4).map { "\($0.role) may create in schema \($0.schema)" }
        let more = creators.count > 4 ? " and \(creators.count - 4) more" : ""
        let first = creators[0]
        return DoctorCheck("database.search_path", .warn, pairs.joined(separator: ", ") + more
            + ", where herald's functions look names up: a function created there can take the place of a built-in or of one of herald's in a call that runs as herald's owner; revoke it (revoke create on schema \(first.schema) from \(first.role))")
    }
}
