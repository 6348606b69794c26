import HeraldChannels
import HeraldCore

extension ProviderRegistration {
    /// EXPO_ACCESS_TOKEN, or HERALD_EXPO=on without a token [EXPO_URL]; HERALD_ANDROID_CHANNEL_<KIND>
    /// (e.g. _PATTERN_ALERT), else HERALD_ANDROID_CHANNEL, else the kind's default.
    static let expo = ProviderRegistration(
        provider: .expo, keys: ["EXPO_ACCESS_TOKEN", "HERALD_EXPO", "EXPO_URL", "HERALD_ANDROID_CHANNEL", "HERALD_ANDROID_CHANNEL_"]
    ) { settings in
        let token = try settings.secret("EXPO_ACCESS_TOKEN")
        let on = try settings.bool("HERALD_EXPO") ?? (settings["EXPO_URL"] != nil)
        guard token != nil || on else { return nil }
        var channels: [String: String] = [:]
        for kind in Kind.allCases {
            if let c = settings["HERALD_ANDROID_CHANNEL_" + kind.rawValue.uppercased()], !c.isEmpty { channels[kind.rawValue] = c }
        }
        let fallback = settings["HERALD_ANDROID_CHANNEL"].flatMap { $0.isEmpty ? nil : $0 }
        return try ExpoAdapter(accessToken: token, baseURL: settings["EXPO_URL"],
                                      androidChannelId: fallback, androidChannels: channels)
    }
}
