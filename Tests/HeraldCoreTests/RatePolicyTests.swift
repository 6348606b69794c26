import Foundation
import Testing
@testable import HeraldCore

/// Each notification type's rate limits are its own (`notification_types`): herald's reminders keep the
/// cap of 10 a day and an hour between two of a type; a backend's types (assignment, calendar, signal,
/// message, system) are held only to 100 a minute per recipient; prompts are exempt.
@Suite struct RatePolicyTests {
    let ny = zone("America/New_York")
    let now = utc(2026, 1, 26, 1)    // 20:00 EST; the next local midnight is 05:00Z
    let policy = NotificationTypes.builtIn.ratePolicy

    /// `n` sends of `type` to alice earlier today, each its own notification, spread over the day.
    func sent(_ n: Int, _ type: String, within seconds: Double = 36_000) -> [SentRecord] {
        (0..<n).map { SentRecord(recipient: alice, channel: .push, kind: type, group: "\(type)-\($0)",
                                 at: now.addingTimeInterval(-seconds * Double($0 + 1) / Double(n + 1))) }
    }

    func check(_ type: String, after history: [SentRecord]) -> RateCheck {
        RateLimiter(policy: policy, history: history)
            .check(recipient: alice, channel: .push, kind: type, group: "next", now: now, zone: ny)
    }

    struct Case: CustomTestStringConvertible {
        var history: (type: String, count: Int, within: Double)
        var next: String
        var held: DeferReason?
        var testDescription: String { "\(history.count) × \(history.type), then \(next) → \(held?.rawValue ?? "send")" }
    }

    static let cases: [Case] = [
        // The daily cap: ten capped notifications hold the eleventh capped one to the next midnight …
        Case(history: ("reminder", 10, 36_000), next: "reminder:daily", held: .dailyLimit),
        Case(history: ("reminder", 10, 36_000), next: "pattern_alert", held: .dailyLimit),
        // … but not a backend's type, which has no cap,
        Case(history: ("reminder", 10, 36_000), next: "message", held: nil),
        Case(history: ("message", 50, 36_000), next: "message", held: nil),
        // and a backend's sends do not count towards herald's cap.
        Case(history: ("message", 50, 36_000), next: "reminder", held: nil),
        // The spacing: an hour between two reminders, none between two messages.
        Case(history: ("reminder", 1, 120), next: "reminder", held: .kindSpacing),
        Case(history: ("signal", 1, 120), next: "signal", held: nil),
        // 100 rows a minute per recipient, across types.
        Case(history: ("message", 100, 50), next: "message", held: .perMinute),
        Case(history: ("message", 100, 50), next: "calendar", held: .perMinute),
        Case(history: ("message", 99, 50), next: "assignment", held: nil),
        // Prompts: neither capped nor counted.
        Case(history: ("prompt", 60, 36_000), next: "reminder", held: nil),
        Case(history: ("reminder", 10, 36_000), next: "prompt", held: nil),
    ]

    @Test(arguments: cases)
    func eachTypeIsHeldByItsOwnLimits(_ c: Case) {
        let result = check(c.next, after: sent(c.history.count, c.history.type, within: c.history.within))
        #expect(result.reason == c.held)
    }

    /// A type the policy does not know (a row written before its type was) gets the fallback: the cap.
    @Test func anUnknownTypeGetsTheFallback() {
        #expect(policy.limits(for: "whatever") == .capped)
        #expect(policy.limits(for: "reminder:dose") == policy.limits(for: "reminder"))
    }
}
