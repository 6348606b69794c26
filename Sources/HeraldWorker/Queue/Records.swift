import Foundation
import HeraldCore
import HeraldPostgres

/// The text of a user's notification entry (`inbox`, written when the notification was enqueued) as the
/// pass rendered it: the record that sends a row fills the entry's text when the payload had none.
public struct InboxRecord: Sendable {
    public var queueId: UUID
    public var userId: UUID
    /// The notification the entry stands for: its group, or its queue row's id.
    public var key: String
    public var type: String
    public var priority: String
    public var title: String
    public var body: String
    public var deepLink: String?
    public var data: JSONValue
    /// The text in both languages, for the app's notification list; `title`/`body` are the recipient's own.
    public var titleEn: String?
    public var titleAr: String?
    public var bodyEn: String?
    public var bodyAr: String?
    public var imageUrl: String?

    var json: JSONValue {
        var o: [String: JSONValue] = [
            "queue_id": .string(queueId.uuidString),
            "user_id": .string(userId.uuidString),
            "key": .string(key),
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

    /// The rows whose delivery rows tell their story: a send's outcome (`sent`, or `failed` after
    /// sends) with at least one delivery row in this batch. The first of them carries the decision
    /// (event, reason, details) and no trail event is written; every other row keeps its event.
    var toldByDeliveries: Set<UUID> {
        let sent = Set(deliveries.map(\.queueId))
        return Set(rows.filter { ($0.event == .sent || $0.event == .failed) && sent.contains($0.id) }.map(\.id))
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

// MARK: - As the record SQL reads them

/// The rows' outcomes as one array per column, bound to `unnest(…)`: typed arrays cost the database far
/// less to read than a jsonb document of the same rows (only the trail's details are jsonb).
struct RowColumns {
    var ids: [UUID] = [], statuses: [String] = [], permanent: [Bool] = []
    var lastErrors = PGNullableArray<String>(), skipReasons = PGNullableArray<String>()
    var runAfter = PGNullableArray<Date>(), sentAt = PGNullableArray<Date>()
    var providerMessageIds = PGNullableArray<String>()
    var attemptsDeltas: [Int32] = [], events: [String] = [], reasons = PGNullableArray<String>()
    /// Each row's decision trail as the text of a JSON object with at least one key (NUL written as
    /// U+FFFD: jsonb refuses `\u0000`), or nil when it has none (the event's details then hold only the attempt).
    var details = PGNullableArray<String>()
    /// Whether the row's delivery rows carry its decision (`RecordBatch.toldByDeliveries`): no event.
    var told: [Bool] = []

    init(_ rows: [RowRecord], told toldIds: Set<UUID>) {
        for r in rows {
            told.append(toldIds.contains(r.id))
            ids.append(r.id)
            statuses.append(r.status.rawValue)
            permanent.append(r.permanent)
            lastErrors.append(r.lastError)
            skipReasons.append(r.skipReason?.rawValue)
            runAfter.append(r.runAfter)
            sentAt.append(r.sentAt)
            providerMessageIds.append(r.providerMessageId)
            attemptsDeltas.append(Int32(clamping: r.attemptsDelta))
            events.append(r.event.rawValue)
            reasons.append(r.reason)
            if case .object(let o) = r.details, !o.isEmpty {
                details.append(r.details.pgJSONTextAnyOrder)
            } else {
                details.append(nil)
            }
        }
    }
}

/// The deliveries as one array per column (see ``RowColumns``).
struct DeliveryColumns {
    var queueIds: [UUID] = [], attempts: [Int32] = [], channels: [String] = [], providers: [String] = []
    var destinations: [String] = [], deviceTokenIds = PGNullableArray<UUID>(), outcomes: [String] = []
    var httpStatuses = PGNullableArray<Int32>(), errorCodes = PGNullableArray<String>()
    var messageIds = PGNullableArray<String>(), errors = PGNullableArray<String>()
    var latencies = PGNullableArray<Int32>()
    /// Whether this delivery row carries its queue row's decision: the first of a told row's.
    var carries: [Bool] = []

    init(_ deliveries: [DeliveryRecord], told: Set<UUID>) {
        var carried = Set<UUID>()
        for d in deliveries {
            carries.append(told.contains(d.queueId) && carried.insert(d.queueId).inserted)
            queueIds.append(d.queueId)
            attempts.append(Int32(clamping: d.attempt))
            channels.append(d.channel)
            providers.append(d.provider.rawValue)
            destinations.append(d.destination)
            deviceTokenIds.append(d.deviceTokenId)
            outcomes.append(d.outcome)
            // `int` columns: a value outside int4 (a provider's absurd status) is left out, not a failed flush.
            httpStatuses.append(d.httpStatus.flatMap { Int32(exactly: $0) })
            errorCodes.append(d.errorCode)
            messageIds.append(d.messageId)
            errors.append(d.error)
            latencies.append(d.latencyMs.flatMap { Int32(exactly: $0) })
        }
    }
}

extension TokenDeactivation {
    var json: JSONValue {
        ["id": .string(deviceTokenId.uuidString), "reason": .string(reason), "before": .string(ISO8601.string(registeredBefore))]
    }
}

extension ChannelOptOut {
    var json: JSONValue {
        ["user_id": .string(userId.lowercased), "channel": .string(channel.rawValue), "destination": .string(destination),
         "reason": .string(reason)]
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
