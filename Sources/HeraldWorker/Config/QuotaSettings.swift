import HeraldCore

/// The providers' quotas from the settings, over the published figures (`Quota.published`):
///
///     HERALD_<PROVIDER>_QUOTA    messages a second or a minute (80/s, 600000/min), or off
///     HERALD_APNS_CONCURRENCY    APNs requests in flight at once (500), or off
///     HERALD_QUOTA_SHARES        the passes and followers sending at once (1): each paces to its share
///
/// A value that is none of these exits 1 naming the variable.
enum QuotaSettings {
    /// The messages a quota may give in its window: from 1 to a billion.
    static let limitRange = 1...1_000_000_000
    /// The requests in flight HERALD_APNS_CONCURRENCY may give.
    static let concurrencyRange = 1...100_000
    /// The passes HERALD_QUOTA_SHARES may name.
    static let sharesRange = 1...1000

    /// HERALD_FCM_QUOTA, … : the setting of each provider that sends.
    static func key(_ provider: Provider) -> String { "HERALD_" + provider.rawValue.uppercased() + "_QUOTA" }

    static func apply(_ settings: Settings, to options: inout PassOptions) throws {
        for provider in ProviderCatalog.defaultOrder {
            let key = key(provider)
            guard let text = settings[key] else { continue }
            var quota = options.quotas[provider] ?? .unbounded
            if let (limit, window) = try rate(text, key: key) {
                quota.limit = limit
                quota.window = window
            } else {
                quota.limit = nil
                quota.window = 1
            }
            options.quotas[provider] = quota == .unbounded ? nil : quota
        }
        if let text = settings["HERALD_APNS_CONCURRENCY"] {
            var quota = options.quotas[.apns] ?? .unbounded
            quota.concurrency = try concurrency(text)
            options.quotas[.apns] = quota == .unbounded ? nil : quota
        }
        if let shares = try settings.int("HERALD_QUOTA_SHARES", in: sharesRange) { options.quotaShares = shares }
    }

    /// `80/s`, `600000/min` (also `/second`, `/minute`), or `off` (nil): messages in a window of seconds.
    static func rate(_ text: String, key: String) throws -> (limit: Double, window: Double)? {
        let value = text.trimmingCharacters(in: .whitespaces).lowercased()
        if value == "off" { return nil }
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        let windows: [String: Double] = ["s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60]
        guard parts.count == 2, let count = Int(parts[0].trimmingCharacters(in: .whitespaces)),
              limitRange.contains(count),
              let window = windows[parts[1].trimmingCharacters(in: .whitespaces)] else {
            throw ConfigError("\(key) must be messages a second or a minute, from 1 to 1000000000 "
                + "(80/s, 600000/min), or off; got '\(text)'")
        }
        return (Double(count), window)
    }

    /// HERALD_APNS_CONCURRENCY: requests in flight, or `off` (nil).
    static func concurrency(_ text: String) throws -> Int? {
        let value = text.trimmingCharacters(in: .whitespaces).lowercased()
        if value == "off" { return nil }
        guard let n = Int(value), concurrencyRange.contains(n) else {
            throw ConfigError("HERALD_APNS_CONCURRENCY must be the APNs requests in flight at once, from 1 to 100000, "
                + "or off; got '\(text)'")
        }
        return n
    }
}
