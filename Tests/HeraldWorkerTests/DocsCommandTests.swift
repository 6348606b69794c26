import Foundation
import HeraldTestSupport
import Testing

/// The commands the documentation gives are the commands that work: the README's tour runs as written
/// on a freshly migrated database, and no shell example in README.md or docs/ holds an elided value
/// (`…`) or a date already past, which a reader would copy as it stands.
@Suite(.enabled(if: Tools.psql, "needs psql (scripts/deps.sh installs PostgreSQL)"))
struct DocsCommandTests {
    /// The shell lines of every ```sh block of `markdown`, with their line numbers.
    static func shellLines(_ markdown: String) -> [(line: Int, text: String)] {
        var lines: [(Int, String)] = [], inShell = false, inBlock = false
        for (n, text) in markdown.components(separatedBy: "\n").enumerated() {
            if text.hasPrefix("```") {
                inShell = !inBlock && ["```sh", "```bash", "```shell"].contains(text.trimmingCharacters(in: .whitespaces))
                inBlock.toggle()
            } else if inShell {
                lines.append((n + 1, text))
            }
        }
        return lines
    }

    /// The part of a shell line a reader runs: before its comment (a `#` after a space, or starting it).
    static func command(_ line: String) -> String {
        if line.trimmingCharacters(in: .whitespaces).hasPrefix("#") { return "" }
        return line.components(separatedBy: " #").first ?? line
    }

    /// The README's step 3, as a reader copies it into a shell.
    static func tour() throws -> String {
        let readme = try String(contentsOf: DeployTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        let step = try #require(readme.range(of: "**3. Run once.**"))
        let open = try #require(readme.range(of: "```sh\n", range: step.upperBound..<readme.endIndex))
        let close = try #require(readme.range(of: "```", range: open.upperBound..<readme.endIndex))
        return String(readme[open.upperBound..<close.lowerBound])
    }

    /// On a database `herald migrate` just made, the tour adds a person, enqueues their push, sends it,
    /// shows its text, and explains the id it printed.
    @Test func theReadmeTourRunsAsWrittenOnAFreshDatabase() throws {
        try withTestDatabase { tdb in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tour-\(UUID())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/bash")
            p.arguments = ["-c", "set -euo pipefail\n" + (try Self.tour())]
            p.currentDirectoryURL = dir
            var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
            env["DATABASE_URL"] = tdb.url
            env["PATH"] = HeraldBinary.url.deletingLastPathComponent().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
            p.environment = env
            let out = Pipe(), err = Pipe()
            p.standardOutput = out
            p.standardError = err
            p.standardInput = FileHandle.nullDevice
            try p.run()
            let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "\(stderr)")
            #expect(stdout.contains(#""title":"Time for a walk""#), "the content, where the reader sees it:\n\(stdout)")
            #expect(stdout.contains("status sent"), "herald explain of the printed id:\n\(stdout)")
        }
    }

    /// No shell example holds `…` where a value goes, nor a date before today.
    @Test func noShellExampleHoldsAnElidedValueOrAPastDate() throws {
        let docs = try FileManager.default.contentsOfDirectory(atPath: DeployTests.root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        let today = String(ISO8601DateFormatter().string(from: Date()).prefix(10))
        let date = try Regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]")
        var found: [String] = []
        for file in ["README.md"] + docs.sorted() {
            let text = try String(contentsOf: DeployTests.root.appendingPathComponent(file), encoding: .utf8)
            for (line, shell) in Self.shellLines(text) {
                let command = Self.command(shell)
                if command.contains("…") { found.append("\(file):\(line): … in \(command)") }
                for match in command.matches(of: date) where String(command[match.range]) < today {
                    found.append("\(file):\(line): past date in \(command)")
                }
            }
        }
        #expect(found == [])
    }
}
