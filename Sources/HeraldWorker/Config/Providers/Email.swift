import HeraldChannels
import HeraldCore

extension ProviderRegistration {
    /// SENDGRID_API_KEY [SENDGRID_URL], with EMAIL_FROM.
    static let sendgrid = ProviderRegistration(
        provider: .sendgrid, keys: ["SENDGRID_API_KEY", "SENDGRID_URL", "EMAIL_FROM"]
    ) { settings in
        guard let key = try settings.secret("SENDGRID_API_KEY") else { return nil }
        return try SendGridAdapter(apiKey: key, from: try emailFrom(settings), baseURL: settings["SENDGRID_URL"])
    }

    /// SMTP_URL [SMTP_REQUIRE_TLS], with EMAIL_FROM.
    static let smtp = ProviderRegistration(
        provider: .smtp, keys: ["SMTP_URL", "SMTP_REQUIRE_TLS", "EMAIL_FROM"]
    ) { settings in
        guard let url = try settings.secret("SMTP_URL") else { return nil }
        return try SMTPAdapter(url: url, from: try emailFrom(settings),
                                       requireTLS: try settings.bool("SMTP_REQUIRE_TLS") ?? true)
    }

    /// EMAIL_FROM, which every email provider needs (and which alone is a configuration slip).
    static func emailFrom(_ settings: Settings) throws -> String {
        guard let from = settings["EMAIL_FROM"] else {
            throw ConfigError("EMAIL_FROM is not set: email needs a sender, e.g. EMAIL_FROM='Herald <noreply@example.com>'")
        }
        return from
    }
}
