import Foundation
import HeraldCore
import HeraldPostgres

/// `herald enqueue`: a manual one-off notification, through the same queue, rules and adapters as any.
public struct ManualNotification: Sendable {
    public var recipient: UUID
    public var channel: Channel
    /// The notification type (`notification_types`): one of herald's kinds or an app's own.
    public var kind: String
    public var title: String?
    public var body: String?
    public var at: Date?
    public var severity: Severity?
    public var priority: Priority = .normal
    public var dedupeKey: String?

    public init(recipient: UUID, channel: Channel, kind: String) {
        self.recipient = recipient
        self.channel = channel
        self.kind = kind
    }

    /// Why the row cannot be sent, before it is written: a recipient herald has no profile for, or a
    /// type that is not a row of `notification_types`. Nil when both are known.
    public func refusal(_ db: PGConnection) throws -> String? {
        let row = try db.query("""
            select exists (select 1 from user_profiles where user_id = \(recipient)) as person,
                   exists (select 1 from notification_types where type = \(kind)) as known
            """).first
        if row?["person"].bool != true {
            return "no user_profiles row has user_id \(recipient.lowercased): herald cannot reach that recipient"
        }
        if row?["known"].bool != true {
            return "unknown notification type \"\(kind)\": add it to notification_types first (docs/app-contract.md#notification-types)"
        }
        return nil
    }

    /// Inserts the row and its `enqueued` event; returns the new id, or nil when the dedupe key exists.
    public func insert(_ db: PGConnection) throws -> UUID? {
        var payload: [String: JSONValue] = ["source": "herald enqueue"]
        if let title { payload["title"] = .string(title) }
        if let body { payload["body"] = .string(body) }
        // Without a key of the operator's, a key of its own: the row is simply new.
        let key = dedupeKey ?? "manual:\(UUID().lowercased)"
        let row = NewNotification(
            recipient: recipient, member: recipient, channel: channel.rawValue, kind: kind, severity: severity,
            priority: priority, payload: .object(payload), scheduledAt: at ?? Date(), dedupeKey: key, reason: "manual")
        return try Enqueuer.insert([row], db: db, passId: nil)[key]
    }
}
