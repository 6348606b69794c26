import ArgumentParser
import Foundation
import HeraldCore
import HeraldHTTP
import HeraldWorker

struct Enqueue: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Queue a one-off notification; the next pass decides and sends it like any other.",
        discussion: "Prints the new row's id, for `herald explain`.")

    @Option(help: "The recipient's user id.")
    var to: String

    @Option(help: "The channel.")
    var channel: Channel

    @Option(help: "Its notification type: one of herald's kinds or a type the app added to notification_types.")
    var kind: String = Kind.system.rawValue

    @Option(help: "The title.")
    var title: String?

    @Option(help: "The body.")
    var body: String?

    @Option(help: "Not before this instant (ISO 8601 with a zone); default now.")
    var at: String?

    @Option(help: "How serious it is.")
    var severity: Severity?

    @Option(help: "Delivery urgency.")
    var priority: Priority = .normal

    @Option(help: "A key that makes the enqueue idempotent: a second enqueue with it adds nothing.")
    var dedupeKey: String?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard UUID(uuidString: to) != nil else { throw ValidationError("--to must be a user id (uuid); got '\(to)'") }
        guard NotificationType.isValidName(kind) else {
            throw ValidationError("--kind must be a notification type: lowercase letters, digits and _; got '\(kind)'")
        }
        if let at, ISO8601.parse(at) == nil {
            throw ValidationError("--at must be an ISO 8601 instant with a zone, e.g. 2026-01-25T08:00:00Z")
        }
    }

    func run() throws {
        let (settings, _) = try common.start()
        guard let recipient = UUID(uuidString: to) else { throw ValidationError("--to must be a user id (uuid); got '\(to)'") }
        var n = ManualNotification(recipient: recipient, channel: channel, kind: kind)
        n.title = title
        n.body = body
        n.at = at.flatMap(ISO8601.parse)
        n.severity = severity
        n.priority = priority
        n.dedupeKey = dedupeKey
        let db = try connect(settings)
        defer { db.close() }
        // A row that could never be sent is refused here (exit 1), not failed at send time.
        if let why = try databaseStep({ try n.refusal(db) }) {
            BestEffortOutput.standardError("herald: \(why); nothing added\n")
            throw ExitNow(code: .configuration)
        }
        if let id = try databaseStep({ try n.insert(db) }) {
            print(id.uuidString.lowercased())
        } else {
            BestEffortOutput.standardError("herald: a notification with dedupe key '\(dedupeKey ?? "")' already exists; nothing added\n")
        }
    }
}

// With Channel and Kind (Operate.swift): argument-parser lists the values in the help and refuses others.
extension Severity: ExpressibleByArgument {}
extension Priority: ExpressibleByArgument {}
