import HeraldChannels
import HeraldCore

extension ProviderRegistration {
    /// The seconds WEBHOOK_TIMEOUT_SECONDS may give: from 1 to 300 (five minutes).
    static let webhookTimeoutRange = 1...300

    /// WEBHOOK_URL WEBHOOK_SECRET [WEBHOOK_TIMEOUT_SECONDS]
    static let webhook = ProviderRegistration(
        provider: .webhook, keys: ["WEBHOOK_URL", "WEBHOOK_SECRET", "WEBHOOK_TIMEOUT_SECONDS"]
    ) { settings in
        guard let url = settings["WEBHOOK_URL"] else {
            if try settings.secret("WEBHOOK_SECRET") != nil {
                throw ConfigError("WEBHOOK_SECRET is set but WEBHOOK_URL is not: set WEBHOOK_URL to the receiver's https URL")
            }
            return nil
        }
        guard let secret = try settings.secret("WEBHOOK_SECRET") else {
            throw ConfigError("WEBHOOK_URL is set but WEBHOOK_SECRET is not: set WEBHOOK_SECRET "
                + "(or WEBHOOK_SECRET_FILE) to whsec_ followed by the base64 of 24–64 random bytes")
        }
        let timeout = Double(try settings.int("WEBHOOK_TIMEOUT_SECONDS", in: webhookTimeoutRange) ?? 15)
        return try WebhookAdapter(url: url, secrets: secret, timeout: timeout)
    }
}
