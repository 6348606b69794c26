import Foundation

/// One migration file, `NNN_name.sql`.
public struct Migration: Sendable, Hashable, CustomStringConvertible {
    public let version: Int
    public let name: String
    public let text: String
    /// FNV-1a 64 of the file's UTF-8 bytes, 16 hex digits: a recorded migration whose file changed is
    /// refused, unless only its comments changed (`Migration.formerChecksums`).
    public let checksum: String

    public init(version: Int, name: String, text: String) {
        self.version = version
        self.name = name
        self.text = text
        self.checksum = FNV1a64.hex(Array(text.utf8))
    }

    /// `003_priority.sql`-style: the version and the name.
    public var description: String { "\(version) \(name)" }
}

public enum MigratorError: Error, CustomStringConvertible, Sendable {
    case notADirectory(String)
    case duplicateVersion(Int, [String])
    case checksumMismatch(version: Int, name: String, recorded: String, current: String)
    case migrationFailed(Migration, PGError)

    public var description: String {
        switch self {
        case .notADirectory(let path):
            return "migrations directory \(path) does not exist or is not a directory"
        case .duplicateVersion(let version, let files):
            return "two migration files have version \(version): \(files.joined(separator: ", "))"
        case .checksumMismatch(let version, let name, let recorded, let current):
            return "migration \(version) (\(name)) was applied with checksum \(recorded) but its file now has "
                + "checksum \(current): applied migrations must not be edited; add a new migration instead"
        case .migrationFailed(let migration, let error):
            return "migration \(migration.version) (\(migration.name)) failed and was rolled back: \(error)"
        }
    }
}

/// Applies the numbered SQL files of a directory, once each, in order, recording them in
/// `schema_migrations`.
///
///     let migrator = try Migrator(directory: URL(fileURLWithPath: "sql"))
///     let applied = try migrator.migrate(conn)            // [] when up to date
///     let wouldRun = try migrator.migrate(conn, dryRun: true)
///
/// Each migration runs in its own transaction (so a file must not contain BEGIN/COMMIT or
/// statements that cannot run in a transaction block). Concurrent runs are serialised by a
/// session-level advisory lock: the second waits, then finds nothing to do.
public struct Migrator: Sendable {
    /// The `pg_advisory_lock` key held while migrating ("herald" in ASCII, then "mig").
    public static let advisoryLockKey: Int64 = 0x6865_7261_6C64_6D69

    public let migrations: [Migration]
    /// Checksums accepted for a version besides its file's own: those of its text before comment-only
    /// edits, while the file has the checksum the edits gave it (`Migration.formerChecksums` unless given).
    public let formerChecksums: [Int: FormerChecksums]

    /// Reads `NNN_name.sql` files from `directory` (other files are ignored), in numeric order.
    public init(directory: URL, formerChecksums: [Int: FormerChecksums] = Migration.formerChecksums) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw MigratorError.notADirectory(directory.path) }
        var migrations: [Migration] = []
        var files: [Int: [String]] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() {
            guard let (version, name) = Self.parseFileName(file) else { continue }
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            migrations.append(Migration(version: version, name: name, text: text))
            files[version, default: []].append(file)
        }
        if let (version, names) = files.first(where: { $0.value.count > 1 }) {
            throw MigratorError.duplicateVersion(version, names.sorted())
        }
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.formerChecksums = formerChecksums
    }

    /// Migrations given in code (tests, embedded schemas).
    public init(migrations: [Migration], formerChecksums: [Int: FormerChecksums] = Migration.formerChecksums) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.formerChecksums = formerChecksums
    }

    /// Whether `recorded`, the checksum `schema_migrations` holds for `migration`'s version, says the
    /// database applied this migration: its file's checksum now, or one it had before comment-only edits
    /// that the file is still at.
    public func accepts(_ recorded: String, for migration: Migration) -> Bool {
        if recorded == migration.checksum { return true }
        guard let edits = formerChecksums[migration.version], edits.current == migration.checksum else { return false }
        return edits.former.contains(recorded)
    }

    /// `012_add_priority.sql` → (12, "add_priority").
    static func parseFileName(_ file: String) -> (Int, String)? {
        guard file.hasSuffix(".sql"), let underscore = file.firstIndex(of: "_") else { return nil }
        let digits = file[..<underscore]
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let version = Int(digits) else { return nil }
        let name = file[file.index(after: underscore)..<file.index(file.endIndex, offsetBy: -4)]
        return (version, String(name))
    }

    /// Applies the pending migrations, each in its own transaction, and returns them (with
    /// `dryRun`, returns what would be applied and changes nothing).
    @discardableResult
    public func migrate(_ conn: PGConnection, dryRun: Bool = false) throws -> [Migration] {
        try conn.execute("select pg_advisory_lock(\(Self.advisoryLockKey))")
        defer { _ = try? conn.execute("select pg_advisory_unlock(\(Self.advisoryLockKey))") }

        if dryRun { return try pending(conn) }
        try conn.executeScript("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let toApply = try pending(conn)
        for migration in toApply {
            do {
                try conn.transaction { conn in
                    try conn.executeScript(migration.text)
                    try conn.execute("""
                        insert into schema_migrations (version, name, checksum)
                        values (\(migration.version), \(migration.name), \(migration.checksum))
                        """)
                }
            } catch let error as PGError {
                throw MigratorError.migrationFailed(migration, error)
            }
        }
        return toApply
    }

    /// The migrations not yet recorded, in order. Throws `MigratorError.checksumMismatch` if a
    /// recorded migration's file has changed, other than by the comment-only edits `formerChecksums` lists.
    public func pending(_ conn: PGConnection) throws -> [Migration] {
        let exists = try conn.query("select to_regclass('schema_migrations') is not null as exists")[0]["exists"].bool ?? false
        guard exists else { return migrations }
        var recorded: [Int: (name: String, checksum: String)] = [:]
        for row in try conn.query("select version, name, checksum from schema_migrations") {
            guard let version = row["version"].int else { continue }
            recorded[version] = (row["name"].string ?? "", row["checksum"].string ?? "")
        }
        var pending: [Migration] = []
        for migration in migrations {
            if let applied = recorded[migration.version] {
                if !accepts(applied.checksum, for: migration) {
                    throw MigratorError.checksumMismatch(
                        version: migration.version, name: migration.name,
                        recorded: applied.checksum, current: migration.checksum)
                }
            } else {
                pending.append(migration)
            }
        }
        return pending
    }
}

/// FNV-1a, 64 bits: a stable, dependency-free checksum (not a cryptographic hash).
public enum FNV1a64 {
    public static func hash<Bytes: Sequence>(_ bytes: Bytes, seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64
    where Bytes.Element == UInt8 {
        var hash = seed
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// 16 lowercase hex digits.
    public static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = String(hash(bytes), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
