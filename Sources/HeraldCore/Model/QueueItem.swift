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
    /// The channel as stored; parsed once into `channel` (a decision reads it many times).
    public var channelRaw: String {
        didSet { channel = Channel(rawValue: channelRaw) }
    }
    /// The kind as stored; parsed once into `kind`.
    public var kindRaw: String {
        didSet { kind = Kind(rawValue: kindRaw) }
    }
    /// The parsed channel; nil when herald does not know it.
    public private(set) var channel: Channel?
    /// The parsed kind; nil when herald does not know it.
    public private(set) var kind: Kind?
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
    /// The logical notification this row belongs to: the copies of one notification on several channels
    /// share it, and the daily cap counts it once. Nil: the row is its own notification.
    public var notificationGroup: String?

    public init(id: UUID, recipientUserId: UUID, memberUserId: UUID? = nil, alertStateId: UUID? = nil,
                channelRaw: String, kindRaw: String, severity: Severity? = nil, priority: Priority = .normal,
                payloadText: String = "{}", scheduledAt: Date, createdAt: Date? = nil, runAfter: Date? = nil,
                attempts: Int = 1, dedupeKey: String? = nil, notificationGroup: String? = nil) {
        self.id = id
        self.recipientUserId = recipientUserId
        self.memberUserId = memberUserId
        self.alertStateId = alertStateId
        self.channelRaw = channelRaw
        self.kindRaw = kindRaw
        self.channel = Channel(rawValue: channelRaw)
        self.kind = Kind(rawValue: kindRaw)
        self.severity = severity
        self.priority = priority
        self.payloadText = payloadText
        self.payload = QueueItem.parse(payloadText)
        self.scheduledAt = scheduledAt
        self.createdAt = createdAt ?? scheduledAt
        self.runAfter = runAfter ?? scheduledAt
        self.attempts = attempts
        self.dedupeKey = dedupeKey
        self.notificationGroup = notificationGroup
    }

    /// A reminder's type, from its payload (`reminder_type`); nil for other kinds or an unknown type.
    public var reminderType: ReminderType? {
        guard kind == .reminder, let raw = payload?["reminder_type"]?.stringValue else { return nil }
        return ReminderType(rawValue: raw)
    }

    /// The type the rate limits space: the kind, and for reminders the reminder type as well
    /// (`reminder:dose`), so a dose reminder never waits on an unrelated daily one.
    public var rateType: String { Self.rateType(kind: kindRaw, reminderType: payload?["reminder_type"]?.stringValue) }

    public static func rateType(kind: String, reminderType: String?) -> String {
        if kind == Kind.reminder.rawValue, let t = reminderType, !t.isEmpty { return "reminder:\(t)" }
        return kind
    }

    /// The notification group, or the row's own id when it has none.
    public var group: String { notificationGroup ?? id.lowercased }


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
    /// The lower-case text form PostgreSQL prints, for logs and payloads. Written directly: Foundation's
    /// `uuidString` goes through `snprintf`, a visible cost when every row of a batch needs it. (HeraldPostgres,
    /// which cannot see this module, writes bound UUIDs the same way in `UUID.pgText`.)
    public var lowercased: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var i = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out[i] = UInt8(ascii: "-")
                        i += 1
                    }
                    out[i] = UUID.hexDigit(byte >> 4)
                    out[i + 1] = UUID.hexDigit(byte & 0x0F)
                    i += 2
                }
                return i
            }
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
