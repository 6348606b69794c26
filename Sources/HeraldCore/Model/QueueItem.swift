import Foundation

/// One claimed row of `notification_queue`, as the decision sees it.
///
/// `channel`, `kind` and `payload` are kept raw as well as parsed: a row whose channel is unknown or whose
/// payload is malformed is not a crash — the decision fails it permanently with a readable message.
public struct QueueItem: Sendable, Equatable {
    public var id: UUID
    public var recipientUserId: UUID
    /// Who the notification is about; equal to the recipient for a person's own notifications.
    public var memberUserId: UUID?
    public var alertStateId: UUID?
    public var channelRaw: String
    public var kindRaw: String
    /// The row's own severity; an alert's severity wins when the row links one.
    public var severity: Severity?
    public var priority: Priority
    /// The payload text as stored (jsonb rendered to text); parsed once into `payload`.
    public var payloadText: String {
        didSet { payload = QueueItem.parse(payloadText) }
    }
    /// The parsed payload; nil when it is not a JSON object.
    public private(set) var payload: [String: JSONValue]?
    /// When the notification was meant to go out (its first `run_after`); age is measured from here.
    public var scheduledAt: Date
    public var createdAt: Date
    public var runAfter: Date
    /// Attempts including the current one (the claim increments it).
    public var attempts: Int
    public var dedupeKey: String?

    public init(id: UUID, recipientUserId: UUID, memberUserId: UUID? = nil, alertStateId: UUID? = nil,
                channelRaw: String, kindRaw: String, severity: Severity? = nil, priority: Priority = .normal,
                payloadText: String = "{}", scheduledAt: Date, createdAt: Date? = nil, runAfter: Date? = nil,
                attempts: Int = 1, dedupeKey: String? = nil) {
        self.id = id
        self.recipientUserId = recipientUserId
        self.memberUserId = memberUserId
        self.alertStateId = alertStateId
        self.channelRaw = channelRaw
        self.kindRaw = kindRaw
        self.severity = severity
        self.priority = priority
        self.payloadText = payloadText
        self.payload = QueueItem.parse(payloadText)
        self.scheduledAt = scheduledAt
        self.createdAt = createdAt ?? scheduledAt
        self.runAfter = runAfter ?? scheduledAt
        self.attempts = attempts
        self.dedupeKey = dedupeKey
    }

    public var channel: Channel? { Channel(rawValue: channelRaw) }
    public var kind: Kind? { Kind(rawValue: kindRaw) }

    /// The parsed payload; nil when it is not a JSON object.
    static func parse(_ text: String) -> [String: JSONValue]? {
        guard let v = try? JSONValue.parse(text), case .object(let o) = v else { return nil }
        return o
    }

    /// True when the notification is about someone other than its recipient (a family member).
    public var isAboutAnotherMember: Bool {
        guard let m = memberUserId else { return false }
        return m != recipientUserId
    }
}

extension UUID {
    /// The lower-case text form PostgreSQL prints, for logs and payloads.
    public var lowercased: String { uuidString.lowercased() }
}
