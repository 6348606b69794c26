import Foundation

/// What a pass writes back for one claimed row. Built by `DeliveryPlanner` and `DeliveryFold`, written
/// in batches by the worker's `QueueStore`.
public struct RowRecord: Sendable {
    public var id: UUID
    /// `sent`, `failed`, `skipped`, or `pending` (deferred: back in the queue, the attempt not counted).
    public var status: QueueStatus
    public var permanent: Bool = false
    /// Why, in at most `lastErrorLimit` characters: a row to thousands of destinations still says
    /// what went wrong in a sentence, not a page.
    public var lastError: String? {
        didSet {
            if let e = lastError, e.count > Self.lastErrorLimit {
                lastError = String(e.prefix(Self.lastErrorLimit - 1)) + "…"
            }
        }
    }
    public static let lastErrorLimit = 1_000
    public var skipReason: SkipReason?
    public var runAfter: Date?
    public var sentAt: Date?
    public var providerMessageId: String?
    /// Added to `attempts`: −1 gives back the attempt the claim counted (a deferral is not an attempt).
    public var attemptsDelta: Int = 0
    /// The trail: `sent`, `skipped`, `deferred`, `failed`, `superseded`.
    public var event: QueueEvent
    public var reason: String?
    public var details: JSONValue = .null
    /// Whose row it is: a pipelined pass claims none of this person's rows while the record is on its
    /// way. Nil for a record made from an id alone.
    public var recipient: UUID?
    /// The row's `channel` as written, for the pass's counts by channel. Nil for a record made from an
    /// id alone.
    public var channelName: String?

    public init(id: UUID, status: QueueStatus, event: QueueEvent) {
        self.id = id
        self.status = status
        self.event = event
    }

    /// The record of a claimed row: its id, its recipient and its channel.
    public init(item: QueueItem, status: QueueStatus, event: QueueEvent) {
        self.init(id: item.id, status: status, event: event)
        recipient = item.recipientUserId
        channelName = item.channelRaw
    }

    /// Several destinations' messages as one `lastError`: each different message once, in order, the
    /// first `shown` of them, and how many more there were.
    ///
    ///     RowRecord.messages(["410 Unregistered", "410 Unregistered", "400 BadDeviceToken"])
    ///     // "410 Unregistered; 400 BadDeviceToken"
    public static func messages(_ all: [String], shown: Int = 5) -> String {
        var seen = Set<String>(), distinct: [String] = []
        for m in all where seen.insert(m).inserted { distinct.append(m) }
        let more = distinct.count - shown
        return distinct.prefix(shown).joined(separator: "; ") + (more > 0 ? "; and \(more) more" : "")
    }
}

/// One attempt to one destination: a row of `notification_deliveries`.
public struct DeliveryRecord: Sendable {
    public var queueId: UUID
    public var attempt: Int
    public var channel: String
    public var provider: Provider
    public var destination: String
    public var deviceTokenId: UUID?
    public var outcome: String
    public var httpStatus: Int?
    public var errorCode: String?
    public var messageId: String?
    public var error: String?
    public var latencyMs: Int?

    public init(queueId: UUID, attempt: Int, channel: String, provider: Provider, destination: String,
                deviceTokenId: UUID?, outcome: String, httpStatus: Int?, errorCode: String?, messageId: String?,
                error: String?, latencyMs: Int?) {
        self.queueId = queueId
        self.attempt = attempt
        self.channel = channel
        self.provider = provider
        self.destination = destination
        self.deviceTokenId = deviceTokenId
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.errorCode = errorCode
        self.messageId = messageId
        self.error = error
        self.latencyMs = latencyMs
    }
}

/// A destination that turned out to be dead: deactivate the device token, with the provider's reason.
public struct TokenDeactivation: Sendable {
    public var deviceTokenId: UUID
    public var reason: String
    /// The refusal holds for a registration up to this instant: a token the app registered again
    /// afterwards (its `last_used_at`) stays active. APNs says when it found the token invalid (a
    /// 410's `timestamp`); otherwise the time of the answer.
    public var registeredBefore: Date

    public init(deviceTokenId: UUID, reason: String, registeredBefore: Date) {
        self.deviceTokenId = deviceTokenId
        self.reason = reason
        self.registeredBefore = registeredBefore
    }
}

/// A phone or address that is dead for a channel (Twilio 21610: the person replied STOP): the channel is
/// turned off for the recipient, with the provider's reason.
public struct ChannelOptOut: Sendable {
    public var userId: UUID
    public var channel: Channel
    /// The phone or address the provider's word was about: the channel is switched off only while it
    /// is still the recipient's.
    public var destination: String
    public var reason: String

    public init(userId: UUID, channel: Channel, destination: String, reason: String) {
        self.userId = userId
        self.channel = channel
        self.destination = destination
        self.reason = reason
    }
}

/// A daily forecast whose notification went out.
public struct ForecastSent: Sendable {
    public var queueId: UUID
    public var userId: UUID
    public var date: LocalDate

    public init(queueId: UUID, userId: UUID, date: LocalDate) {
        self.queueId = queueId
        self.userId = userId
        self.date = date
    }
}

/// A provider's ticket to check later (Expo): a row of `push_receipts`.
public struct ReceiptTicket: Sendable {
    public var queueId: UUID
    public var provider: Provider
    public var ticketId: String
    public var deviceTokenId: UUID?
    /// When the ticket was issued, on the pass's clock (`--now`): the receipts phase ages tickets on
    /// that clock too. Nil: the database's clock.
    public var createdAt: Date?

    public init(queueId: UUID, provider: Provider, ticketId: String, deviceTokenId: UUID?, createdAt: Date? = nil) {
        self.queueId = queueId
        self.provider = provider
        self.ticketId = ticketId
        self.deviceTokenId = deviceTokenId
        self.createdAt = createdAt
    }
}
