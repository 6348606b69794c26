import HeraldChannels
import HeraldCore

extension ProviderRegistration {
    /// APNS_KEY_FILE APNS_KEY_ID APNS_TEAM_ID APNS_TOPIC [APNS_ENV=production|sandbox] [APNS_URL]
    static let apns = ProviderRegistration(
        provider: .apns, keys: ["APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC", "APNS_ENV", "APNS_URL"]
    ) { settings in
        guard let v = try required(settings, ["APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC"], for: "APNs"),
              let keyId = v["APNS_KEY_ID"], let teamId = v["APNS_TEAM_ID"], let topic = v["APNS_TOPIC"] else {
            return nil
        }
        let env = settings["APNS_ENV"] ?? "production"
        guard let environment = APNsAdapter.Environment(rawValue: env) else {
            throw ConfigError("APNS_ENV must be production or sandbox, got '\(env)'")
        }
        guard let pem = try settings.fileText("APNS_KEY_FILE") else { return nil }
        return try APNsAdapter(keyPEM: pem, keyId: keyId, teamId: teamId, topic: topic,
                                       environment: environment, baseURL: settings["APNS_URL"])
    }
}
