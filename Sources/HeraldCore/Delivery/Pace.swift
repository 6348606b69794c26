import Foundation

/// Paces one provider's requests to its `Quota`: a token bucket of messages, and a count of the
/// requests in flight. Pure: it takes `now`, in seconds on a clock that does not go back (a pass's
/// elapsed time), and says whether a request may start.
///
/// The bucket holds `capacity` messages (the largest request: a burst of one request) and refills at
/// `refill` messages a second, so any interval of `t` seconds starts at most `capacity + refill × t`
/// messages. The two are chosen so that this is at most the quota's limit over a window `headroom`
/// longer than the provider's: a provider counts a request when it arrives, herald when it starts it.
///
///     var pace = Pace(Quota(limit: 50, window: 1))
///     pace.take(1, now: 0)       // .go
///     pace.take(1, now: 0)       // .wait(seconds: 0.022…): 50 in any 1.1 s, one every 22 ms
///     pace.answered()            // a request of the provider finished (its slot in flight is free)
public struct Pace: Sendable, Equatable {
    /// How much longer than the provider's window the quota is held over: a tenth (100 ms of a
    /// second), for the network's jitter and a new connection's handshake between herald's start and
    /// the provider's count. So a provider's figure is used to about 90 %.
    public static let headroom = 0.1
    /// The longest wait a decision names (a year): waits are finite whatever the quota.
    public static let longestWait: Double = 365 * 86_400

    public let quota: Quota
    /// Messages one request carries at most: the adapter's largest, within half the limit (so a burst
    /// stays a fraction of the window's budget).
    public let largestRequest: Int
    /// The bucket's size in messages (infinite without a rate).
    public let capacity: Double
    /// Messages a second the bucket refills with (0 without a rate).
    public let refill: Double
    public private(set) var tokens: Double
    /// `now` of the last refill.
    public private(set) var updated: Double?
    /// Requests started and not yet answered.
    public private(set) var inFlight = 0

    /// What the pace says of one request.
    public enum Decision: Sendable, Equatable {
        case go
        /// Not before `seconds` from now: the bucket lacks the messages.
        case wait(seconds: Double)
        /// Not before a request in flight is answered: the concurrency is reached.
        case full
    }

    /// - Parameter largestRequest: messages the adapter puts in one request at most (Expo 100, others 1).
    public init(_ quota: Quota, largestRequest: Int = 1) {
        self.quota = quota
        let adapterMax = max(1, largestRequest)
        guard let (limit, window) = quota.rate else {
            self.largestRequest = adapterMax
            capacity = .infinity
            refill = 0
            tokens = .infinity
            return
        }
        let half = limit / 2
        self.largestRequest = half >= Double(adapterMax) ? adapterMax : max(1, Int(half))
        capacity = Double(self.largestRequest)
        // capacity + refill × window × (1 + headroom) ≤ limit; with a limit under 2, a burst of 1 and half
        // the limit refilled keep the count at 1 (starts are whole requests). The last factor keeps
        // floating-point rounding on the safe side.
        let span = window * (1 + Self.headroom)
        let perSecond = max(limit - capacity, half) / span * (1 - 1e-9)
        refill = perSecond.isFinite ? perSecond : .greatestFiniteMagnitude
        tokens = capacity
    }

    /// Whether a request of `cost` messages may start at `now`; when it may, it is counted (its messages
    /// out of the bucket, one more in flight). A request larger than the bucket (which `largestRequest`
    /// prevents) goes when the bucket is full and leaves it in debt, so it is never stuck. A `now` that is
    /// not finite, or earlier than the last, refills nothing.
    public mutating func take(_ cost: Int, now: Double) -> Decision {
        if let bound = quota.inFlightBound, inFlight >= bound { return .full }
        guard quota.rate != nil else {
            inFlight += 1
            return .go
        }
        refill(to: now)
        let messages = Double(max(1, cost))
        let needed = min(messages, capacity)
        guard tokens >= needed else {
            let wait = (needed - tokens) / refill
            return .wait(seconds: wait.isFinite ? min(max(wait, 0), Self.longestWait) : Self.longestWait)
        }
        tokens -= messages
        inFlight += 1
        return .go
    }

    /// A request started by `take` was answered (or ended): its slot in flight is free.
    public mutating func answered() { inFlight = max(0, inFlight - 1) }

    /// Nothing is in flight any more (a round's requests have all finished).
    public mutating func settled() { inFlight = 0 }

    private mutating func refill(to now: Double) {
        guard now.isFinite else { return }
        guard let last = updated else {
            updated = now
            return
        }
        guard now > last else { return }
        let added = refill * (now - last)
        tokens = min(capacity, added.isFinite ? tokens + added : capacity)
        updated = now
    }
}

/// Every provider's `Pace` in one pass (or follower): the quotas of the settings, each divided among
/// the passes that send at once (`HERALD_QUOTA_SHARES`).
///
///     var pacer = Pacer(quotas: [.fcm: Quota(limit: 600_000, window: 60)], largestRequests: [.fcm: 1], shares: 2)
///     pacer.take(.fcm, cost: 1, now: clock.elapsed)   // .go, .wait(seconds:) or .full
///     pacer.answered(.fcm)
public struct Pacer: Sendable, Equatable {
    public private(set) var paces: [Provider: Pace]

    public init(quotas: [Provider: Quota], largestRequests: [Provider: Int], shares: Int = 1) {
        var paces: [Provider: Pace] = [:]
        for (provider, quota) in quotas where quota != .unbounded {
            paces[provider] = Pace(quota.share(of: shares), largestRequest: largestRequests[provider] ?? 1)
        }
        self.paces = paces
    }

    /// Messages one request of `provider` may carry: the pace's bound, else the adapter's own.
    public func largestRequest(_ provider: Provider, adapterMax: Int) -> Int {
        min(max(1, adapterMax), paces[provider]?.largestRequest ?? Int.max)
    }

    public mutating func take(_ provider: Provider, cost: Int, now: Double) -> Pace.Decision {
        paces[provider]?.take(cost, now: now) ?? .go
    }

    public mutating func answered(_ provider: Provider) { paces[provider]?.answered() }

    public mutating func settled() {
        for provider in paces.keys { paces[provider]?.settled() }
    }
}
