import Foundation
import HeraldPostgres

/// What `herald doctor` reads of the database, for `DatabaseCheck` to judge. Reading changes nothing:
/// catalog queries, and one `LISTEN` with a `NOTIFY` from a second connection on a channel of the
/// doctor's own.
///
///     let facts = try DatabaseFacts.read(db, url: url, listenWait: 2)
struct DatabaseFacts {
    var role: String
    var database: String
    var serverVersion: String
    /// The newest migration `herald migrate` recorded; nil when that record cannot be read.
    var appliedMigration: Int?
    /// `privilege on table` for each grant of `PassGrants.tables` the role lacks.
    var missingPrivileges: [String]
    /// `PassGrants.functions` the role may not execute.
    var missingExecute: [String]
    /// `PassGrants.tables` and `PassGrants.functions` the database does not have: it was never migrated,
    /// or is behind.
    var missingTables: [String] = []
    var missingFunctions: [String] = []
    /// Tables whose rows row-level security filters for this role (it is neither their owner nor BYPASSRLS).
    var rowSecurity: [String]
    /// The schemas where herald's functions look names up, and who besides the owner may create in them.
    var functionSchemas: [String] = []
    var schemaCreators: [SearchPathCheck.Creator] = []
    var listen: Listen

    /// Whether a notification reaches a listening connection.
    enum Listen: Equatable {
        case works
        /// None arrived within this many seconds.
        case silent(waited: Double)
        /// `LISTEN` or `NOTIFY` failed, with the error.
        case refused(String)
    }

    /// The channel the doctor listens on.
    static let channel = "herald_doctor"

    static func read(_ db: PGConnection, url: String, listenWait: Double) throws -> DatabaseFacts {
        let who = try db.query("""
            select current_user::text as role, current_database()::text as db, current_setting('server_version') as version
            """).first
        let tables = PassGrants.tables.flatMap { entry in entry.privileges.map { _ in entry.table } }
        let privileges = PassGrants.tables.flatMap { $0.privileges.map(\.rawValue) }
        let missing = try db.query("""
            select g.priv || ' on ' || g.tbl as missing
              from unnest(\(tables)::text[], \(privileges)::text[]) with ordinality as g(tbl, priv, n)
             where to_regclass(g.tbl) is not null and not has_table_privilege(g.tbl, g.priv)
             order by g.n
            """).compactMap { $0["missing"].string }
        let hidden = try db.query("""
            select t.tbl from unnest(\(PassGrants.tables.map(\.table))::text[]) with ordinality as t(tbl, n)
             where to_regclass(t.tbl) is not null and row_security_active(t.tbl)
             order by t.n
            """).compactMap { $0["tbl"].string }
        let noExecute = try db.query("""
            select distinct p.proname::text as name from pg_proc p
             where p.proname = any(\(PassGrants.functions)::text[]) and pg_function_is_visible(p.oid)
               and not has_function_privilege(p.oid, 'execute')
             order by 1
            """).compactMap { $0["name"].string }
        let searchPath = try SearchPathCheck.read(db)
        var facts = DatabaseFacts(
            role: who?["role"].string ?? "?", database: who?["db"].string ?? "?",
            serverVersion: who?["version"].string ?? "?", appliedMigration: try SchemaVersion.applied(db),
            missingPrivileges: missing,
            missingExecute: noExecute, rowSecurity: hidden,
            functionSchemas: searchPath.schemas, schemaCreators: searchPath.creators,
            listen: listen(db, url: url, wait: listenWait))
        try readAbsent(db, into: &facts)
        return facts
    }

    /// The tables and functions a pass needs that the database does not have.
    static func readAbsent(_ db: PGConnection, into facts: inout DatabaseFacts) throws {
        facts.missingTables = try db.query("""
            select t.tbl from unnest(\(PassGrants.tables.map(\.table))::text[]) with ordinality as t(tbl, n)
             where to_regclass(t.tbl) is null
             order by t.n
            """).compactMap { $0["tbl"].string }
        facts.missingFunctions = try db.query("""
            select f.name from unnest(\(PassGrants.functions)::text[]) with ordinality as f(name, n)
             where not exists (select 1 from pg_proc p where p.proname = f.name and pg_function_is_visible(p.oid))
             order by f.n
            """).compactMap { $0["name"].string }
    }

    /// Listens on `db`, notifies from a second connection, and waits up to `wait` seconds for the
    /// notification to arrive, asking the server between waits (a pooler that lends each transaction
    /// another server connection never delivers it).
    static func listen(_ db: PGConnection, url: String, wait: Double) -> Listen {
        do {
            try db.execute("listen \(identifier: channel)")
            defer { _ = try? db.execute("unlisten \(identifier: channel)") }
            let other = try PGConnection(url, applicationName: "herald-doctor")
            defer { other.close() }
            try other.execute("select pg_notify(\(channel), 'herald doctor')")
            let deadline = Date().addingTimeInterval(wait)
            repeat {
                try db.execute("select 1")
                if try db.takeNotifications().contains(where: { $0.channel == channel }) { return .works }
                usleep(50_000)
            } while Date() < deadline
            return .silent(waited: wait)
        } catch {
            return .refused("\(error)")
        }
    }
}
