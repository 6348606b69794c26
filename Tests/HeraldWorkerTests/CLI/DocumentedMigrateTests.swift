import Foundation
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// What the docs say of `herald migrate` is what it does: the README installs the migrations where the
/// binary looks for them, and every documented `herald migrate` line works as written from an app's own
/// repository (whose `sql/` is not herald's) with herald installed as the README installs it.
@Suite struct DocumentedMigrateTests {
    static let root = DeployTests.root

    /// One documented command: where it is, and its arguments after `herald`.
    struct Command: CustomStringConvertible {
        var place: String
        var arguments: [String]
        var description: String { "\(place): herald \(arguments.joined(separator: " "))" }
    }

    /// The lines of the docs' code blocks, and of the deployment files, as (place, line).
    static func commandLines() throws -> [(String, String)] {
        var out: [(String, String)] = []
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        for file in ["README.md"] + docs {
            var fenced = false
            for (n, line) in try lines(file).enumerated() {
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { fenced.toggle(); continue }
                if fenced { out.append(("\(file):\(n + 1)", line)) }
            }
        }
        for file in ["crontab.example"] {
            for (n, line) in try lines(file).enumerated() { out.append(("\(file):\(n + 1)", line)) }
        }
        return out
    }

    static func lines(_ file: String) throws -> [String] {
        try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8).components(separatedBy: "\n")
    }

    /// Every `herald migrate …` in those lines, its arguments up to a comment or the next command. A
    /// synopsis (`[--dry-run]`) is not a command.
    static func documentedMigrations() throws -> [Command] {
        try commandLines().compactMap { place, line in
            guard let range = line.range(of: "herald migrate"), !line.contains("[") else { return nil }
            var arguments = ["migrate"]
            for word in line[range.upperBound...].split(separator: " ").map(String.init) {
                if word.hasPrefix("#") || ["&&", ";", "|", "||"].contains(word) || word.hasPrefix(">") || word.hasPrefix("2>") { break }
                arguments.append(word.trimmingCharacters(in: CharacterSet(charactersIn: "`")))
            }
            return Command(place: place, arguments: arguments.filter { !$0.isEmpty })
        }
    }

    /// The README's install step puts the binary and the migrations where the binary looks: its
    /// `<prefix>/share/herald/sql` for `<prefix>/bin/herald`.
    @Test func theReadmeInstallsTheMigrationsWhereTheBinaryLooks() throws {
        let lines = try Self.lines("README.md")
        let binary = try #require(lines.first { $0.contains("install .build/release/herald ") }?
            .split(separator: " ").last.map(String.init), "no install line for the binary")
        let copy = try #require(lines.first { $0.contains("cp -r sql ") }, "no line copying sql/")
        let destination = try #require(copy.components(separatedBy: "cp -r sql ").last?
            .split(separator: " ").first.map(String.init))
        let installed = URL(fileURLWithPath: destination).appendingPathComponent("sql").standardized.path
        #expect(installed == MigrationsFolder.installed(executable: URL(fileURLWithPath: binary)).path,
                "the README copies sql/ to \(installed); \(binary) looks in its ../share/herald/sql")
    }

    /// Each documented `herald migrate` runs and exits 0, in the docs' order, against a fresh database,
    /// from an app's repository, with herald installed as the README says; herald's migrations are
    /// applied, and the app's are not.
    @Test func everyDocumentedMigrateWorksAsWritten() throws {
        let commands = try Self.documentedMigrations()
        #expect(commands.count >= 3, "\(commands)")
        let installation = try HeraldCLI.Installation()
        let app = try HeraldCLI.AppRepository()
        try MigrateCommandTests.emptyDatabase { tdb in
            for command in commands {
                let r = try HeraldCLI.run(command.arguments, env: ["DATABASE_URL": tdb.url], in: app.url,
                                          executable: installation.binary)
                #expect(r.status == 0, "\(command)\n\(r.stdout)\n\(r.stderr)")
            }
            let files = try Migrator(directory: TestDatabase.migrationsDirectory).migrations.count
            let db = try tdb.connect()
            defer { db.close() }
            #expect(try db.query("select count(*)::int as n from schema_migrations").first?["n"].int == files)
            #expect(try db.query("select to_regclass('orders') is null as absent").first?["absent"].bool == true)
        }
    }
}
