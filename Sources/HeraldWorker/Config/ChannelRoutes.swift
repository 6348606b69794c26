import Foundation
import HeraldChannels
import HeraldCore

/// Which adapter serves each channel in this run, from the settings. Checked before any row is claimed.
///
///     HERALD_CHANNEL_PUSH=log                         every push is printed instead of sent
///     WEBHOOK_URL=https://… WEBHOOK_SECRET=whsec_…    the webhook channel
///     (in_app is always on: it writes the inbox table)
///
/// A channel with no route is not claimed: its rows stay pending and are counted as unroutable.
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

    public subscript(_ channel: Channel) -> ChannelRoute? { routes[channel] }
}
