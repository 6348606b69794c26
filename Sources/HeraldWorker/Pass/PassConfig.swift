import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP

/// A pass's settings, read from the environment (`Settings`, whose keys are declared in
/// `Settings.registry`) and checked once, before any row is touched: every value parsed, bounded and
/// named in its error. Nothing here touches the database or the network; a key file named by a
/// setting is read.
///
///     let config = try PassConfig.load(settings, options: options)   // ConfigError: exit 1
///     config.options.leaseSeconds, config.routes, config.databaseURL …
public struct PassConfig {
    /// The command line's options with the settings applied (lease, rendering, escalation …).
    public var options: PassOptions
    public var databaseURL: String
    public var routes: ChannelRoutes
    public var transport: TransportOptions
    /// HERALD_LOG_ADAPTER_FILE: where the log adapter writes; nil: stdout.
    public var logAdapterFile: String?
    public var heartbeatURL: String?
    public var pushgatewayURL: String?
    public var pushgatewayInstance: String?
    /// The keys that check providers' signed events (the `events` phase).
    var eventKeys: ProviderEventKeys

    /// Reads and checks every setting a pass uses. Throws a `ConfigError` naming the variable at fault.
    static func load(_ settings: Settings, options base: PassOptions) throws -> PassConfig {
        var options = base
        guard options.batchSize > 0 else { throw ConfigError("--batch-size must be at least 1") }
        guard options.deadline.isFinite, options.deadline > 0 else { throw ConfigError("--deadline must be a positive number of seconds") }
        let routes = try ChannelRoutes.load(settings)
        try applyRendering(settings, to: &options)
        if let lease = try settings.int("HERALD_LEASE_SECONDS", in: leaseRange) { options.leaseSeconds = lease }
        try checkLease(options, longestSend: routes.longestSendTimeout)
        if let shadow = try settings.bool("HERALD_SHADOW_MODE") { options.shadowMode = shadow }
        if let version = settings["HERALD_THRESHOLDS_VERSION"] { options.thresholdsVersion = version }
        if let weather = settings["WEATHER_URL"] { options.weatherURL = try weatherURL(weather) }
        if let lead = try settings.int("HERALD_FORECAST_LEAD_MINUTES", in: forecastLeadRange) { options.forecastLead = Double(lead) * 60 }
        try applyWeatherCells(settings, to: &options)
        options.forecastInsight = try ForecastInsightService.load(settings)
        if let days = try settings.int("HERALD_RETENTION_DAYS", in: 1...36_500) { options.retentionDays = days }
        if let days = try settings.int("HERALD_AUDIT_RETENTION_DAYS", in: 1...36_500) { options.auditRetentionDays = days }
        try applyEscalation(settings, to: &options)
        try applyFollow(settings, to: &options)
        try QuotaSettings.apply(settings, to: &options)
        return PassConfig(
            options: options, databaseURL: try settings.databaseURL() ?? "", routes: routes,
            transport: try transportOptions(settings), logAdapterFile: settings["HERALD_LOG_ADAPTER_FILE"],
            heartbeatURL: settings["HERALD_HEARTBEAT_URL"],
            pushgatewayURL: options.pushgateway ?? settings["HERALD_PUSHGATEWAY_URL"],
            pushgatewayInstance: settings["HERALD_PUSHGATEWAY_INSTANCE"],
            eventKeys: try ProviderEventsTruth.keys(settings))
    }

    /// HERALD_CA_FILE (readable) and HERALD_CONNECTIONS_PER_HOST (1…1000).
    static func transportOptions(_ settings: Settings) throws -> TransportOptions {
        var transport = TransportOptions()
        if let ca = settings["HERALD_CA_FILE"] {
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw ConfigError("HERALD_CA_FILE names \(ca), which cannot be read")
            }
            transport.caFile = ca
        }
        if let perHost = try settings.int("HERALD_CONNECTIONS_PER_HOST", in: 1...1000) {
            transport.maxConnectionsPerHost = perHost
        }
        return transport
    }

    /// What the lock screen shows, the deep links' scheme, the custom sound, and the kinds sent silently.
    static func applyRendering(_ settings: Settings, to options: inout PassOptions) throws {
        options.render.detailedLockScreen = try settings.bool("HERALD_DETAILED_LOCK_SCREEN") ?? false
        if let scheme = settings["HERALD_DEEP_LINK_SCHEME"] { options.render.deepLinkScheme = scheme }
        if let sound = settings["HERALD_CUSTOM_SOUND"] {
            // A file name the app bundles: what APNs and Expo accept as `sound`.
            guard (1...64).contains(sound.utf8.count),
                  sound.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
            else {
                throw ConfigError("HERALD_CUSTOM_SOUND must be a sound file's name (letters, digits, . _ -; at most 64), got '\(sound)'")
            }
            options.render.customSound = sound
        }
        options.render.silentKinds = try silentKinds(settings["HERALD_SILENT_KINDS"])
    }

    /// WEATHER_URL: an http(s) URL, without its trailing slash.
    static func weatherURL(_ text: String) throws -> String {
        guard let u = URL(string: text), u.scheme == "https" || u.scheme == "http", u.host != nil else {
            throw ConfigError("WEATHER_URL must be an http(s) URL, got '\(text)'")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// The minutes HERALD_FORECAST_LEAD_MINUTES may give: up to 12 hours ahead.
    static let forecastLeadRange = 0...720

    /// HERALD_WEATHER_CELL_DEGREES (plain decimal degrees, 0.01 to 1) and HERALD_WEATHER_REUSE_MINUTES
    /// (0, never reused, to a day: the answer reaches eight days ahead, so a day-old one still covers
    /// every forecast it may serve).
    static func applyWeatherCells(_ settings: Settings, to options: inout PassOptions) throws {
        if let text = settings["HERALD_WEATHER_CELL_DEGREES"] {
            guard let size = WeatherCells.size(text) else {
                throw ConfigError("HERALD_WEATHER_CELL_DEGREES must be a number of degrees from 0.01 to 1 written "
                    + "with digits and a point, such as 0.1; got '\(text.prefix(40))'")
            }
            options.weatherCellSize = size
        }
        if let minutes = try settings.int("HERALD_WEATHER_REUSE_MINUTES", in: 0...1440) { options.weatherReuse = Double(minutes) * 60 }
    }

    /// HERALD_ESCALATION (channels separated by commas, or off) and HERALD_ESCALATION_<KIND>.
    static func applyEscalation(_ settings: Settings, to options: inout PassOptions) throws {
        if let text = settings["HERALD_ESCALATION"] {
            guard let chain = EscalationPolicy.parseChain(text) else {
                throw ConfigError("HERALD_ESCALATION must be channels separated by commas (push,sms,email) or off; got '\(text)'")
            }
            options.escalation.chain = chain
        }
        for (key, text) in settings.withPrefix("HERALD_ESCALATION_") {
            let kind = key.dropFirst("HERALD_ESCALATION_".count).lowercased()
            guard Kind(rawValue: kind) != nil else {
                throw ConfigError("\(key) names no kind; kinds: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard let chain = EscalationPolicy.parseChain(text) else {
                throw ConfigError("\(key) must be channels separated by commas or off; got '\(text)'")
            }
            options.escalation.perKind[kind] = chain
        }
    }

    /// HERALD_FOLLOW_LISTEN (auto, on or off), HERALD_FOLLOW_POLL_MS (10 ms to a day) and
    /// HERALD_RECONNECT_SECONDS (0, off, to 600: within the default lease).
    static func applyFollow(_ settings: Settings, to options: inout PassOptions) throws {
        if let text = settings["HERALD_FOLLOW_LISTEN"] {
            guard let listen = FollowListen(rawValue: text.lowercased()) else {
                throw ConfigError("HERALD_FOLLOW_LISTEN must be auto, on or off; got '\(text)'")
            }
            options.followListen = listen
        }
        if let ms = try settings.int("HERALD_FOLLOW_POLL_MS", in: 10...86_400_000) { options.followPoll = Double(ms) / 1000 }
        if let seconds = try settings.int("HERALD_RECONNECT_SECONDS", in: 0...600) { options.reconnectSeconds = Double(seconds) }
    }

    /// The seconds HERALD_LEASE_SECONDS may give: at most a day, so that the rows of a pass that died
    /// come back within a day (and `make_interval` never overflows). How short it may be is
    /// `checkLease`'s to say.
    static let leaseRange = 1...86_400

    /// The lease must be positive and outlast the deadline plus the longest send timeout, or a row
    /// could be taken over while its send is still in flight.
    static func checkLease(_ options: PassOptions, longestSend: Double) throws {
        let needed = options.deadline + longestSend
        guard options.leaseSeconds > 0, Double(options.leaseSeconds) > needed else {
            throw ConfigError("HERALD_LEASE_SECONDS=\(options.leaseSeconds) is too short: a lease must be longer than "
                + "--deadline (\(options.deadline.formatted0) s) plus the longest send timeout (\(longestSend.formatted0) s), "
                + "i.e. more than \(needed.formatted0) s (default 600)")
        }
    }

    /// HERALD_SILENT_KINDS: a comma-separated list of kinds sent as silent data-only pushes
    /// (`prompt`, `reminder`, …); empty or `none` for none. An unknown kind exits 1 naming it.
    static func silentKinds(_ value: String?) throws -> Set<String> {
        guard let value else { return [] }
        var kinds: Set<String> = []
        for part in value.split(separator: ",") {
            let kind = part.trimmingCharacters(in: .whitespaces).lowercased()
            if kind.isEmpty || kind == "none" { continue }
            guard Kind(rawValue: kind) != nil else {
                throw ConfigError("HERALD_SILENT_KINDS names an unknown kind '\(kind)' (known: \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            kinds.insert(kind)
        }
        return kinds
    }
}

extension Double {
    /// Whole seconds for messages, without trapping on any value.
    var formatted0: String { isFinite && abs(self) < 1e15 ? String(Int64(self.rounded())) : String(self) }
}
