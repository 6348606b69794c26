import ArgumentParser
import Foundation
import HeraldCore
import HeraldWorker

struct Enqueue: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Queue a one-off notification; the next pass decides and sends it like any other.",
        discussion: "Prints the new row's id, for `herald explain`.")

    @Option(help: "The recipient's user id.")
    var to: String

    @Option(help: "push, sms, whatsapp, email, webhook or in_app.")
    var channel: String

    @Option(help: "pattern_alert, daily_forecast, prompt, reminder or system.")
    var kind: String = "system"

    @Option(help: "The title.")
    var title: String?

    @Option(help: "The body.")
    var body: String?

    @Option(help: "Not before this instant (ISO 8601 with a zone); default now.")
    var at: String?

    @Option(help: "watch, attention or critical.")
    var severity: String?

    @Option(help: "high, normal or low.")
    var priority: String = "normal"

    @Option(help: "A key that makes the enqueue idempotent: a second enqueue with it adds nothing.")
    var dedupeKey: String?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard UUID(uuidString: to) != nil else { throw ValidationError("--to must be a user id (uuid); got '\(to)'") }
        guard Channel(rawValue: channel) != nil else {
            throw ValidationError("--channel must be one of \(Channel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard Kind(rawValue: kind) != nil else {
            throw ValidationError("--kind must be one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let severity, Severity(rawValue: severity) == nil {
            throw ValidationError("--severity must be watch, attention or critical")
        }
        guard Priority(rawValue: priority) != nil else { throw ValidationError("--priority must be high, normal or low") }
        if let at, ISO8601.parse(at) == nil {
            throw ValidationError("--at must be an ISO 8601 instant with a zone, e.g. 2026-01-25T08:00:00Z")
        }
    }

    func run() throws {
        let (settings, _) = try common.start()
        var n = ManualNotification(recipient: UUID(uuidString: to)!, channel: Channel(rawValue: channel)!,
                                   kind: Kind(rawValue: kind)!)
        n.title = title
        n.body = body
        n.at = at.flatMap(ISO8601.parse)
        n.severity = severity.flatMap(Severity.init(rawValue:))
        n.priority = Priority(rawValue: priority)!
        n.dedupeKey = dedupeKey
        let db = try connect(settings)
        defer { db.close() }
        if let id = try databaseStep({ try n.insert(db) }) {
            print(id.uuidString.lowercased())
        } else {
            FileHandle.standardError.write(Data("herald: a notification with dedupe key '\(dedupeKey ?? "")' already exists; nothing added\n".utf8))
        }
    }
}
