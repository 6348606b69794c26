/// Why a destination's request was never sent, so its row goes back to the queue with no attempt
/// charged (`released`). Its raw value is the trail's reason.
///
///     UnsentDestination(destination: d, until: nil, reason: .leaseEnding)
public enum ReleaseReason: String, Sendable, CaseIterable {
    /// A stop signal (SIGTERM, SIGINT, SIGHUP): no new request starts.
    case interrupted
    /// A record flush failed: no new request starts, the pass ends.
    case recordFailed = "record_failed"
    /// The rest of the batch's lease could not cover a whole send.
    case leaseEnding = "lease_ending"
    /// The provider asked this pass to slow down (a provider-wide `Retry-After`).
    case throttled
    /// The provider's circuit breaker is open for the pass.
    case breakerOpen = "breaker_open"
    /// The provider refused herald's own credentials or configuration.
    case providerRefused = "provider_refused"
    /// Its connection kept ending before the request wholly left.
    case connectionEnded = "connection_ended"

    /// The reasons that move a destination to its channel's next provider: the provider, not the
    /// message, is unavailable for the pass.
    public var movesToNextProvider: Bool { self == .throttled || self == .breakerOpen }
}
