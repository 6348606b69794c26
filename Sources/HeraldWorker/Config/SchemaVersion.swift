import HeraldPostgres

/// The migrations this build of herald was written against. A pass refuses a database whose schema
/// is behind them: its statements could fail after the sends (a record naming a key or column the
/// database does not have yet), and the rows it leased would go out again at each lease expiry.
///
///     try SchemaVersion.check(db)   // before the pass claims anything; throws SchemaBehind
public enum SchemaVersion {
    /// The highest migration in `sql/` when this binary was built (a test holds it to the folder).
    public static let required = 29

    /// The highest migration `herald migrate` recorded in `db`; nil when it never ran there.
    public static func applied(_ db: PGConnection) throws -> Int? {
        do {
            return try db.query("select coalesce(max(version), 0)::int as v from schema_migrations").first?["v"].int
        } catch let error as PGError where error.sqlState == PGError.undefinedTable {
            return nil
        }
    }

    /// Throws `SchemaBehind` when `db` lacks a migration this binary needs; returns the applied version.
    @discardableResult
    public static func check(_ db: PGConnection) throws -> Int {
        let applied = try applied(db)
        guard let applied, applied >= required else { throw SchemaBehind(applied: applied, required: required) }
        return applied
    }
}

/// The database's schema is older than this herald: `herald migrate` brings it up.
public struct SchemaBehind: Error, CustomStringConvertible {
    public let applied: Int?
    public let required: Int

    public var description: String {
        let now = applied.map { "is at migration \($0)" } ?? "has no herald migrations recorded (no schema_migrations table)"
        return "the database \(now), and this herald needs migration \(required): run `herald migrate` with this release's sql/ before its passes"
    }
}
