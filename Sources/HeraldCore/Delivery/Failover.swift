import Foundation

/// The rule that moves a destination to its channel's next provider within a pass. A transient failure,
/// a provider throttled for the pass or one whose circuit breaker is open moves it on; a permanent
/// answer does not, and a push destination stays with the provider that issued its token. Providers
/// whose breaker is open or that are still throttled at `now` are passed over.
///
///     Failover.next(after: .sendgrid, failure: .transient, order: [.sendgrid, .smtp],
///                   pinned: false, open: [], throttledUntil: [:], now: now)  // .smtp
public enum Failover {
    /// How a destination's send through a provider went wrong.
    public enum Failure: String, Sendable, CaseIterable {
        /// A retryable answer (5xx, timeout, refused connection).
        case transient
        /// Not sent: the provider asked to slow down earlier in the pass.
        case throttled
        /// Not sent: the provider's circuit breaker is open for the pass.
        case breakerOpen = "breaker_open"
        /// A permanent answer about the destination or the message: another provider would say the same.
        case permanent
    }

    /// The provider to try next, or nil (stay: record the failure, or let the row wait).
    /// - Parameters:
    ///   - failed: the provider that failed.
    ///   - order: the channel's configured providers, in failover order.
    ///   - pinned: the destination belongs to its provider (a device token).
    ///   - open: providers whose circuit breaker is open.
    ///   - throttledUntil: per provider, until when it asked not to be called.
    public static func next(after failed: Provider, failure: Failure, order: [Provider], pinned: Bool,
                            open: Set<Provider>, throttledUntil: [Provider: Date], now: Date) -> Provider? {
        guard failure != .permanent, !pinned, let at = order.firstIndex(of: failed) else { return nil }
        return order[(at + 1)...].first { candidate in
            !open.contains(candidate) && !(throttledUntil[candidate].map { $0 > now } ?? false)
        }
    }
}
