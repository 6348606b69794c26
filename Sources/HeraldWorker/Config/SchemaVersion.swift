import HeraldPostgres

/// The migrations this build of herald was written against. A pass refuses a database whose
/// `herald migrate` record says it is behind them: its statements could fail after the sends (a record
/// naming a key or column the database does not have yet), and the rows it leased would go out again
/// at each lease expiry. A database whose record cannot be read (no `schema_migrations`: the files
/// applied by another tool; or a role without the grant) is run against, with a warning: refusing it
/// would stop every notification on a guess.
///
///     try SchemaVersion.check(db)   // before the pass claims anything; throws SchemaBehind
public enum SchemaVersion {
    /// The highest migration in `sql/` when this binary was built (a test holds it to the folder).
    public static let required = 80

    /// The highest migration `herald migrate` recorded in `db`; nil when that record cannot be read.
    public static func applied(_ db: PGConnection) throws -> Int? {
        do {
            return try db.query("select coalesce(max(version), 0)::int as v from schema_migrations").first?["v"].int
        } catch let error as PGError
                    where error.sqlState == PGError.undefinedTable || error.sqlState == PGError.insufficientPrivilege {
            return nil
        }
    }

    /// Throws `SchemaBehind` when `db`'s record says it lacks a migration this binary needs; returns
    /// the applied version, or nil when the record cannot be read.
    @discardableResult
    public static func check(_ db: PGConnection) throws -> Int? {
        guard let applied = try applied(db) else { return nil }
        guard applied >= required else { throw SchemaBehind(applied: applied, required: required) }
        return applied
    }
}

/// The database's schema is older than this herald: `herald migrate` brings it up.
public struct SchemaBehind: Error, CustomStringConvertible {
    public let applied: Int
    public let required: Int

    public var description: String {
        "the database is at migration \(applied), and this herald needs migration \(required): run `herald migrate` with this release's sql/ before its passes"
    }
}
