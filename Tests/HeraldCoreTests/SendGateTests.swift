import Foundation
import HeraldCore
import Testing

/// The send gate: what each answer teaches it (throttles, the circuit breaker), where the destination
/// goes next (failover), what is held back and why, and when the batch's lease stops new requests.
@Suite struct SendGateTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The kinds of answer a provider gives, as adapters classify them.
    enum Answer: String, CaseIterable, Sendable {
        case delivered, retry, retryWait, retryProviderWide, retryOneDestination, permanent, invalid, refused, connectionEnded

        var response: ClassifiedResponse {
            switch self {
            case .delivered: return ClassifiedResponse(.delivered(messageId: "m"), httpStatus: 200)
            case .retry: return ClassifiedResponse(.retry(after: nil, code: "500", message: "boom"), httpStatus: 500)
            case .retryWait: return ClassifiedResponse(.retry(after: 30, code: "500", message: "later"), httpStatus: 500)
            case .retryProviderWide:
                return ClassifiedResponse(.retry(after: 60, code: "429", message: "slow"), httpStatus: 429,
                                          throttle: .provider(wait: 60))
            case .retryOneDestination:
                return ClassifiedResponse(.retry(after: 5, code: "TooManyRequests", message: "device"), httpStatus: 429,
                                          throttle: .destination(wait: 5))
            case .permanent: return ClassifiedResponse(.permanent(code: "400", message: "bad"), httpStatus: 400)
            case .invalid: return ClassifiedResponse(.destinationInvalid(code: "410", message: "gone"), httpStatus: 410)
            case .refused: return ClassifiedResponse(.refused(code: "401", message: "key"), httpStatus: 401)
            case .connectionEnded:
                var r = ClassifiedResponse(.retry(after: nil, code: "connection_lost", message: "ended"))
                r.connectionEnded = true
                return r
            }
        }
    }

    /// One row of the table: an answer from the first of two email providers, in a breaker state and a
    /// failover position, and what the gate makes of it.
    struct Row: Sendable, CustomTestStringConvertible {
        var answer: Answer
        /// The breaker of the next provider (smtp) is already open.
        var nextOpen = false
        /// The destination is pinned to its provider (a device token).
        var pinned = false
        /// The answering provider is the last of the order.
        var last = false
        /// Expected: the answering provider is throttled after it, its breaker open, the next provider.
        var throttled: Bool
        var breakerOpens: Bool
        var next: Provider?

        var testDescription: String {
            "\(answer)\(nextOpen ? ", next open" : "")\(pinned ? ", pinned" : "")\(last ? ", last" : "")"
        }
    }

    static let table: [Row] = Answer.allCases.flatMap { answer -> [Row] in
        let moves: Bool = [.retry, .retryWait, .retryProviderWide, .retryOneDestination, .refused].contains(answer)
        let throttled = answer == .retryProviderWide
        let opens = answer == .refused
        return [
            Row(answer: answer, throttled: throttled, breakerOpens: opens, next: moves ? .smtp : nil),
            Row(answer: answer, nextOpen: true, throttled: throttled, breakerOpens: opens, next: nil),
            Row(answer: answer, pinned: true, throttled: throttled, breakerOpens: opens, next: nil),
            Row(answer: answer, last: true, throttled: throttled, breakerOpens: opens, next: nil),
        ]
    }

    @Test(arguments: table)
    func eachAnswerTeachesTheGateAndRoutesTheDestination(_ row: Row) {
        var breaker = CircuitBreaker()
        if row.nextOpen { breaker.trip(.smtp) }
        var gate = SendGate(leaseSeconds: 600, longestSend: 15, breaker: breaker)
        let from: Provider = row.last ? .smtp : .sendgrid
        let events = gate.learn(row.answer.response, from: from, now: Self.now)

        #expect((gate.throttledUntil[from] != nil) == row.throttled)
        #expect(events.contains { if case .throttled = $0 { true } else { false } } == row.throttled)
        #expect(events.contains { if case .refused = $0 { true } else { false } } == row.breakerOpens)
        #expect(gate.breaker.isOpen(from) == row.breakerOpens || (row.nextOpen && from == .smtp))
        let next = gate.next(after: row.answer.response, from: from, order: [.sendgrid, .smtp], pinned: row.pinned,
                             now: Self.now)
        #expect(next == row.next)
    }

    /// A connection's end teaches nothing: ten of them open no breaker and throttle nothing.
    @Test func aConnectionsEndCountsTowardNothing() {
        var gate = SendGate(leaseSeconds: 600, longestSend: 15)
        for _ in 0..<20 { #expect(gate.learn(Answer.connectionEnded.response, from: .apns, now: Self.now).isEmpty) }
        #expect(gate.breaker.tally(.apns).answers == 0)
        #expect(gate.admit(.apns, now: Self.now) == .go)
    }

    /// The breaker opens on the tenth retry when they are more than half the answers; a retry about one
    /// destination is no failure of the provider.
    @Test(arguments: [(Answer.retry, 10, true), (.retry, 9, false), (.retryOneDestination, 20, false),
                      (.retryWait, 10, true), (.delivered, 20, false)] as [(Answer, Int, Bool)])
    func theBreakerOpensOnMostlyFailedAnswers(_ answer: Answer, _ count: Int, _ opens: Bool) {
        var gate = SendGate(leaseSeconds: 600, longestSend: 15)
        var opened = 0
        for _ in 0..<count {
            opened += gate.learn(answer.response, from: .twilio, now: Self.now)
                .filter { if case .breakerOpened = $0 { true } else { false } }.count
        }
        #expect(gate.breaker.isOpen(.twilio) == opens)
        #expect(opened == (opens ? 1 : 0), "an open breaker is reported once")
    }

    /// Held back: a throttled provider until its time, one with an open breaker until a later pass; a
    /// throttle that has passed holds nothing.
    @Test func admissionHoldsThrottledAndBrokenProviders() {
        var gate = SendGate(leaseSeconds: 600, longestSend: 15)
        _ = gate.learn(Answer.retryProviderWide.response, from: .fcm, now: Self.now)
        #expect(gate.admit(.fcm, now: Self.now) == .hold(until: Self.now.addingTimeInterval(60), reason: .throttled))
        #expect(gate.admit(.fcm, now: Self.now.addingTimeInterval(61)) == .go)
        _ = gate.learn(Answer.refused.response, from: .expo, now: Self.now)
        #expect(gate.admit(.expo, now: Self.now) == .hold(until: Self.now.addingTimeInterval(SendGate.breakerPause),
                                                           reason: .breakerOpen))
        #expect(gate.admit(.apns, now: Self.now) == .go)
    }

    /// Why a request may not start, in order: a stop signal, a failed record flush, the batch's lease,
    /// an open breaker.
    @Test(arguments: [
        (true, true, 9_999.0, true, ReleaseReason.interrupted), (false, true, 9_999, true, .recordFailed),
        (false, false, 584, true, .leaseEnding), (false, false, 583.9, true, .breakerOpen),
        (false, false, 583.9, false, nil),
    ] as [(Bool, Bool, Double, Bool, ReleaseReason?)])
    func aRequestStartsOnlyWhileNothingStopsIt(_ stopping: Bool, _ recordFailed: Bool, _ elapsed: Double,
                                                _ open: Bool, _ expected: ReleaseReason?) {
        var breaker = CircuitBreaker()
        if open { breaker.trip(.webhook) }
        var gate = SendGate(leaseSeconds: 600, longestSend: 15, breaker: breaker)
        gate.batchClaimed(at: 0)
        #expect(gate.lastStart == 584)
        #expect(gate.refusal(.webhook, elapsed: elapsed, stopping: stopping, recordFailed: recordFailed) == expected)
    }

    /// A later batch's lease starts at its own claim.
    @Test func eachBatchsLeaseStartsAtItsClaim() {
        var gate = SendGate(leaseSeconds: 30, longestSend: 10)
        gate.batchClaimed(at: 100)
        #expect(gate.refusal(.webhook, elapsed: 118.9, stopping: false, recordFailed: false) == nil)
        #expect(gate.refusal(.webhook, elapsed: 119, stopping: false, recordFailed: false) == .leaseEnding)
    }

    /// After a hold, a destination moves on only when the provider itself is out for the pass.
    @Test(arguments: ReleaseReason.allCases)
    func aHeldDestinationMovesOnlyForTheProvidersSake(_ reason: ReleaseReason) {
        let gate = SendGate(leaseSeconds: 600, longestSend: 15)
        let next = gate.next(afterHold: reason, from: .sendgrid, order: [.sendgrid, .smtp], pinned: false, now: Self.now)
        #expect(next == (reason == .throttled || reason == .breakerOpen ? .smtp : nil))
        #expect(gate.next(afterHold: reason, from: .sendgrid, order: [.sendgrid, .smtp], pinned: true, now: Self.now) == nil)
        #expect(gate.retryTime(reason, now: Self.now) == (reason == .breakerOpen ? Self.now.addingTimeInterval(300) : nil))
    }
}

/// The configuration watch: a provider most of whose destinations are refused in a way a slip could
/// explain turns suspect, and its such refusals become retries naming what to check.
@Suite struct ConfigurationWatchTests {
    static let check = ConfigurationCheck(hint: "check APNS_ENV", codes: ["BadDeviceToken"])

    static func invalid(_ code: String) -> ClassifiedResponse {
        ClassifiedResponse(.destinationInvalid(code: code, message: "nope"), httpStatus: 400)
    }

    @Test func mostRefusalsOfOneCodeMakeTheProviderSuspect() {
        var watch = ConfigurationWatch()
        var held = 0
        for _ in 0..<10 { if watch.note(Self.invalid("BadDeviceToken"), from: .apns, check: Self.check) { held += 1 } }
        let deliveredHeld = watch.note(ClassifiedResponse(.delivered(messageId: nil), httpStatus: 200), from: .apns, check: Self.check)
        let otherCodeHeld = watch.note(Self.invalid("Unregistered"), from: .apns, check: Self.check)
        #expect(!deliveredHeld)
        #expect(!otherCodeHeld, "not a code a slip explains")
        #expect(held == 10)
        #expect(watch.health.isSuspect(.apns))
        let token = Destination(provider: .apns, address: "t", deviceTokenId: UUID())
        let (first, report) = watch.verdict(Self.invalid("BadDeviceToken"), from: .apns, destination: token)
        #expect(report)
        #expect(first.outcome.code == "config_suspect")
        #expect(first.outcome.message?.contains("check APNS_ENV; tokens were not deactivated") == true)
        let again = watch.verdict(Self.invalid("BadDeviceToken"), from: .apns, destination: token)
        #expect(!again.firstReport, "a provider is reported once")
        let other = watch.verdict(Self.invalid("Unregistered"), from: .apns, destination: token)
        #expect(other.answer.outcome.code == "Unregistered")
    }

    @Test func aProviderWithNoCheckOrNoAnswerIsNeverSuspect() {
        var watch = ConfigurationWatch()
        var held = 0
        for _ in 0..<20 { if watch.note(Self.invalid("BadDeviceToken"), from: .expo, check: nil) { held += 1 } }
        for _ in 0..<20 {
            if watch.note(ClassifiedResponse(.retry(after: nil, code: "timeout", message: "t")), from: .fcm, check: Self.check) {
                held += 1
            }
        }
        #expect(held == 0)
        #expect(!watch.health.isSuspect(.expo) && !watch.health.isSuspect(.fcm))
    }
}
