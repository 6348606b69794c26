import Foundation
import HeraldChannels
import HeraldCore

/// Which adapters serve each channel in this run, from the settings. Checked before any row is
/// claimed: a channel half configured, an unreadable key file or a malformed URL stops the run (exit 1)
/// with a message that names the variable to set.
///
///     push       APNS_KEY_FILE APNS_KEY_ID APNS_TEAM_ID APNS_TOPIC [APNS_ENV=production|sandbox] [APNS_URL]
///                FCM_SERVICE_ACCOUNT_FILE [FCM_URL]
///                EXPO_ACCESS_TOKEN, or HERALD_EXPO=on without a token [EXPO_URL]
///     sms        TWILIO_ACCOUNT_SID TWILIO_AUTH_TOKEN (TWILIO_FROM | TWILIO_MESSAGING_SERVICE_SID) [TWILIO_URL]
///                [TWILIO_STATUS_CALLBACK_URL]
///     whatsapp   WHATSAPP_TOKEN WHATSAPP_PHONE_NUMBER_ID [WHATSAPP_TEMPLATE_<KIND>=name:lang] [WHATSAPP_URL]
///     email      (SENDGRID_API_KEY [SENDGRID_URL] | SMTP_URL) EMAIL_FROM
///     webhook    WEBHOOK_URL WEBHOOK_SECRET
///     in_app     always on: it writes the inbox table
///     any        HERALD_CHANNEL_<CHANNEL>=log prints instead of sending; =off disables the channel
///
/// A channel with no route is not claimed: its rows stay pending and are counted as unroutable. Push
/// reaches each device token through the provider that issued it; tokens of a provider that is not
/// configured are not destinations.
public struct ChannelRoutes: Sendable {
    public var routes: [Channel: ChannelRoute]

    public init(_ routes: [Channel: ChannelRoute]) {
        self.routes = routes
    }

    public static func load(_ settings: Settings) throws -> ChannelRoutes {
        var routes: [Channel: ChannelRoute] = [.inApp: .inbox]

        if let url = settings["WEBHOOK_URL"] {
            guard let secret = try settings.secret("WEBHOOK_SECRET") else {
                throw ConfigError("WEBHOOK_URL is set but WEBHOOK_SECRET is not: set WEBHOOK_SECRET "
                    + "(or WEBHOOK_SECRET_FILE) to whsec_ followed by the base64 of 24–64 random bytes")
            }
            let timeout = Double(try settings.int("WEBHOOK_TIMEOUT_SECONDS") ?? 15)
            do {
                routes[.webhook] = .providers(["webhook": .single(try WebhookAdapter(url: url, secrets: secret, timeout: timeout))])
            } catch let error as AdapterError {
                throw ConfigError(error.description)
            }
        } else if try settings.secret("WEBHOOK_SECRET") != nil {
            throw ConfigError("WEBHOOK_SECRET is set but WEBHOOK_URL is not: set WEBHOOK_URL to the receiver's https URL")
        }

        do {
            var push: [String: ProviderAdapter] = [:]
            if let apns = try apns(settings) { push["apns"] = .single(apns) }
            if let json = try settings.fileText("FCM_SERVICE_ACCOUNT_FILE") {
                do {
                    push["fcm"] = .single(try FCMAdapter(serviceAccountJSON: json, baseURL: settings["FCM_URL"]))
                } catch let error as AdapterError where error.setting != nil {
                    // The adapter names the field; the operator also needs the variable (and file) to fix.
                    let setting = error.setting ?? ""
                    throw ConfigError("\(setting) (\(settings[setting] ?? ""))" + (error.detail ?? ""))
                }
            }
            let expoToken = try settings.secret("EXPO_ACCESS_TOKEN")
            let expoOn = try settings.bool("HERALD_EXPO") ?? (settings["EXPO_URL"] != nil)
            if expoToken != nil || expoOn {
                // HERALD_ANDROID_CHANNEL_<KIND> (e.g. _PATTERN_ALERT), else HERALD_ANDROID_CHANNEL, else the kind's default.
                var channels: [String: String] = [:]
                for kind in Kind.allCases {
                    if let c = settings["HERALD_ANDROID_CHANNEL_" + kind.rawValue.uppercased()], !c.isEmpty { channels[kind.rawValue] = c }
                }
                let fallback = settings["HERALD_ANDROID_CHANNEL"].flatMap { $0.isEmpty ? nil : $0 }
                push["expo"] = .batch(try ExpoAdapter(accessToken: expoToken, baseURL: settings["EXPO_URL"],
                                                      androidChannelId: fallback, androidChannels: channels))
            }
            if !push.isEmpty { routes[.push] = .providers(push) }

            if let twilio = try twilio(settings) { routes[.sms] = .providers(["twilio": .single(twilio)]) }
            if let whatsapp = try whatsapp(settings) { routes[.whatsapp] = .providers(["whatsapp": .single(whatsapp)]) }
            let emails = try email(settings)
            if !emails.isEmpty {
                routes[.email] = .providers(Dictionary(emails.map { ($0.provider, ProviderAdapter.single($0)) }) { a, _ in a })
            }
        } catch let error as AdapterError {
            throw ConfigError(error.description)
        }

        // The order of each channel's providers: HERALD_<CHANNEL>_PROVIDERS, else every configured one
        // in the documented order. A destination fails over along it; push follows the token's provider.
        for channel in Channel.allCases {
            guard case .providers(let adapters, _)? = routes[channel] else { continue }
            let key = "HERALD_" + channel.rawValue.uppercased() + "_PROVIDERS"
            var order = Self.defaultOrder.filter { adapters[$0] != nil } + adapters.keys.sorted().filter { !Self.defaultOrder.contains($0) }
            if let text = settings[key] {
                let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
                guard !names.isEmpty, Set(names).count == names.count else {
                    throw ConfigError("\(key) must name providers once each, separated by commas; got '\(text)'")
                }
                for name in names where adapters[name] == nil {
                    throw ConfigError("\(key) names \(name), which is not configured for \(channel.rawValue); configured: "
                        + adapters.keys.sorted().joined(separator: ", "))
                }
                order = names
            }
            routes[channel] = .providers(adapters.filter { order.contains($0.key) }, order: order)
        }

        // HERALD_CHANNEL_<CHANNEL>=log overrides whatever else serves the channel.
        for channel in Channel.allCases {
            let key = "HERALD_CHANNEL_" + channel.rawValue.uppercased()
            guard let value = settings[key]?.lowercased() else { continue }
            switch value {
            case "log": routes[channel] = .log
            case "off", "none": routes[channel] = nil
            default:
                throw ConfigError("\(key) must be 'log' or 'off', got '\(value)'")
            }
        }
        return ChannelRoutes(routes)
    }

    public var routable: [Channel] { Channel.allCases.filter { routes[$0] != nil } }

    /// The longest time one request of this run may take on the wire (0 when nothing goes over the
    /// network): a lease must outlast the deadline plus this.
    public var longestSendTimeout: Double {
        routes.values.flatMap { route -> [Double] in
            if case .providers(let p, _) = route { return p.values.map(\.timeout) }
            return []
        }.max() ?? 0
    }

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

    static func apns(_ settings: Settings) throws -> APNsAdapter? {
        guard let v = try required(settings, ["APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC"], for: "APNs") else {
            return nil
        }
        let env = settings["APNS_ENV"] ?? "production"
        guard let environment = APNsAdapter.Environment(rawValue: env) else {
            throw ConfigError("APNS_ENV must be production or sandbox, got '\(env)'")
        }
        guard let pem = try settings.fileText("APNS_KEY_FILE") else { return nil }
        return try APNsAdapter(keyPEM: pem, keyId: v["APNS_KEY_ID"]!, teamId: v["APNS_TEAM_ID"]!, topic: v["APNS_TOPIC"]!,
                               environment: environment, baseURL: settings["APNS_URL"])
    }

    static func twilio(_ settings: Settings) throws -> TwilioAdapter? {
        guard let v = try required(settings, ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"], for: "Twilio") else {
            if settings["TWILIO_FROM"] != nil || settings["TWILIO_MESSAGING_SERVICE_SID"] != nil {
                throw ConfigError("TWILIO_ACCOUNT_SID is not set: Twilio needs TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN")
            }
            return nil
        }
        var adapter = try TwilioAdapter(accountSid: v["TWILIO_ACCOUNT_SID"]!, authToken: v["TWILIO_AUTH_TOKEN"]!,
                                        from: settings["TWILIO_FROM"], messagingServiceSid: settings["TWILIO_MESSAGING_SERVICE_SID"],
                                        baseURL: settings["TWILIO_URL"])
        if let callback = settings["TWILIO_STATUS_CALLBACK_URL"] {
            guard let u = URL(string: callback), u.scheme == "https" || u.scheme == "http", u.host != nil else {
                throw ConfigError("TWILIO_STATUS_CALLBACK_URL must be the http(s) URL of the provider-events endpoint, got '\(callback)'")
            }
            adapter.statusCallback = callback
        }
        return adapter
    }

    static func whatsapp(_ settings: Settings) throws -> WhatsAppAdapter? {
        guard let v = try required(settings, ["WHATSAPP_TOKEN", "WHATSAPP_PHONE_NUMBER_ID"], for: "WhatsApp") else { return nil }
        let templates = try WhatsAppAdapter.parseTemplates(settings.withPrefix("WHATSAPP_TEMPLATE_"))
        return try WhatsAppAdapter(token: v["WHATSAPP_TOKEN"]!, phoneNumberId: v["WHATSAPP_PHONE_NUMBER_ID"]!,
                                   templates: templates, baseURL: settings["WHATSAPP_URL"])
    }

    /// Providers in the order a channel uses them unless HERALD_<CHANNEL>_PROVIDERS says otherwise.
    public static let defaultOrder = ["apns", "fcm", "expo", "twilio", "whatsapp", "sendgrid", "smtp", "webhook"]

    /// The email providers configured (SendGrid, SMTP, or both: then SendGrid first, SMTP its failover).
    static func email(_ settings: Settings) throws -> [any HTTPAdapter] {
        let sendgrid = try settings.secret("SENDGRID_API_KEY")
        let smtp = try settings.secret("SMTP_URL")
        guard sendgrid != nil || smtp != nil else {
            if settings["EMAIL_FROM"] != nil {
                throw ConfigError("EMAIL_FROM is set but neither SENDGRID_API_KEY nor SMTP_URL is: set one of them")
            }
            return []
        }
        guard let from = settings["EMAIL_FROM"] else {
            throw ConfigError("EMAIL_FROM is not set: email needs a sender, e.g. EMAIL_FROM='Herald <noreply@example.com>'")
        }
        var out: [any HTTPAdapter] = []
        if let key = sendgrid { out.append(try SendGridAdapter(apiKey: key, from: from, baseURL: settings["SENDGRID_URL"])) }
        if let smtp { out.append(try SMTPAdapter(url: smtp, from: from, requireTLS: try settings.bool("SMTP_REQUIRE_TLS") ?? true)) }
        return out
    }

    public subscript(_ channel: Channel) -> ChannelRoute? { routes[channel] }
}
