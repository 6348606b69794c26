import ArgumentParser
import Foundation
import HeraldCore
import HeraldPostgres
import HeraldWorker

// The operator's verbs: retry, cancel, reschedule, unlock (rows), pause and resume (channels and kinds).
// Each verb never touches a row a pass holds under a live lease, and writes a trail event with who and why.

extension Channel: ExpressibleByArgument {}
extension Kind: ExpressibleByArgument {}
extension QueueStatus: ExpressibleByArgument {}

/// Which rows: ids, or a filter. Shared by the row verbs.
struct RowSelection: ParsableArguments {
    @Argument(help: "Queue row ids (optional when a filter is given).")
    var ids: [String] = []

    @Option(help: "Only rows of this channel.")
    var channel: Channel?

    @Option(help: "Only rows of this kind.")
    var kind: Kind?

    @Option(help: "Only rows with this status.")
    var status: QueueStatus?

    @Option(help: "Only rows to this recipient (user id).")
    var recipient: String?

    @Option(help: "Only rows created more than this many hours ago.")
    var olderThan: Double?

    @Flag(help: "Print what would change; change nothing.")
    var dryRun = false

    @Option(help: "Why (stored in the trail).")
    var reason: String?

    func validate() throws {
        for id in ids where UUID(uuidString: id) == nil { throw ValidationError("'\(id)' is not a row id (a UUID)") }
        if let recipient, UUID(uuidString: recipient) == nil { throw ValidationError("--recipient must be a user id (a UUID)") }
        if let olderThan, !(olderThan.isFinite && olderThan >= 0 && olderThan < 1_000_000) {
            throw ValidationError("--older-than must be a number of hours")
        }
        if filter.isEmpty {
            throw ValidationError("name the rows: ids, or at least one of --channel, --kind, --status, --recipient, --older-than")
        }
    }

    var filter: RowFilter {
        var f = RowFilter()
        f.ids = ids.compactMap { UUID(uuidString: $0) }
        f.channel = channel?.rawValue
        f.kind = kind?.rawValue
        f.status = status?.rawValue
        f.recipient = recipient.flatMap { UUID(uuidString: $0) }
        f.createdBefore = olderThan.map { Date().addingTimeInterval(-$0 * 3600) }
        return f
    }
}

/// Who acts, for the trail: $USER@host.
func operatorName() -> String {
    let user = ProcessInfo.processInfo.environment["USER"] ?? "operator"
    return "\(user)@\(ProcessInfo.processInfo.hostName)"
}

/// Applies `action` to the selected rows and prints {"action":…,"dry_run":…,"rows":N,"ids":[…]}.
func operate(_ action: OperatorAction, _ rows: RowSelection, _ common: CommonOptions) throws {
    let (settings, _) = try common.start()
    let db = try connect(settings)
    defer { db.close() }
    let ids = try databaseStep {
        try Operator(db: db, actor: operatorName(), reason: rows.reason).apply(action, to: rows.filter, dryRun: rows.dryRun)
    }
    let out: JSONValue = ["action": .string(action.event.rawValue), "dry_run": .bool(rows.dryRun),
                          "rows": .number(Double(ids.count)),
                          "ids": .array(ids.prefix(1000).map { .string($0.uuidString.lowercased()) })]
    printJSON(out.jsonText)
}

struct Retry: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put failed rows (retrying or failed for good) back to due now, with their attempts reset.")
    @OptionGroup var rows: RowSelection
    @OptionGroup var common: CommonOptions
    func run() throws { try operate(.retry, rows, common) }
}

struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Skip rows that wait to be sent (reason `cancelled`).")
    @OptionGroup var rows: RowSelection
    @OptionGroup var common: CommonOptions
    func run() throws { try operate(.cancel, rows, common) }
}

struct Reschedule: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move rows that wait to be sent to another instant.")
    @Option(help: "The new instant (ISO 8601 with a zone).")
    var at: String
    @OptionGroup var rows: RowSelection
    @OptionGroup var common: CommonOptions
    func validate() throws {
        guard let instant = ISO8601.parse(at) else { throw ValidationError("--at must be an ISO 8601 instant with a zone") }
        // A row moved into the past would be sent late or expire unsent: `herald retry` sends it now.
        guard instant >= Date() else {
            throw ValidationError("--at \(at) is in the past; give a later instant (or `herald retry` to send now)")
        }
    }
    func run() throws { try operate(.reschedule(ISO8601.parse(at)!), rows, common) }
}

struct Unlock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Return rows whose lease expired (their pass died) to due now. Live leases are never touched.")
    @OptionGroup var rows: RowSelection
    @OptionGroup var common: CommonOptions
    func run() throws { try operate(.unlock, rows, common) }
}

/// The scope of a pause: a channel, a kind, or both.
struct PauseScope: ParsableArguments {
    @Option(help: "The channel to pause or resume.")
    var channel: Channel?
    @Option(help: "The kind to pause or resume.")
    var kind: Kind?
    @Option(help: "Why (shown by `herald status`).")
    var reason: String?

    func validate() throws {
        if channel == nil && kind == nil { throw ValidationError("name a --channel, a --kind, or both") }
    }
}

/// Runs `change` (pause or resume) for the scope and prints {"action":…,"changed":…}.
func changePause(_ action: String, _ scope: PauseScope, _ common: CommonOptions,
                 _ change: (Operator, String?, String?) throws -> Bool) throws {
    let (settings, _) = try common.start()
    let db = try connect(settings)
    defer { db.close() }
    let changed = try databaseStep {
        try change(Operator(db: db, actor: operatorName(), reason: scope.reason), scope.channel?.rawValue, scope.kind?.rawValue)
    }
    printJSON((["action": .string(action), "changed": .bool(changed)] as JSONValue).jsonText)
}

struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hold back due rows of a channel or kind in every pass on every host until resumed.",
        discussion: "Paused rows stay pending and are counted as `paused` in the summary, status and metrics.")
    @OptionGroup var scope: PauseScope
    @OptionGroup var common: CommonOptions
    func run() throws { try changePause("paused", scope, common) { try $0.pause(channel: $1, kind: $2) } }
}

struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Lift a pause (the same --channel/--kind as given to pause).")
    @OptionGroup var scope: PauseScope
    @OptionGroup var common: CommonOptions
    func run() throws { try changePause("resumed", scope, common) { try $0.resume(channel: $1, kind: $2) } }
}
