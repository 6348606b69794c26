import Foundation
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// The runner's phases: one of each `Phase`, in the order a pass runs them; only delivery's failure
/// ends a pass.
@Suite struct PassPhaseTests {
    @Test func everyPhaseRunsOnceInItsOrder() {
        #expect(Runner.steps.map(\.phase) == Phase.allCases)
    }

    @Test func onlyDeliveryIsNotIsolated() {
        #expect(Runner.steps.filter { !$0.isolated }.map(\.phase) == [.deliver])
    }

    /// `herald run --help` lists every phase `--only` takes.
    @Test func theOnlyOptionsHelpListsEveryPhase() throws {
        let out = Pipe()
        let process = try HeraldBinary.start(["run", "--help"], env: [:], stdout: out)
        let help = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let flat = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(flat.contains("from: " + Phase.allCases.map(\.rawValue).joined(separator: ", ") + "."), "\(flat)")
    }
}
