import Foundation

/// Per pass, per provider: stops calling a provider whose requests mostly fail, so its rows fail over
/// to the channel's next provider (or wait for a later pass) instead of burning attempts on it.
/// GOV.UK Notify switches SMS providers at about 50 errors a minute; a pass is a few minutes at most,
/// so herald opens the breaker at `minFailures` transient failures (5xx, timeouts, refused
/// connections) that are more than `ratio` of the provider's answers so far in this pass. Once open,
/// it stays open for the rest of the pass; the next pass starts closed.
///
///     var breaker = CircuitBreaker()
///     breaker.record(.sendgrid, failed: true)
///     if breaker.isOpen(.sendgrid) { … fail over … }
public struct CircuitBreaker: Sendable, Equatable {
    public var minFailures: Int
    public var ratio: Double
    private var answers: [Provider: Int] = [:]
    private var failures: [Provider: Int] = [:]
    public private(set) var open: Set<Provider> = []

    public init(minFailures: Int = 10, ratio: Double = 0.5) {
        self.minFailures = minFailures
        self.ratio = ratio
    }

    /// Counts one answer (or transport failure). Returns true when this one opened the breaker.
    @discardableResult
    public mutating func record(_ provider: Provider, failed: Bool) -> Bool {
        answers[provider, default: 0] += 1
        if failed { failures[provider, default: 0] += 1 }
        guard !open.contains(provider) else { return false }
        let f = failures[provider, default: 0], n = answers[provider, default: 0]
        if f >= minFailures && Double(f) > ratio * Double(n) {
            open.insert(provider)
            return true
        }
        return false
    }

    /// Opens the breaker at once, whatever the tally: the provider refused herald's own credentials or
    /// configuration (`DeliveryOutcome.refused`). Returns true when this call opened it.
    @discardableResult
    public mutating func trip(_ provider: Provider) -> Bool {
        answers[provider, default: 0] += 1
        failures[provider, default: 0] += 1
        return open.insert(provider).inserted
    }

    public func isOpen(_ provider: Provider) -> Bool { open.contains(provider) }

    public func tally(_ provider: Provider) -> (answers: Int, failures: Int) {
        (answers[provider, default: 0], failures[provider, default: 0])
    }
}
