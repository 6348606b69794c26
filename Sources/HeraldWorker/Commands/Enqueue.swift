import Foundation
import HeraldCore
import HeraldPostgres

/// `herald enqueue`: a manual one-off notification, through the same queue, rules and adapters as any.
public struct ManualNotification: Sendable {
    public var recipient: UUID
    public var channel: Channel
    public var kind: Kind
    public var title: String?
    public var body: String?
    public var at: Date?
    public var severity: Severity?
    public var priority: Priority = .normal
    public var dedupeKey: String?

    public init(recipient: UUID, channel: Channel, kind: Kind) {
        self.recipient = recipient
        self.channel = channel
        self.kind = kind
    }

    /// Inserts the row and its `enqueued` event; returns the new id, or nil when the dedupe key exists.
    public func insert(_ db: PGConnection) throws -> UUID? {
        var payload: [String: JSONValue] = ["source": "herald enqueue"]
        if let title { payload["title"] = .string(title) }
        if let body { payload["body"] = .string(body) }
        let when = at ?? Date()
        let result = try db.query("""
            with q as (
              insert into notification_queue (recipient_user_id, member_user_id, channel, kind, severity, priority,
                                              payload, scheduled_at, run_after, dedupe_key)
              values (\(recipient), \(recipient), \(channel.rawValue), \(kind.rawValue), \(severity?.rawValue),
                      \(priority.rawValue), \(JSONValue.object(payload).jsonText)::jsonb, \(when), \(when), \(dedupeKey))
              on conflict (dedupe_key) where dedupe_key is not null do nothing
              returning id
            ), e as (
              insert into notification_events (queue_id, event, reason) select id, 'enqueued', 'manual' from q
            )
            select id from q
            """)
        return result.first?["id"].uuid
    }
}
