import Foundation

/// Whether, when and where a pass sends, provider by provider, as answers arrive: which providers asked
/// to slow down, whose circuit breaker is open, how long the batch's lease still covers a send, and
/// where a destination goes after an answer. Pure: it takes `now` (and the pass's elapsed seconds) and
/// returns decisions; the delivery driver does the I/O and logs what `learn` reports.
///
///     var gate = SendGate(leaseSeconds: 600, longestSend: 15)
///     gate.batchClaimed(at: clock.elapsed)
///     if case .hold(let until, let reason) = gate.admit(.sendgrid, now: now) { … not sent … }
///     if let reason = gate.refusal(.sendgrid, elapsed: clock.elapsed, stopping: false, recordFailed: false) { … }
///     let events = gate.learn(answer, from: .sendgrid, now: now)       // throttles, breaker
///     gate.next(after: answer, from: .sendgrid, order: [.sendgrid, .smtp], pinned: false, now: now)  // .smtp
public struct SendGate: Sendable, Equatable {
    /// How long rows held back by an open breaker wait: until a later pass (cron's interval).
    public static let breakerPause: TimeInterval = 300

    /// Providers that answered "too many requests, wait": not called again before the time they gave.
    public private(set) var throttledUntil: [Provider: Date] = [:]
    /// Providers whose requests mostly fail in this pass, or that refused herald's own credentials.
    public private(set) var breaker: CircuitBreaker
    /// A claimed row's lease, and the longest one request may take on the wire.
    public let leaseSeconds: Double
    public let longestSend: Double
    /// The pass's elapsed seconds when the batch being sent was claimed.
    public private(set) var claimedAt: Double = 0

    public init(leaseSeconds: Int, longestSend: Double, breaker: CircuitBreaker = CircuitBreaker()) {
        self.leaseSeconds = Double(leaseSeconds)
        self.longestSend = longestSend
        self.breaker = breaker
    }

    /// What the gate says of a provider's jobs before their requests are built.
    public enum Admission: Sendable, Equatable {
        case go
        /// Not sent, so not an attempt: the rows may be tried again from `until` (nil: at once).
        case hold(until: Date?, reason: ReleaseReason)
    }

    /// What an answer taught the gate, for the driver to log and count.
    public enum Event: Sendable, Equatable {
        /// The provider asked to slow down: not called again this pass before `until`.
        case throttled(Provider, until: Date)
        /// The provider's requests mostly fail: its breaker opened.
        case breakerOpened(Provider, answers: Int, failures: Int)
        /// The provider refused herald's credentials or configuration: its breaker opened at once.
        case refused(Provider, code: String?, message: String)
    }

    // MARK: Before sending

    /// A new batch was claimed at the pass's `elapsed` seconds: its lease starts now.
    public mutating func batchClaimed(at elapsed: Double) { claimedAt = elapsed }

    /// The pass's elapsed seconds after which no request of the batch starts: its lease could no longer
    /// cover a whole send (requests queue for connections and fail over, well past one send timeout),
    /// and another pass may take its rows over once the lease ends.
    public var lastStart: Double { claimedAt + leaseSeconds - longestSend - 1 }

    /// A provider's jobs: held back while it is throttled (until its time) or its breaker is open
    /// (until a later pass); else they go.
    public func admit(_ provider: Provider, now: Date) -> Admission {
        if let until = throttledUntil[provider], until > now { return .hold(until: until, reason: .throttled) }
        if breaker.isOpen(provider) { return .hold(until: now.addingTimeInterval(Self.breakerPause), reason: .breakerOpen) }
        return .go
    }

    /// Why one request may not start now, or nil: it may. A stop signal or a failed record flush stops
    /// every start; nothing starts once the batch's lease could not cover it; a provider whose breaker
    /// opened meanwhile starts nothing more.
    public func refusal(_ provider: Provider, elapsed: Double, stopping: Bool, recordFailed: Bool) -> ReleaseReason? {
        if stopping { return .interrupted }
        if recordFailed { return .recordFailed }
        if elapsed >= lastStart { return .leaseEnding }
        if breaker.isOpen(provider) { return .breakerOpen }
        return nil
    }

    /// When rows not started for `reason` may be tried again: an open breaker's wait for a later pass;
    /// the others at once.
    public func retryTime(_ reason: ReleaseReason, now: Date) -> Date? {
        reason == .breakerOpen ? now.addingTimeInterval(Self.breakerPause) : nil
    }

    // MARK: After an answer

    /// Learns from one answer of `provider`. A connection's end says nothing of the provider and teaches
    /// nothing. A refusal of herald's credentials opens the breaker at once; a provider-wide "slow down"
    /// with a wait holds the provider back; any other answer counts toward the breaker (a retry as a
    /// failure, unless it is about one destination only).
    public mutating func learn(_ answer: ClassifiedResponse, from provider: Provider, now: Date) -> [Event] {
        guard !answer.connectionEnded else { return [] }
        if case .refused(let code, let message) = answer.outcome {
            return breaker.trip(provider) ? [.refused(provider, code: code, message: message)] : []
        }
        var events: [Event] = []
        if case .provider(let wait?)? = answer.throttle {
            let until = now.addingTimeInterval(wait)
            if until > (throttledUntil[provider] ?? .distantPast) {
                throttledUntil[provider] = until
                events.append(.throttled(provider, until: until))
            }
        }
        var failed = false
        if case .retry = answer.outcome, answer.throttle?.isAboutOneDestination != true { failed = true }
        if breaker.record(provider, failed: failed) {
            let t = breaker.tally(provider)
            events.append(.breakerOpened(provider, answers: t.answers, failures: t.failures))
        }
        return events
    }

    /// Where a destination goes after `answer` from `provider`: the next provider of its channel that is
    /// neither open nor throttled (`Failover.next`), or nil — it stays (delivered, a permanent answer, a
    /// connection's end, a pinned push destination, no provider left).
    public func next(after answer: ClassifiedResponse, from provider: Provider, order: [Provider], pinned: Bool,
                     now: Date) -> Provider? {
        let failure: Failover.Failure
        switch answer.outcome {
        case .retry where answer.connectionEnded: return nil
        case .retry: failure = .transient
        case .refused: failure = .breakerOpen  // the provider refused herald itself: out for the pass
        case .delivered, .permanent, .destinationInvalid: return nil
        }
        return Failover.next(after: provider, failure: failure, order: order, pinned: pinned,
                             open: breaker.open, throttledUntil: throttledUntil, now: now)
    }

    /// Where a destination goes after it was not sent through `provider` for `reason`: the next provider
    /// when the reason is about the provider (throttled, breaker open), else nil (it waits).
    public func next(afterHold reason: ReleaseReason, from provider: Provider, order: [Provider], pinned: Bool,
                     now: Date) -> Provider? {
        guard reason.movesToNextProvider else { return nil }
        return Failover.next(after: provider, failure: reason == .throttled ? .throttled : .breakerOpen,
                             order: order, pinned: pinned, open: breaker.open, throttledUntil: throttledUntil, now: now)
    }
}
