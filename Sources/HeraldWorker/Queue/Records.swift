import Foundation
import HeraldCore

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

// MARK: - As the record SQL reads them (jsonb)

extension RowRecord {
    var json: JSONValue {
        var o: [String: JSONValue] = [
            "id": .string(id.uuidString),
            "status": .string(status.rawValue),
            "permanent": .bool(permanent),
            "attempts_delta": .number(Double(attemptsDelta)),
            "event": .string(event.rawValue),
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

extension DeliveryRecord {
    var json: JSONValue {
        var o: [String: JSONValue] = [
            "queue_id": .string(queueId.uuidString),
            "attempt": .number(Double(attempt)),
            "channel": .string(channel),
            "provider": .string(provider.rawValue),
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

extension TokenDeactivation {
    var json: JSONValue { ["id": .string(deviceTokenId.uuidString), "reason": .string(reason)] }
}

extension ChannelOptOut {
    var json: JSONValue {
        ["user_id": .string(userId.lowercased), "channel": .string(channel.rawValue), "reason": .string(reason)]
    }
}

extension ForecastSent {
    var json: JSONValue {
        ["queue_id": .string(queueId.lowercased), "user_id": .string(userId.lowercased), "date": .string(date.description)]
    }
}

extension ReceiptTicket {
    var json: JSONValue {
        var o: [String: JSONValue] = ["queue_id": .string(queueId.lowercased), "provider": .string(provider.rawValue),
                                      "ticket_id": .string(ticketId)]
        if let d = deviceTokenId { o["device_token_id"] = .string(d.lowercased) }
        if let c = createdAt { o["created_at"] = .string(ISO8601.string(c)) }
        return .object(o)
    }
}
