import Foundation
import Testing
@testable import HeraldCore

@Suite struct FailoverRuleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    struct Case: CustomTestStringConvertible {
        var name: String
        var failed: Provider = .sendgrid
        var failure: Failover.Failure
        var order: [Provider] = [.sendgrid, .smtp]
        var pinned = false
        var open: Set<Provider> = []
        var throttledUntil: [Provider: Date] = [:]
        var expect: Provider?
        var testDescription: String { name }
    }

    static let table: [Case] = [
        Case(name: "transient → next", failure: .transient, expect: .smtp),
        Case(name: "throttled → next", failure: .throttled, expect: .smtp),
        Case(name: "breaker open → next", failure: .breakerOpen, expect: .smtp),
        Case(name: "permanent → stays", failure: .permanent, expect: nil),
        Case(name: "the last provider has no next", failed: .smtp, failure: .transient, expect: nil),
        Case(name: "the next one's breaker is open → nil", failure: .transient, open: [.smtp], expect: nil),
        Case(name: "the next one is throttled → nil", failure: .transient,
             throttledUntil: [.smtp: now.addingTimeInterval(30)], expect: nil),
        Case(name: "a throttle that has run out does not hold", failure: .transient,
             throttledUntil: [.smtp: now.addingTimeInterval(-1)], expect: .smtp),
        Case(name: "a throttle ending now has run out", failure: .throttled,
             throttledUntil: [.smtp: now], expect: .smtp),
        Case(name: "open and throttled are passed over to the third", failed: .twilio, failure: .transient,
             order: [.twilio, .sendgrid, .smtp, .webhook], open: [.sendgrid],
             throttledUntil: [.smtp: now.addingTimeInterval(60)], expect: .webhook),
        Case(name: "all others open or throttled → nil", failed: .twilio, failure: .breakerOpen,
             order: [.twilio, .sendgrid, .smtp], open: [.sendgrid],
             throttledUntil: [.smtp: now.addingTimeInterval(60)], expect: nil),
        Case(name: "only providers after the failed one are candidates", failed: .smtp, failure: .transient,
             order: [.sendgrid, .smtp], expect: nil),
        Case(name: "push keeps the token's provider → nil", failed: .apns, failure: .transient,
             order: [.apns, .fcm, .expo], pinned: true, expect: nil),
        Case(name: "push keeps the token's provider even when throttled", failed: .fcm, failure: .throttled,
             order: [.apns, .fcm, .expo], pinned: true, expect: nil),
        Case(name: "a provider not in the order has no next", failed: .webhook, failure: .transient, expect: nil),
        Case(name: "an empty order has no next", failure: .transient, order: [], expect: nil),
    ]

    @Test(arguments: table)
    func choosesTheNextProvider(_ c: Case) {
        let next = Failover.next(after: c.failed, failure: c.failure, order: c.order, pinned: c.pinned,
                                 open: c.open, throttledUntil: c.throttledUntil, now: Self.now)
        #expect(next == c.expect)
    }

    @Test func theFailureKindsReadTheirStoredReasons() {
        #expect(Failover.Failure(rawValue: "throttled") == .throttled)
        #expect(Failover.Failure(rawValue: "breaker_open") == .breakerOpen)
        #expect(Failover.Failure(rawValue: "interrupted") == nil)
    }
}
