import Foundation
@testable import HeraldCore

/// An instant given in UTC, built without the code under test (no Zone, no formatter).
func utc(_ y: Int, _ mo: Int, _ d: Int, _ h: Int = 0, _ mi: Int = 0, _ s: Int = 0) -> Date {
    let days = LocalDate(year: y, month: mo, day: d).daysSinceEpoch
    return Date(timeIntervalSince1970: Double(days * 86_400 + h * 3600 + mi * 60 + s))
}

func zone(_ id: String) -> TimeZone { Zone.named(id)! }
func t(_ s: String) -> LocalTime { LocalTime(s)! }
func day(_ s: String) -> LocalDate { LocalDate(s)! }
func wall(_ date: String, _ time: String) -> LocalDateTime { LocalDateTime(date: day(date), time: t(time)) }

/// Fixed ids so failures are readable.
let alice = UUID(uuidString: "00000000-0000-0000-0000-00000000000a")!
let bob = UUID(uuidString: "00000000-0000-0000-0000-00000000000b")!
let episodeId = UUID(uuidString: "00000000-0000-0000-0000-0000000000e1")!

func item(_ channel: String = "push", kind: String = "pattern_alert", to recipient: UUID = alice,
          about member: UUID? = nil, alert: UUID? = nil, severity: Severity? = nil, priority: Priority = .normal,
          payload: String = "{}", scheduledAt: Date, id: UUID = UUID()) -> QueueItem {
    QueueItem(id: id, recipientUserId: recipient, memberUserId: member, alertStateId: alert,
              channelRaw: channel, kindRaw: kind, severity: severity, priority: priority,
              payloadText: payload, scheduledAt: scheduledAt)
}

let aPhone = [Destination(provider: .apns, address: "token-1")]
