import ArgumentParser
import Foundation
import HeraldHTTP
import HeraldWorker

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the decision trail of one queue row: what was decided, when, and why.",
        discussion: "Answers \"why did this person get, or not get, this notification?\"")

    @Argument(help: "The notification_queue id.")
    var id: String

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard UUID(uuidString: id) != nil else { throw ValidationError("'\(id)' is not a uuid") }
    }

    func run() throws {
        let (settings, _) = try common.start()
        let db = try connect(settings)
        defer { db.close() }
        do {
            let report = try databaseStep { try HeraldWorker.Explain.report(db, id: UUID(uuidString: id)!) }
            print(json ? report.jsonText : HeraldWorker.Explain.text(report))
        } catch let e as HeraldWorker.Explain.NotFound {
            BestEffortOutput.standardError("herald: \(e)\n")
            throw ExitNow(code: .configuration)
        }
    }
}
