import Foundation
import HeraldChannels
import HeraldCore

/// Which adapters serve each channel in this run, from the settings: every provider of `ProviderCatalog`
/// whose settings are present (each one's keys are in its file under Config/Providers). Checked before any
/// row is claimed: a channel half configured, an unreadable key file or a malformed URL stops the run
/// (exit 1) with a message that names the variable to set.
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

        // Every provider the settings configure (ProviderCatalog), grouped by channel.
        var byChannel: [Channel: [Provider: any ProviderAdapter]] = [:]
        do {
            for registration in ProviderCatalog.all {
                guard let channel = registration.provider.channel, let adapter = try registration.load(settings) else { continue }
                byChannel[channel, default: [:]][registration.provider] = adapter
            }
        } catch let error as AdapterError {
            throw ConfigError(error.description)
        }
        if byChannel[.email] == nil, settings["EMAIL_FROM"] != nil {
            throw ConfigError("EMAIL_FROM is set but neither SENDGRID_API_KEY nor SMTP_URL is: set one of them")
        }
        for (channel, adapters) in byChannel { routes[channel] = .providers(adapters) }

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
                var named: [Provider] = []
                for name in names {
                    guard let provider = Provider(rawValue: name), adapters[provider] != nil else {
                        throw ConfigError("\(key) names \(name), which is not configured for \(channel.rawValue); configured: "
                            + adapters.keys.sorted().map(\.rawValue).joined(separator: ", "))
                    }
                    named.append(provider)
                }
                order = named
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

    /// The most messages each configured provider's adapter puts in one request (Expo 100, others 1).
    public var largestRequests: [Provider: Int] {
        var largest: [Provider: Int] = [:]
        for route in routes.values {
            guard case .providers(let adapters, _) = route else { continue }
            for (provider, adapter) in adapters { largest[provider] = adapter.maxBatch }
        }
        return largest
    }

    /// Providers in the order a channel uses them unless HERALD_<CHANNEL>_PROVIDERS says otherwise.
    public static var defaultOrder: [Provider] { ProviderCatalog.defaultOrder }

    /// The status pollers of every configured provider (`StatusPolling`: Twilio), for the `statuses` phase.
    public var statusPollers: [any StatusPolling] {
        Channel.allCases.flatMap { routes[$0]?.statusPollers ?? [] }
    }

    public subscript(_ channel: Channel) -> ChannelRoute? { routes[channel] }
}
