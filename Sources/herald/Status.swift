import ArgumentParser
import Foundation
import HeraldWorker

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show queue depth by status and channel, the oldest due row, stuck leases, dead rows and the last passes.")

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        let (settings, _) = try common.start()
        let db = try connect(settings)
        defer { db.close() }
        let report = try databaseStep { try HeraldWorker.Status.report(db) }
        print(json ? report.jsonText : HeraldWorker.Status.text(report))
    }
}
