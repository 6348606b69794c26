import HeraldChannels
import HeraldCore

/// One provider herald can send through: its name (as stored in `notification_deliveries.provider`), its
/// channel, and how its adapter is built from the settings.
struct ProviderRegistration: Sendable {
    var name: String
    var channel: Channel
    /// The adapter when the settings configure this provider, nil when they do not mention it; throws
    /// (naming the variable to set) when they configure it only in part or wrongly.
    var load: @Sendable (Settings) throws -> ProviderAdapter?
}

/// Every provider, in the default failover order of its channel (`HERALD_<CHANNEL>_PROVIDERS` changes
/// it). Adding a provider: its adapter in Sources/HeraldChannels/Adapters, one file here with its
/// registration, a line below, its keys in `Settings.registry` and the README.
enum ProviderCatalog {
    static let all: [ProviderRegistration] = [
        .apns, .fcm, .expo, .twilio, .whatsapp, .sendgrid, .smtp, .webhook,
    ]

    /// The provider names in the default order.
    static var defaultOrder: [String] { all.map(\.name) }
}

extension ProviderRegistration {
    /// Requires every name in `group` once any of them is set: a half-configured provider is an error.
    static func required(_ settings: Settings, _ group: [String], for provider: String) throws -> [String: String]? {
        var found: [String: String] = [:]
        for key in group {
            if let v = try settings.secret(key) { found[key] = v }
        }
        guard !found.isEmpty else { return nil }
        if let missing = group.first(where: { found[$0] == nil }) {
            throw ConfigError("\(missing) is not set: \(provider) needs \(group.joined(separator: ", "))")
        }
        return found
    }
}
