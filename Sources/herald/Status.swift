import ArgumentParser
import Foundation
import HeraldCore
import HeraldWorker

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show queue depth by status and channel, the oldest due row, stuck leases, dead rows and the last passes.")

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Option(help: "Report as if it were this instant (ISO 8601 with a zone), like `herald run --now`.")
    var now: String?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        if let now, ISO8601.parse(now) == nil {
            throw ValidationError("--now must be an ISO 8601 instant with a zone, e.g. 2026-01-25T03:00:00Z")
        }
    }

    func run() throws {
        let (settings, _) = try common.start()
        let db = try connect(settings)
        defer { db.close() }
        let at = now.flatMap(ISO8601.parse) ?? Date()
        let report = try databaseStep { try HeraldWorker.Status.report(db, now: at) }
        print(json ? report.jsonText : HeraldWorker.Status.text(report))
    }
}
