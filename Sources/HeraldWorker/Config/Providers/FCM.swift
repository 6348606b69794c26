import HeraldChannels
import HeraldCore

extension ProviderRegistration {
    /// FCM_SERVICE_ACCOUNT_FILE [FCM_URL]
    static let fcm = ProviderRegistration(
        provider: .fcm, keys: ["FCM_SERVICE_ACCOUNT_FILE", "FCM_URL"]
    ) { settings in
        guard let json = try settings.fileText("FCM_SERVICE_ACCOUNT_FILE") else { return nil }
        do {
            return try FCMAdapter(serviceAccountJSON: json, baseURL: settings["FCM_URL"])
        } catch let error as AdapterError where error.setting != nil {
            // The adapter names the field; the operator also needs the variable (and file) to fix.
            let setting = error.setting ?? ""
            throw ConfigError("\(setting) (\(settings[setting] ?? ""))" + (error.detail ?? ""))
        }
    }
}
