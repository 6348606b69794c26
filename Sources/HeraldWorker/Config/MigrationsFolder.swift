import Foundation
import HeraldPostgres

/// Where `herald migrate` reads herald's migrations, and how it tells them from another app's.
///
/// A folder named by `--sql-dir` or `HERALD_SQL_DIR` is the one used, or the command stops naming it:
/// nothing else stands in for it. Without either, the first of these that holds herald's migrations:
/// the installed layout beside the binary (`<prefix>/bin/herald` → `<prefix>/share/herald/sql`), the
/// `sql/` of the checkout a development build runs from (`.build/<config>/herald`), then `./sql`.
///
/// A folder is herald's when its migration 1 is herald's first migration as released, file name and
/// checksum (`first`): an app's own `sql/001_orders.sql`, an empty folder or a typo'd path is refused
/// before anything is applied, so that no other migration is ever recorded as one of herald's.
///
///     let migrator = try MigrationsFolder.locate(flag: sqlDir, setting: settings["HERALD_SQL_DIR"])
public enum MigrationsFolder {
    /// herald's first migration as released: its file name and its checksum (`Migration.checksum`).
    /// A released migration is never edited, so this never changes (a test holds it to `sql/`).
    public static let first = (version: 1, file: "001_auth.sql", checksum: "a1eed27a1534ee4b")

    /// Where a folder came from, as the messages name it.
    public enum Origin: String, Sendable {
        case flag = "--sql-dir"
        case setting = "HERALD_SQL_DIR"
        case installed = "the installed layout"
        case checkout = "the checkout the binary was built in"
        case workingDirectory = "the working directory"
    }

    /// The installed layout's folder for a binary at `executable`: `<prefix>/share/herald/sql` beside
    /// `<prefix>/bin/herald` (`/usr/local/bin/herald` → `/usr/local/share/herald/sql`).
    public static func installed(executable: URL) -> URL {
        executable.deletingLastPathComponent().appendingPathComponent("../share/herald/sql").standardized
    }

    /// The running binary's path, as the kernel knows it (not as `argv[0]` says it, which a `PATH`
    /// lookup leaves bare).
    public static func runningExecutable() -> URL {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    }

    /// The folders looked at when neither `--sql-dir` nor `HERALD_SQL_DIR` names one, in order.
    public static func defaults(executable: URL, workingDirectory: String) -> [(URL, Origin)] {
        let bin = executable.deletingLastPathComponent()
        return [
            (installed(executable: executable), .installed),
            (bin.appendingPathComponent("../../../sql").standardized, .checkout),
            (URL(fileURLWithPath: workingDirectory).appendingPathComponent("sql").standardized, .workingDirectory),
        ]
    }

    /// herald's migrations: from the folder `flag` or else `setting` names, or else from the first of
    /// `defaults` that is herald's. Throws `MigrationsFolderError` when the folder named is missing or
    /// not herald's, or when no default is herald's.
    public static func locate(flag: String?, setting: String?,
                              executable: URL = runningExecutable(),
                              workingDirectory: String = FileManager.default.currentDirectoryPath) throws -> Migrator {
        if let flag { return try open(URL(fileURLWithPath: flag), origin: .flag) }
        if let setting, !setting.isEmpty { return try open(URL(fileURLWithPath: setting), origin: .setting) }
        let candidates = defaults(executable: executable, workingDirectory: workingDirectory)
        var seen: [String] = []
        for (url, origin) in candidates {
            do {
                return try open(url, origin: origin)
            } catch let error as MigrationsFolderError {
                seen.append("\(url.path): \(error.problem.short)")
            }
        }
        throw MigrationsFolderError(path: "", origin: .installed, problem: .noneFound(seen))
    }

    /// The migrations of `url` if it is herald's folder.
    public static func open(_ url: URL, origin: Origin) throws -> Migrator {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MigrationsFolderError(path: url.path, origin: origin, problem: .missing)
        }
        let migrator = try Migrator(directory: url)
        try recognise(migrator.migrations, path: url.path, origin: origin)
        return migrator
    }

    /// Throws unless `migrations` begin with herald's first migration as released.
    static func recognise(_ migrations: [Migration], path: String, origin: Origin) throws {
        guard let one = migrations.first else {
            throw MigrationsFolderError(path: path, origin: origin, problem: .empty)
        }
        let name = String(format: "%03d_%@.sql", one.version, one.name)
        guard one.version == first.version, name == first.file else {
            throw MigrationsFolderError(path: path, origin: origin, problem: .foreign(firstFile: name))
        }
        guard one.checksum == first.checksum else {
            throw MigrationsFolderError(path: path, origin: origin, problem: .altered(checksum: one.checksum))
        }
    }
}

/// A migrations folder `herald migrate` will not read: nothing was applied.
public struct MigrationsFolderError: Error, CustomStringConvertible, Equatable {
    public enum Problem: Equatable {
        /// Not there, or not a folder.
        case missing
        /// No `NNN_name.sql` file.
        case empty
        /// Its first migration is another app's.
        case foreign(firstFile: String)
        /// Its `001_auth.sql` is not the file herald released.
        case altered(checksum: String)
        /// No default folder is herald's: what each was.
        case noneFound([String])

        /// In a list of the folders looked at.
        var short: String {
            switch self {
            case .missing: "absent"
            case .empty: "no migration"
            case .foreign(let file): "another app's (\(file))"
            case .altered: "an altered \(MigrationsFolder.first.file)"
            case .noneFound: "none found"
            }
        }
    }

    public var path: String
    public var origin: MigrationsFolder.Origin
    public var problem: Problem

    public var description: String {
        let named = "the migrations folder \(path) (\(origin.rawValue))"
        let first = MigrationsFolder.first.file
        switch problem {
        case .missing:
            return "\(named) does not exist or is not a folder; nothing was applied"
        case .empty:
            return "\(named) holds no migration (no NNN_name.sql file), so it is not herald's; nothing was applied"
        case .foreign(let file):
            return "\(named) is not herald's: its first migration is \(file), and herald's is \(first); nothing was applied"
        case .altered(let checksum):
            return "\(named) is not herald's as released: its \(first) has checksum \(checksum), and herald's has \(MigrationsFolder.first.checksum); nothing was applied"
        case .noneFound(let seen):
            return "cannot find herald's migrations folder (looked at: \(seen.joined(separator: "; "))): "
                + "pass --sql-dir or set HERALD_SQL_DIR to the sql/ folder of this release"
        }
    }
}
