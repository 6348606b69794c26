import Foundation
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// What the design and the architecture say of the command line and the pass is what the binary and the
/// runner have: design.md §1 names every command and every flag of `herald run`; architecture.md names
/// the generator phases `Runner.steps` runs.
@Suite struct DocumentedCommandLineTests {
    /// The text of a doc's section, from its heading to the next one of the same level.
    static func section(_ file: String, _ heading: String) throws -> String {
        let text = try String(contentsOf: DeployTests.root.appendingPathComponent(file), encoding: .utf8)
        guard let start = text.range(of: "\n" + heading + "\n") else { return "" }
        let rest = text[start.upperBound...]
        let level = String(heading.prefix { $0 == "#" }) + " "
        return String(rest[..<(rest.range(of: "\n" + level)?.lowerBound ?? rest.endIndex)])
    }

    /// `herald <args>`'s standard output.
    static func help(_ args: [String]) throws -> String {
        let out = Pipe()
        let process = try HeraldBinary.start(args, env: [:], stdout: out)
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    /// design.md §1 shows every command `herald --help` lists, and every flag of `herald run` but the
    /// ones every command takes (`--quiet`, `--log-level`, which it names below the block).
    @Test func theDesignsCommandLineNamesEveryCommandAndEveryFlagOfRun() throws {
        let design = try Self.section("docs/design.md", "## 1. The command line")
        let commands = try Self.help(["--help"]).components(separatedBy: "SUBCOMMANDS:").last ?? ""
        let names = commands.matches(of: #/(?m)^  ([a-z]+) /#).map { String($0.1) }
        #expect(names.contains("doctor") && names.contains("run"), "\(commands)")
        for name in names {
            let shown = design.contains("herald \(name)") || design.contains("| \(name)")
            #expect(shown, "design.md §1 does not show herald \(name)")
        }
        let flags = Set(try Self.help(["run", "--help"]).matches(of: #/(?m)^  (--[a-z-]+)/#).map { String($0.1) })
        #expect(flags.contains("--follow"), "herald run --help lists no --follow")
        for flag in flags.subtracting(["--quiet", "--log-level", "--version", "--help"]).sorted() {
            let shown = design.contains(flag)
            #expect(shown, "design.md §1 does not show herald run \(flag)")
        }
    }

    /// architecture.md's walk through a pass names each generator `Runner.steps` runs by its type.
    @Test func theArchitectureNamesTheGeneratorsTheRunnerRuns() throws {
        let walk = try Self.section("docs/architecture.md", "## One pass, as data")
        let generators = Runner.steps.filter { $0 is any GeneratorStep }.map { String(describing: type(of: $0)) }
        #expect(generators.count == 4)
        for name in generators {
            let named = walk.contains("`\(name)`")
            #expect(named, "architecture.md does not name the generator \(name)")
        }
    }
}
