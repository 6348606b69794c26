import Foundation
import HeraldCore

/// What a pass writes back for one claimed row. Built by the pass, written in batches by `QueueStore`.
public struct RowRecord: Sendable {
    public var id: UUID
    /// `sent`, `failed`, `skipped`, or `pending` (deferred: back in the queue, the attempt not counted).
    public var status: QueueStatus
    public var permanent: Bool = false
    public var lastError: String?
    public var skipReason: String?
    public var runAfter: Date?
    public var sentAt: Date?
    public var providerMessageId: String?
    /// Added to `attempts`: −1 gives back the attempt the claim counted (a deferral is not an attempt).
    public var attemptsDelta: Int = 0
    /// The trail: `sent`, `skipped`, `deferred`, `failed`, `superseded`.
    public var event: String
    public var reason: String?
    public var details: JSONValue = .null
    /// A sent row's text as the recipient saw it: kept in `notification_history` (seed 001).
    public var title: String?
    public var body: String?

    public init(id: UUID, status: QueueStatus, event: String) {
        self.id = id
        self.status = status
        self.event = event
    }

    var json: JSONValue {
        var o: [String: JSONValue] = [
            "id": .string(id.uuidString),
            "status": .string(status.rawValue),
            "permanent": .bool(permanent),
            "attempts_delta": .number(Double(attemptsDelta)),
            "event": .string(event),
            "details": details,
        ]
        if let v = lastError { o["last_error"] = .string(v) }
        if let v = skipReason { o["skip_reason"] = .string(v) }
        if let v = runAfter { o["run_after"] = .string(ISO8601.string(v)) }
        if let v = sentAt { o["sent_at"] = .string(ISO8601.string(v)) }
        if let v = providerMessageId { o["provider_message_id"] = .string(v) }
        if let v = reason { o["reason"] = .string(v) }
        if let v = title { o["title"] = .string(v) }
        if let v = body { o["body"] = .string(v) }
        return .object(o)
    }
}

/// One attempt to one destination: a row of `notification_deliveries`.
public struct DeliveryRecord: Sendable {
    public var queueId: UUID
    public var attempt: Int
    public var channel: String
    public var provider: String
    public var destination: String
    public var deviceTokenId: UUID?
    public var outcome: String
    public var httpStatus: Int?
    public var errorCode: String?
    public var messageId: String?
    public var error: String?
    public var latencyMs: Int?

    var json: JSONValue {
        var o: [String: JSONValue] = [
            "queue_id": .string(queueId.uuidString),
            "attempt": .number(Double(attempt)),
            "channel": .string(channel),
            "provider": .string(provider),
            "destination": .string(destination),
            "outcome": .string(outcome),
        ]
        if let v = deviceTokenId { o["device_token_id"] = .string(v.uuidString) }
        // `int` columns: a value outside int4 (a provider's absurd status) is left out, not a failed flush.
        if let v = httpStatus, Int32(exactly: v) != nil { o["http_status"] = .number(Double(v)) }
        if let v = errorCode { o["provider_error_code"] = .string(v) }
        if let v = messageId { o["provider_message_id"] = .string(v) }
        if let v = error { o["error"] = .string(v) }
        if let v = latencyMs, Int32(exactly: v) != nil { o["latency_ms"] = .number(Double(v)) }
        return .object(o)
    }
}

/// An in-app notification: a row of `inbox`, written with the record that marks its queue row sent.
public struct InboxRecord: Sendable {
    public var queueId: UUID
    public var userId: UUID
    public var type: String
    public var priority: String
    public var title: String
    public var body: String
    public var deepLink: String?
    public var data: JSONValue
    /// The text in both languages (seed 003's NotificationRecord); `title`/`body` are the recipient's own.
    public var titleEn: String?
    public var titleAr: String?
    public var bodyEn: String?
    public var bodyAr: String?
    public var imageUrl: String?

    var json: JSONValue {
        var o: [String: JSONValue] = [
            "queue_id": .string(queueId.uuidString),
            "user_id": .string(userId.uuidString),
            "type": .string(type),
            "priority": .string(priority),
            "title": .string(title),
            "body": .string(body),
            "data": data,
        ]
        if let v = deepLink { o["deep_link"] = .string(v) }
        if let v = titleEn { o["title_en"] = .string(v) }
        if let v = titleAr { o["title_ar"] = .string(v) }
        if let v = bodyEn { o["body_en"] = .string(v) }
        if let v = bodyAr { o["body_ar"] = .string(v) }
        if let v = imageUrl { o["image_url"] = .string(v) }
        return .object(o)
    }
}

/// A destination that turned out to be dead: deactivate the device token, with the provider's reason.
public struct TokenDeactivation: Sendable {
    public var deviceTokenId: UUID
    public var reason: String

    var json: JSONValue { ["id": .string(deviceTokenId.uuidString), "reason": .string(reason)] }
}

/// A phone or address that is dead for a channel (Twilio 21610: the person replied STOP): the channel is
/// turned off for the recipient, with the provider's reason.
public struct ChannelOptOut: Sendable {
    public var userId: UUID
    public var channel: Channel
    public var reason: String

    var json: JSONValue {
        ["user_id": .string(userId.lowercased), "channel": .string(channel.rawValue), "reason": .string(reason)]
    }
}

/// A daily forecast whose notification went out.
public struct ForecastSent: Sendable {
    public var queueId: UUID
    public var userId: UUID
    public var date: LocalDate

    var json: JSONValue {
        ["queue_id": .string(queueId.lowercased), "user_id": .string(userId.lowercased), "date": .string(date.description)]
    }
}

/// A provider's ticket to check later (Expo): a row of `push_receipts`.
public struct ReceiptTicket: Sendable {
    public var queueId: UUID
    public var provider: String
    public var ticketId: String
    public var deviceTokenId: UUID?
    /// When the ticket was issued, on the pass's clock (`--now`): the receipts phase ages tickets on
    /// that clock too. Nil: the database's clock.
    public var createdAt: Date?

    public init(queueId: UUID, provider: String, ticketId: String, deviceTokenId: UUID?, createdAt: Date? = nil) {
        self.queueId = queueId
        self.provider = provider
        self.ticketId = ticketId
        self.deviceTokenId = deviceTokenId
        self.createdAt = createdAt
    }

    var json: JSONValue {
        var o: [String: JSONValue] = ["queue_id": .string(queueId.lowercased), "provider": .string(provider),
                                      "ticket_id": .string(ticketId)]
        if let d = deviceTokenId { o["device_token_id"] = .string(d.lowercased) }
        if let c = createdAt { o["created_at"] = .string(ISO8601.string(c)) }
        return .object(o)
    }
}

/// Everything one flush writes, in one transaction.
public struct RecordBatch: Sendable {
    public var rows: [RowRecord] = []
    public var deliveries: [DeliveryRecord] = []
    public var inbox: [InboxRecord] = []
    public var deactivations: [TokenDeactivation] = []
    public var optOuts: [ChannelOptOut] = []
    public var tickets: [ReceiptTicket] = []
    /// Daily forecasts delivered: their `notification_sent` is set.
    public var forecastsSent: [ForecastSent] = []
    /// Critical notifications enqueued again on the next channel (`escalatedFrom` is the recorded row).
    public var escalations: [NewNotification] = []

    public init() {}

    public var isEmpty: Bool { rows.isEmpty }

    /// Only what belongs to the rows in `ids` (the rows a fenced update actually recorded).
    func keeping(_ ids: Set<UUID>) -> RecordBatch {
        var out = RecordBatch()
        out.rows = rows.filter { ids.contains($0.id) }
        out.deliveries = deliveries.filter { ids.contains($0.queueId) }
        out.inbox = inbox.filter { ids.contains($0.queueId) }
        out.tickets = tickets.filter { ids.contains($0.queueId) }
        out.forecastsSent = forecastsSent.filter { ids.contains($0.queueId) }
        out.escalations = escalations.filter { $0.escalatedFrom.map(ids.contains) ?? false }
        // Dead destinations are facts about the destination, whoever recorded the row.
        out.deactivations = deactivations
        out.optOuts = optOuts
        return out
    }

    public mutating func append(_ other: RecordBatch) {
        rows += other.rows
        deliveries += other.deliveries
        inbox += other.inbox
        deactivations += other.deactivations
        optOuts += other.optOuts
        tickets += other.tickets
        forecastsSent += other.forecastsSent
        escalations += other.escalations
    }
}
