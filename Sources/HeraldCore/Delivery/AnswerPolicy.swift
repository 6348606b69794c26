import Foundation

/// What a pass does with each result of a send, destination by destination, and with a row once every
/// destination has had its last word. Pure: it takes the row's facts, what became of the send and
/// `now`, and returns a decision; the delivery driver does the I/O (sends again, records, logs).
///
///     var policy = AnswerPolicy(gate: SendGate(leaseSeconds: 600, longestSend: 15))
///     let d = policy.decide(.answered(answer), facts, now: now)
///     d.signals            // what the answer taught the gate (throttle, breaker), to log and count
///     d.step               // .failOver(to: .smtp), .resend, .wait, .hold or .record
///     let s = policy.settle(row, escalation: policy, now: now, random: r)   // once the row is done
///     s.folded.row.status  // sent; failed with a retry time; failed for good; pending again
///
/// The rules, in the order they apply to one result:
/// - an answer from the wire teaches the gate (`SendGate.learn`: throttles, the circuit breaker);
/// - an answer lost with its connection goes again at once while every row of its request has a try
///   left (`resends`), kept as an attempt and charged a try;
/// - a transient failure, a throttled or broken provider moves the destination to its channel's next
///   provider (`SendGate.next`), the failed answer kept as an attempt;
/// - otherwise it is the destination's last word: a refusal a configuration slip could explain holds
///   its row until the batch's sends are done (`ConfigurationWatch`); a row whose last destination
///   answered, and that is not held, is recorded now.
/// - `settle` applies the configuration watch's verdict to the row's answers, then `DeliveryFold`.
public struct AnswerPolicy: Sendable, Equatable {
    /// Throttles, the circuit breaker and the batch's lease: whether and where each request goes.
    public var gate: SendGate
    /// Each provider's answers in this pass, to tell a configuration slip from dead destinations.
    public var watch: ConfigurationWatch

    public init(gate: SendGate, watch: ConfigurationWatch = ConfigurationWatch()) {
        self.gate = gate
        self.watch = watch
    }

    /// What became of one send to one destination.
    public enum Outcome: Sendable, Equatable {
        /// The provider answered over the wire.
        case answered(ClassifiedResponse)
        /// Herald could not make the request (a provider's access token not fetched, a message that
        /// cannot be built): an answer of herald's own, which teaches the gate nothing.
        case notMade(ClassifiedResponse)
        /// The answer was lost with its connection, and the request goes again at once (`resends`).
        case lost(ClassifiedResponse)
        /// Never sent (held back by the gate, or not started): may be tried again from `until` (nil: at
        /// once), no attempt charged.
        case notSent(until: Date?, reason: ReleaseReason)
    }

    /// What the pass knows of the destination's row when a result arrives.
    public struct Facts: Sendable, Equatable {
        /// The provider the send went through.
        public var provider: Provider
        /// The channel's providers in failover order (those with an adapter).
        public var order: [Provider]
        /// The destination belongs to its provider (a device token): it never moves.
        public var pinned: Bool
        /// What the provider's adapter says a configuration slip looks like.
        public var check: ConfigurationCheck?
        /// The row's destinations still without their last word, this one included.
        public var awaiting: Int
        /// The row already waits for the configuration verdict.
        public var held: Bool

        public init(provider: Provider, order: [Provider] = [], pinned: Bool = false, check: ConfigurationCheck? = nil,
                    awaiting: Int = 1, held: Bool = false) {
            self.provider = provider
            self.order = order
            self.pinned = pinned
            self.check = check
            self.awaiting = awaiting
            self.held = held
        }
    }

    /// What the pass does next with the destination and its row.
    public enum Step: Sendable, Equatable {
        /// The destination goes to `provider` next; an answer is kept as a delivery attempt.
        case failOver(to: Provider)
        /// The request goes again at once; the lost answer is kept as an attempt, the row charged a try.
        case resend
        /// The destination's last word; its row waits for its other destinations, or for the verdict.
        case wait
        /// The destination's last word, a refusal a configuration slip could explain: its row waits
        /// for the verdict, when the batch's sends are done, and is recorded then.
        case hold
        /// The row's last destination had its last word: fold the row and record it now.
        case record
    }

    public struct Decision: Sendable, Equatable {
        /// What the answer taught the gate, for the driver to log and count (a breaker opening, a
        /// refusal of herald's credentials, a throttle).
        public var signals: [SendGate.Event]
        public var step: Step

        public init(_ step: Step, signals: [SendGate.Event] = []) {
            self.step = step
            self.signals = signals
        }
    }

    /// Decides what follows one result for one destination.
    public mutating func decide(_ outcome: Outcome, _ facts: Facts, now: Date) -> Decision {
        switch outcome {
        case .lost:
            return Decision(.resend)
        case .notSent(_, let reason):
            if let next = gate.next(afterHold: reason, from: facts.provider, order: facts.order, pinned: facts.pinned, now: now) {
                return Decision(.failOver(to: next))
            }
            return Decision(lastWord(facts, suspicious: false))
        case .answered(let answer), .notMade(let answer):
            var signals: [SendGate.Event] = []
            if case .answered = outcome { signals = gate.learn(answer, from: facts.provider, now: now) }
            if let next = gate.next(after: answer, from: facts.provider, order: facts.order, pinned: facts.pinned, now: now) {
                return Decision(.failOver(to: next), signals: signals)
            }
            let suspicious = watch.note(answer, from: facts.provider, check: facts.check)
            return Decision(lastWord(facts, suspicious: suspicious), signals: signals)
        }
    }

    private func lastWord(_ facts: Facts, suspicious: Bool) -> Step {
        if suspicious { return .hold }
        return facts.awaiting <= 1 && !facts.held ? .record : .wait
    }

    /// Whether a request whose answer was lost with its connection goes again: while each of its rows
    /// has a try left (losing a health alert is worse than a copy the device folds away: every push
    /// carries a collapse id).
    public static func resends(triesLeft: [Bool]) -> Bool { triesLeft.allSatisfy { $0 } }

    /// What became of a request never started for `reason`: its rows may go again from the gate's
    /// retry time (an open breaker's: a later pass; the others: at once).
    public func unstarted(_ reason: ReleaseReason, now: Date) -> Outcome {
        .notSent(until: gate.retryTime(reason, now: now), reason: reason)
    }

    /// A row once every destination had its last word.
    public struct Settled: Sendable {
        public var folded: FoldedRow
        /// The providers whose answers the verdict rewrote, one entry per answer.
        public var rewritten: [Provider] = []
        /// The providers whose suspicion is reported for the first time in the pass.
        public var firstReports: [Provider] = []
    }

    /// The row's records: the configuration watch's verdict applied to its answers (a suspect
    /// provider's refusals become retries that name what to check), then `DeliveryFold`.
    public mutating func settle(_ row: SentRow, escalation: EscalationPolicy, now: Date, random: Double) -> Settled {
        var sent = row
        var rewritten: [Provider] = []
        var firstReports: [Provider] = []
        sent.answers = sent.answers.map { answer in
            var a = answer
            let (final, first) = watch.verdict(a.response, from: a.provider, destination: a.destination)
            if final != a.response {
                if first { firstReports.append(a.provider) }
                rewritten.append(a.provider)
                a.response = final
            }
            return a
        }
        let folded = DeliveryFold.fold(sent, escalation: escalation, now: now, random: random)
        return Settled(folded: folded, rewritten: rewritten, firstReports: firstReports)
    }
}
