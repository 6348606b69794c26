import Foundation
import Testing

/// The platforms `Package.swift` declares are the ones the code can build on, and README.md says the same.
@Suite struct PlatformTests {
    /// Modules whose APIs need a macOS version, and the first that has them.
    static let macOSNeeds: [(module: String, version: Int)] = [("Synchronization", 15)]

    /// The macOS version `Package.swift` declares (`.macOS(.vNN)`).
    static func declaredMacOS() throws -> Int? {
        let manifest = try String(contentsOf: DeployTests.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        guard let match = manifest.firstMatch(of: /\.macOS\(\.v(\d+)\)/) else { return nil }
        return Int(match.1)
    }

    /// The code's imports.
    static func imports() throws -> Set<String> {
        var found: Set<String> = []
        let sources = DeployTests.root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String } ?? []
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /(?m)^import (\w+)/) { found.insert(String(match.1)) }
        }
        return found
    }

    /// Package.swift declares no macOS older than the APIs the code imports need (Synchronization's
    /// `Atomic` and `Mutex`: macOS 15), and README.md names the same version.
    @Test func theDeclaredMacOSIsOneTheCodeBuildsOn() throws {
        let declared = try #require(try Self.declaredMacOS(), "Package.swift declares no macOS version")
        let imports = try Self.imports()
        for need in Self.macOSNeeds where imports.contains(need.module) {
            #expect(declared >= need.version, "the code imports \(need.module), which needs macOS \(need.version); Package.swift declares \(declared)")
        }
        let readme = try String(contentsOf: DeployTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("declares macOS \(declared)"), "README.md does not say which macOS Package.swift declares")
    }
}
