import Foundation

/// What a provider allows one sender: at most `limit` messages in any `window` seconds, and at most
/// `concurrency` requests in flight at once (nil: no such bound). The published figures are the
/// defaults (docs/providers.md, "Published quotas"); each is a setting.
///
///     Quota(limit: 600_000, window: 60)          // FCM HTTP v1, per project
///     Quota(limit: 600, window: 1)               // Expo, per project
///     Quota(limit: 80, window: 1)                // WhatsApp Cloud API, per phone number
///     Quota(concurrency: 500)                    // APNs: no published rate; streams observed
///     Quota(limit: 50, window: 1).share(of: 2)   // 25 a second: half, for each of two passes
public struct Quota: Sendable, Equatable, Hashable {
    public var limit: Double?
    public var window: Double
    public var concurrency: Int?

    public init(limit: Double? = nil, window: Double = 1, concurrency: Int? = nil) {
        self.limit = limit
        self.window = window
        self.concurrency = concurrency
    }

    /// No bound at all.
    public static let unbounded = Quota()

    /// The providers' published figures (docs/providers.md, "Published quotas"): FCM HTTP v1 600,000
    /// messages a minute per project; Expo 600 notifications a second per project; WhatsApp Cloud API
    /// 80 messages a second per business phone number; APNs no rate, about 500 streams at once
    /// observed. Twilio, SendGrid, SMTP and the webhook publish no figure herald can hold to: unbounded,
    /// their 429s and 4yz replies pace them.
    public static let published: [Provider: Quota] = [
        .apns: Quota(concurrency: 500),
        .fcm: Quota(limit: 600_000, window: 60),
        .expo: Quota(limit: 600, window: 1),
        .whatsapp: Quota(limit: 80, window: 1),
    ]

    /// The rate, when it is one a pacer can honour: a limit of at least one message, over a window of
    /// a positive, finite length. Anything else (0, negative, NaN, infinite) bounds nothing; the
    /// settings refuse such values before they get here.
    public var rate: (limit: Double, window: Double)? {
        guard let limit, limit.isFinite, limit >= 1, window.isFinite, window > 0 else { return nil }
        return (limit, window)
    }

    /// The in-flight bound, when it is one: at least 1.
    public var inFlightBound: Int? {
        guard let concurrency, concurrency >= 1 else { return nil }
        return concurrency
    }

    /// One pass's share when `n` passes send at once: the limit and the concurrency divided by `n`.
    /// A limit that would fall under one message a window keeps one message over a window `n` / limit
    /// times as long (50 a second shared by 100: one every 2 s); the concurrency keeps at least 1. An `n`
    /// under 1 is taken as 1.
    public func share(of n: Int) -> Quota {
        guard n > 1 else { return self }
        var shared = self
        if let (limit, window) = rate {
            let part = limit / Double(n)
            if part >= 1 {
                shared.limit = part
            } else {
                shared.limit = 1
                let longer = window * (Double(n) / limit)
                shared.window = longer.isFinite ? longer : .greatestFiniteMagnitude
            }
        }
        if let c = inFlightBound { shared.concurrency = max(1, c / n) }
        return shared
    }
}
