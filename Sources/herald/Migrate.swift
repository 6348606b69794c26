import ArgumentParser
import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import HeraldWorker

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the sql/ migrations in order, each once, under an advisory lock.",
        discussion: """
            Applied migrations are recorded in schema_migrations. Two `herald migrate` started at once are \
            safe: the second waits for the first, then finds nothing left to do. The migrations are read \
            from --sql-dir, else HERALD_SQL_DIR, else ./sql, else the sql/ folder of herald's checkout.
            """)

    @Flag(help: "List the migrations that would be applied; change nothing.")
    var dryRun = false

    @Option(help: "The folder of numbered .sql files.")
    var sqlDir: String?

    @Option(help: """
        Rebuild notification_queue as this many hash partitions by recipient (1: one plain table), keeping \
        its rows; `herald run --shard K/N` then works in one. Takes the queue's lock for the copy.
        """)
    var queuePartitions: Int?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        if let n = queuePartitions, !(1...Shard.maxCount).contains(n) {
            throw ValidationError("--queue-partitions must be between 1 and \(Shard.maxCount)")
        }
    }

    func run() throws {
        let (settings, _) = try common.start()
        let migrator: Migrator
        do {
            migrator = try Migrator(directory: URL(fileURLWithPath: try locateSQL(settings)))
        } catch {
            BestEffortOutput.standardError("herald: \(error)\n")
            throw ExitNow(code: .configuration)
        }
        let db = try connect(settings)
        defer { db.close() }
        let applied = try databaseStep { try migrator.migrate(db, dryRun: dryRun) }
        let names = applied.map { "\($0.version)_\($0.name)" }
        if applied.isEmpty {
            print("herald migrate: nothing to apply; \(migrator.migrations.count) migrations already applied")
        } else {
            print("herald migrate: \(dryRun ? "would apply" : "applied") \(names.joined(separator: ", "))")
        }
        if let n = queuePartitions, !dryRun {
            let previous = try databaseStep {
                try db.transaction { try $0.query("select herald_partition_queue(\(n)) as n").first?["n"].int ?? 1 }
            }
            print(previous == n
                  ? "herald migrate: the queue already has \(n) partition\(n == 1 ? "" : "s")"
                  : "herald migrate: the queue went from \(previous) to \(n) partition\(n == 1 ? "" : "s")")
        }
    }

    func locateSQL(_ settings: Settings) throws -> String {
        var candidates: [String] = []
        if let d = sqlDir { candidates.append(d) }
        if let d = settings["HERALD_SQL_DIR"] { candidates.append(d) }
        candidates.append(FileManager.default.currentDirectoryPath + "/sql")
        // .build/<config>/herald → the checkout's sql/
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        candidates.append(exe.deletingLastPathComponent().appendingPathComponent("../../../sql").standardized.path)
        candidates.append(exe.deletingLastPathComponent().appendingPathComponent("../share/herald/sql").standardized.path)
        var isDir: ObjCBool = false
        for c in candidates where FileManager.default.fileExists(atPath: c, isDirectory: &isDir) && isDir.boolValue {
            return c
        }
        if let d = sqlDir ?? settings["HERALD_SQL_DIR"] {
            throw ConfigError("the migrations folder \(d) does not exist")
        }
        throw ConfigError("cannot find the sql/ migrations folder: pass --sql-dir or set HERALD_SQL_DIR")
    }
}
