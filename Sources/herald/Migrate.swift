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
            from --sql-dir, else HERALD_SQL_DIR, and a folder either names is used or refused (exit 1), \
            never replaced; without either, from the first folder that holds herald's migrations of: \
            <prefix>/share/herald/sql beside <prefix>/bin/herald, the sql/ of the checkout a development \
            build runs from, ./sql. A folder whose first migration is not herald's 001_auth.sql as released \
            (another app's, or empty) is refused before anything is applied. With --quiet nothing is \
            printed unless it fails; --dry-run always prints what it would apply.
            """)

    @Flag(help: "List the migrations that would be applied; change nothing.")
    var dryRun = false

    @Option(help: "herald's migrations folder (else HERALD_SQL_DIR, else share/herald/sql beside the binary).")
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
            migrator = try MigrationsFolder.locate(flag: sqlDir, setting: settings["HERALD_SQL_DIR"])
        } catch {
            BestEffortOutput.standardError("herald: \(error)\n")
            throw ExitNow(code: .configuration)
        }
        let db = try connect(settings)
        defer { db.close() }
        let applied = try databaseStep { try migrator.migrate(db, dryRun: dryRun) }
        let names = applied.map { "\($0.version)_\($0.name)" }
        if dryRun {
            print(applied.isEmpty ? "herald migrate: nothing to apply" : "herald migrate: would apply \(names.joined(separator: ", "))")
        } else if !common.quiet {
            if applied.isEmpty {
                let count = try databaseStep { try Self.recorded(db) }
                print("herald migrate: nothing to apply; \(count) migrations already applied")
            } else {
                print("herald migrate: applied \(names.joined(separator: ", "))")
            }
        }
        if let n = queuePartitions, !dryRun {
            let previous = try databaseStep {
                try db.transaction { try $0.query("select herald_partition_queue(\(n)) as n").first?["n"].int ?? 1 }
            }
            guard !common.quiet else { return }
            print(previous == n
                  ? "herald migrate: the queue already has \(n) partition\(n == 1 ? "" : "s")"
                  : "herald migrate: the queue went from \(previous) to \(n) partition\(n == 1 ? "" : "s")")
        }
    }

    /// How many migrations the database's `schema_migrations` records.
    static func recorded(_ db: PGConnection) throws -> Int {
        try db.query("""
            select case when to_regclass('schema_migrations') is null then 0
                        else (select count(*)::int from schema_migrations) end as n
            """).first?["n"].int ?? 0
    }
}
