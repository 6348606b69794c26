import Foundation
import HeraldCore
import Testing

/// The answer policy, table-driven, without a database: each kind of result (an answer from the wire,
/// one herald made itself, an answer lost with its connection, a send never made) in each state of its
/// row and its channel says what the pass does next — fail over, send again, wait, hold for the
/// configuration verdict, or record the row — and which breaker signals it raises; then what the row
/// is recorded as.
@Suite struct AnswerPolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let check = ConfigurationCheck(hint: "check APNS_ENV", codes: ["BadDeviceToken"])

    /// The results a destination's send can have.
    enum Result: String, CaseIterable, Sendable {
        case delivered, retry, providerThrottle, permanent, suspiciousInvalid, deadInvalid, refused, connectionEnded
        case notMade, lost, heldThrottled, heldBreakerOpen, interrupted

        var outcome: AnswerPolicy.Outcome {
            switch self {
            case .delivered: .answered(ClassifiedResponse(.delivered(messageId: "m"), httpStatus: 200))
            case .retry: .answered(ClassifiedResponse(.retry(after: nil, code: "500", message: "boom"), httpStatus: 500))
            case .providerThrottle:
                .answered(ClassifiedResponse(.retry(after: 60, code: "429", message: "slow"), httpStatus: 429,
                                             throttle: .provider(wait: 60)))
            case .permanent: .answered(ClassifiedResponse(.permanent(code: "400", message: "bad"), httpStatus: 400))
            case .suspiciousInvalid:
                .answered(ClassifiedResponse(.destinationInvalid(code: "BadDeviceToken", message: "bad"), httpStatus: 400))
            case .deadInvalid:
                .answered(ClassifiedResponse(.destinationInvalid(code: "Unregistered", message: "gone"), httpStatus: 410))
            case .refused: .answered(ClassifiedResponse(.refused(code: "403", message: "key"), httpStatus: 403))
            case .connectionEnded:
                .answered({
                    var r = ClassifiedResponse(.retry(after: nil, code: "connection_lost", message: "ended"))
                    r.connectionEnded = true
                    return r
                }())
            case .notMade: .notMade(ClassifiedResponse(.retry(after: nil, code: "prepare_failed", message: "no token")))
            case .lost: .lost(ClassifiedResponse(.retry(after: nil, code: "connection_lost", message: "lost")))
            case .heldThrottled: .notSent(until: AnswerPolicyTests.now.addingTimeInterval(30), reason: .throttled)
            case .heldBreakerOpen: .notSent(until: AnswerPolicyTests.now.addingTimeInterval(300), reason: .breakerOpen)
            case .interrupted: .notSent(until: nil, reason: .interrupted)
            }
        }

        /// A transient failure, a throttled or broken provider: the destination may move on.
        var moves: Bool { [.retry, .providerThrottle, .refused, .notMade, .heldThrottled, .heldBreakerOpen].contains(self) }
        /// The signal the gate raises from it (an answer from the wire only).
        var signal: String? {
            switch self {
            case .providerThrottle: "throttled"
            case .refused: "refused"
            default: nil
            }
        }
    }

    /// The row's state when the result arrives.
    enum RowState: String, CaseIterable, Sendable {
        /// The result is the row's last destination, on the first of two email providers.
        case lastOfTwoProviders
        /// The row's last destination, on the last provider of its channel.
        case lastOnLastProvider
        /// A device token: it stays with its provider.
        case pinned
        /// Another destination of the row is still on its way.
        case othersAwaited
        /// The row already waits for the configuration verdict.
        case alreadyHeld
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var result: Result
        var state: RowState
        var step: AnswerPolicy.Step
        var signal: String?
        var testDescription: String { "\(result) when \(state) → \(step)" }
    }

    /// What each result does in each state, as the pass has always done it.
    static let table: [Row] = Result.allCases.flatMap { result in
        RowState.allCases.map { state -> Row in
            let mayMove = state == .lastOfTwoProviders || state == .othersAwaited || state == .alreadyHeld
            let step: AnswerPolicy.Step
            if result == .lost {
                step = .resend
            } else if result.moves && mayMove {
                step = .failOver(to: .smtp)
            } else if result == .suspiciousInvalid {
                step = .hold
            } else if state == .othersAwaited || state == .alreadyHeld {
                step = .wait
            } else {
                step = .record
            }
            return Row(result: result, state: state, step: step, signal: result.signal)
        }
    }

    static func facts(_ state: RowState) -> AnswerPolicy.Facts {
        AnswerPolicy.Facts(provider: state == .lastOnLastProvider ? .smtp : .sendgrid, order: [.sendgrid, .smtp],
                           pinned: state == .pinned, check: check, awaiting: state == .othersAwaited ? 2 : 1,
                           held: state == .alreadyHeld)
    }

    @Test(arguments: table)
    func eachResultInEachStateSaysWhatFollows(_ row: Row) {
        var policy = AnswerPolicy(gate: SendGate(leaseSeconds: 600, longestSend: 15))
        let decision = policy.decide(row.result.outcome, Self.facts(row.state), now: Self.now)
        #expect(decision.step == row.step)
        let signals = decision.signals.map { signal -> String in
            switch signal {
            case .throttled: "throttled"
            case .refused: "refused"
            case .breakerOpened: "breakerOpened"
            }
        }
        #expect(signals == (row.signal.map { [$0] } ?? []))
    }

    /// A provider whose requests mostly fail opens its breaker: the answer that opens it says so, and a
    /// destination held back by it afterwards moves to the next provider.
    @Test func theAnswerThatOpensTheBreakerSignalsIt() {
        var policy = AnswerPolicy(gate: SendGate(leaseSeconds: 600, longestSend: 15))
        let facts = Self.facts(.lastOnLastProvider)
        var opened: [SendGate.Event] = []
        for _ in 0..<30 {
            opened += policy.decide(Result.retry.outcome, facts, now: Self.now).signals
        }
        #expect(opened.count == 1)
        guard case .breakerOpened(.smtp, _, _)? = opened.first else {
            Issue.record("no breaker signal: \(opened)")
            return
        }
        #expect(policy.gate.breaker.isOpen(.smtp))
        #expect(policy.unstarted(.breakerOpen, now: Self.now) == .notSent(until: Self.now.addingTimeInterval(SendGate.breakerPause),
                                                                          reason: .breakerOpen))
        #expect(policy.unstarted(.leaseEnding, now: Self.now) == .notSent(until: nil, reason: .leaseEnding))
    }

    /// A destination moves on only to a provider neither open nor throttled.
    @Test func noFailoverToAnOpenProvider() {
        var policy = AnswerPolicy(gate: SendGate(leaseSeconds: 600, longestSend: 15))
        _ = policy.decide(Result.refused.outcome, Self.facts(.lastOnLastProvider), now: Self.now)  // smtp opens
        let decision = policy.decide(Result.retry.outcome, Self.facts(.lastOfTwoProviders), now: Self.now)
        #expect(decision.step == .record)
    }

    /// An answer lost with its connection goes again only while every row of its request has a try left.
    @Test(arguments: [([true, true], true), ([true, false], false), ([false], false), ([true], true)])
    func aLostAnswerGoesAgainWhileEveryRowHasATryLeft(_ triesLeft: [Bool], _ resends: Bool) {
        #expect(AnswerPolicy.resends(triesLeft: triesLeft) == resends)
    }

    /// What a settled row is recorded as, from its destinations' last words.
    enum Word: String, CaseIterable, Sendable {
        case delivered, retry, retryOnLastTry, permanent, invalid, refused, notSent
    }

    static func settled(_ word: Word, policy: inout AnswerPolicy) -> RowRecord {
        let token = Destination(provider: .apns, address: "t", deviceTokenId: UUID())
        var item = QueueItem(id: UUID(), recipientUserId: UUID(), memberUserId: nil, alertStateId: nil,
                             channelRaw: "push", kindRaw: "system", severity: nil, priority: .normal,
                             payloadText: "{}", scheduledAt: now)
        item.attempts = word == .retryOnLastTry ? 5 : 1
        var row = SentRow(item: item, maxAttempts: 5, trail: [:], provider: .apns, previouslyDelivered: false, prefs: nil)
        func answer(_ outcome: DeliveryOutcome) {
            row.answers.append(DestinationAnswer(destination: token, provider: .apns,
                                                 response: ClassifiedResponse(outcome, httpStatus: 200)))
        }
        switch word {
        case .delivered: answer(.delivered(messageId: "m"))
        case .retry, .retryOnLastTry: answer(.retry(after: 30, code: "500", message: "boom"))
        case .permanent: answer(.permanent(code: "400", message: "bad"))
        case .invalid: answer(.destinationInvalid(code: "Unregistered", message: "gone"))
        case .refused: answer(.refused(code: "403", message: "key"))
        case .notSent: row.unsent.append(UnsentDestination(destination: token, until: now.addingTimeInterval(300), reason: .breakerOpen))
        }
        return policy.settle(row, escalation: EscalationPolicy(), now: now, random: 0.5).folded.row
    }

    /// Record sent; fail with a retry at the provider's time; fail for good (no try left, a permanent
    /// answer, a dead destination); release with no attempt charged (a refusal, a send never made).
    @Test(arguments: Word.allCases)
    func aSettledRowIsRecordedAsItsAnswersSay(_ word: Word) {
        var policy = AnswerPolicy(gate: SendGate(leaseSeconds: 600, longestSend: 15))
        let r = Self.settled(word, policy: &policy)
        switch word {
        case .delivered: #expect(r.status == .sent && !r.permanent)
        case .retry:
            #expect(r.status == .failed && !r.permanent)
            #expect(r.runAfter == Self.now.addingTimeInterval(30))
        case .retryOnLastTry, .permanent, .invalid: #expect(r.status == .failed && r.permanent)
        case .refused:
            #expect(r.status == .pending && r.attemptsDelta == -1)
            #expect(r.runAfter == Self.now.addingTimeInterval(DeliveryFold.refusedPause))
        case .notSent:
            #expect(r.status == .pending && r.attemptsDelta == -1)
            #expect(r.runAfter == Self.now.addingTimeInterval(300))
        }
    }

    /// Once most of a provider's answers are refusals a configuration slip could explain, a held row's
    /// such refusals become retries that name what to check (no token deactivated), reported the first
    /// time only; each rewrite is counted.
    @Test func aSuspectProvidersHeldRefusalsBecomeRetries() {
        var policy = AnswerPolicy(gate: SendGate(leaseSeconds: 600, longestSend: 15))
        let facts = AnswerPolicy.Facts(provider: .apns, order: [], pinned: true, check: Self.check)
        for _ in 0..<ProviderHealth.minimumInvalid {
            #expect(policy.decide(Result.suspiciousInvalid.outcome, facts, now: Self.now).step == .hold)
        }
        var item = QueueItem(id: UUID(), recipientUserId: UUID(), memberUserId: nil, alertStateId: nil,
                             channelRaw: "push", kindRaw: "system", severity: nil, priority: .normal,
                             payloadText: "{}", scheduledAt: Self.now)
        item.attempts = 1
        var row = SentRow(item: item, maxAttempts: 5, trail: [:], provider: .apns, previouslyDelivered: false, prefs: nil)
        row.answers = [DestinationAnswer(destination: Destination(provider: .apns, address: "t", deviceTokenId: UUID()),
                                         provider: .apns,
                                         response: ClassifiedResponse(.destinationInvalid(code: "BadDeviceToken", message: "bad"),
                                                                      httpStatus: 400))]
        let first = policy.settle(row, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(first.firstReports == [.apns])
        #expect(first.rewritten == [.apns])
        #expect(first.folded.row.status == .failed && !first.folded.row.permanent)
        #expect(first.folded.row.reason == "config_suspect")
        #expect(first.folded.deactivations.isEmpty)
        let again = policy.settle(row, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(again.firstReports.isEmpty)
        #expect(again.rewritten == [.apns])
    }
}
