import HeraldChannels
import HeraldCore

/// One provider herald can send through: which `Provider` it is (its channel comes with it) and how its
/// adapter is built from the settings.
struct ProviderRegistration: Sendable {
    var provider: Provider
    /// The settings it reads (a family by its prefix, `WHATSAPP_TEMPLATE_`): each is declared in
    /// `Settings.registry` and documented in docs/configuration.md.
    var keys: [String]
    /// The adapter when the settings configure this provider, nil when they do not mention it; throws
    /// (naming the variable to set) when they configure it only in part or wrongly.
    var load: @Sendable (Settings) throws -> (any ProviderAdapter)?
}

/// Every provider that sends, in the default failover order of its channel: the order of `Provider`'s
/// cases (`HERALD_<CHANNEL>_PROVIDERS` changes it). Adding a provider: its case in `Provider`
/// (HeraldCore/Model/Provider.swift), its adapter in Sources/HeraldChannels/Adapters, one file here with
/// its registration and its line in `registration(_:)` (the switch is exhaustive: the compiler asks for
/// it), its keys in `Settings.registry` and docs/configuration.md.
enum ProviderCatalog {
    static var all: [ProviderRegistration] { Provider.allCases.compactMap(registration) }

    /// The registration of a provider; nil for those that need none (inbox and log are routes).
    static func registration(_ provider: Provider) -> ProviderRegistration? {
        switch provider {
        case .apns: .apns
        case .fcm: .fcm
        case .expo: .expo
        case .twilio: .twilio
        case .whatsapp: .whatsapp
        case .sendgrid: .sendgrid
        case .smtp: .smtp
        case .webhook: .webhook
        case .inbox, .log: nil
        }
    }

    /// The providers in the default order.
    static var defaultOrder: [Provider] { all.map(\.provider) }
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
