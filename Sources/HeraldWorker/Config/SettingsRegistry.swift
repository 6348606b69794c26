/// One environment key herald reads: its name (`<CHANNEL>`, `<KIND>` stand for a family of keys), its
/// default, and what it does. Every key the sources read is declared once in `Settings.registry`, and
/// docs/configuration.md lists each (SettingsRegistryTests compares all three).
public struct SettingSpec: Sendable, Equatable {
    public var name: String
    /// The default, as docs/configuration.md gives it; nil when unset means "off" or "not configured".
    public var defaultValue: String?
    public var doc: String
    /// A credential, or a value that may carry one (a URL with a password or a token in it): its value
    /// is never printed (`herald doctor` says only where it came from).
    public var secret: Bool

    public init(_ name: String, default defaultValue: String? = nil, secret: Bool = false, _ doc: String) {
        self.name = name
        self.defaultValue = defaultValue
        self.secret = secret
        self.doc = doc
    }

    /// Whether `key` is this setting (a family matches every key it stands for; a secret's `_FILE`
    /// variant matches its secret).
    public func matches(_ key: String) -> Bool {
        var key = key
        if key.hasSuffix("_FILE"), !name.hasSuffix("_FILE") { key = String(key.dropLast(5)) }
        guard let open = name.firstIndex(of: "<"), let close = name.firstIndex(of: ">") else { return key == name }
        let prefix = name[..<open], suffix = name[name.index(after: close)...]
        return key.count > prefix.count + suffix.count && key.hasPrefix(prefix) && key.hasSuffix(suffix)
    }
}

extension Settings {
    /// Every key herald reads, in docs/configuration.md's order.
    public static let registry: [SettingSpec] = [
        SettingSpec("HERALD_CONFIG", "a file of KEY=VALUE lines read under the environment"),
        SettingSpec("DATABASE_URL", secret: true, "the database: a postgresql:// URI or libpq conninfo; unset: libpq's PG* variables"),
        SettingSpec("HERALD_<CHANNEL>_PROVIDERS", "a channel's providers, in failover order"),
        SettingSpec("HERALD_ESCALATION", default: "push,sms,email", "the channels a critical notification escalates through"),
        SettingSpec("HERALD_ESCALATION_<KIND>", "the escalation chain of one kind"),
        SettingSpec("HERALD_AUDIT_RETENTION_DAYS", default: "400", "how long the trail and deliveries are kept"),
        SettingSpec("HERALD_HEARTBEAT_URL", secret: true, "a dead man's switch called around each pass"),
        SettingSpec("HERALD_PUSHGATEWAY_URL", secret: true, "a Prometheus Pushgateway for each pass's metrics"),
        SettingSpec("HERALD_PUSHGATEWAY_INSTANCE", "the Pushgateway group's instance label (default: the host name)"),
        SettingSpec("HERALD_CHANNEL_<CHANNEL>", "log: print the channel's notifications; off: disable it"),
        SettingSpec("HERALD_LOG_ADAPTER_FILE", "where the log adapter appends each notification"),
        SettingSpec("APNS_KEY_FILE", "APNs: the .p8 key"),
        SettingSpec("APNS_KEY_ID", "APNs: the key's id"),
        SettingSpec("APNS_TEAM_ID", "APNs: the team id"),
        SettingSpec("APNS_TOPIC", "APNs: the app's bundle id"),
        SettingSpec("APNS_ENV", default: "production", "APNs: production or sandbox"),
        SettingSpec("FCM_SERVICE_ACCOUNT_FILE", "FCM: the service account JSON"),
        SettingSpec("EXPO_ACCESS_TOKEN", secret: true, "Expo: the access token"),
        SettingSpec("HERALD_EXPO", "on: Expo without an access token"),
        SettingSpec("HERALD_ANDROID_CHANNEL_<KIND>", "Expo channelId of one kind"),
        SettingSpec("HERALD_ANDROID_CHANNEL", "Expo channelId of every kind without its own"),
        SettingSpec("HERALD_SILENT_KINDS", "kinds sent as silent data-only pushes"),
        SettingSpec("TWILIO_ACCOUNT_SID", "Twilio: the account"),
        SettingSpec("TWILIO_AUTH_TOKEN", secret: true, "Twilio: the auth token (also verifies its callbacks)"),
        SettingSpec("TWILIO_FROM", "Twilio: the sender number"),
        SettingSpec("TWILIO_MESSAGING_SERVICE_SID", "Twilio: the messaging service, instead of a sender"),
        SettingSpec("WHATSAPP_TOKEN", secret: true, "WhatsApp Cloud API: the token"),
        SettingSpec("WHATSAPP_PHONE_NUMBER_ID", "WhatsApp Cloud API: the sender"),
        SettingSpec("WHATSAPP_TEMPLATE_<KIND>", "WhatsApp: a kind's template, name:lang"),
        SettingSpec("TWILIO_STATUS_CALLBACK_URL", secret: true, "sent as StatusCallback with each SMS"),
        SettingSpec("SENDGRID_WEBHOOK_PUBLIC_KEY", "verifies SendGrid's signed event webhook"),
        SettingSpec("WHATSAPP_APP_SECRET", secret: true, "verifies WhatsApp's webhooks"),
        SettingSpec("SENDGRID_API_KEY", secret: true, "email through SendGrid"),
        SettingSpec("SMTP_URL", secret: true, "email through SMTP"),
        SettingSpec("SMTP_REQUIRE_TLS", default: "true", "false: SMTP without STARTTLS"),
        SettingSpec("EMAIL_FROM", "the email sender"),
        SettingSpec("APNS_URL", "overrides APNs' base URL"),
        SettingSpec("FCM_URL", "overrides FCM's base URL"),
        SettingSpec("EXPO_URL", "overrides Expo's base URL"),
        SettingSpec("TWILIO_URL", "overrides Twilio's base URL"),
        SettingSpec("WHATSAPP_URL", "overrides WhatsApp's base URL"),
        SettingSpec("SENDGRID_URL", "overrides SendGrid's base URL"),
        SettingSpec("WEBHOOK_URL", secret: true, "the webhook channel's receiver"),
        SettingSpec("WEBHOOK_SECRET", secret: true, "the webhook channel's whsec_ signing secret"),
        SettingSpec("WEBHOOK_TIMEOUT_SECONDS", default: "15", "how long one webhook request may take"),
        SettingSpec("HERALD_SHADOW_MODE", default: "false", "true: evaluate patterns, enqueue nothing"),
        SettingSpec("HERALD_THRESHOLDS_VERSION", default: "v1", "the pattern_thresholds version"),
        SettingSpec("WEATHER_URL", default: "https://api.open-meteo.com", "the forecast API"),
        SettingSpec("HERALD_FORECAST_LEAD_MINUTES", default: "60", "how long before the notification time a forecast is made"),
        SettingSpec("HERALD_WEATHER_CELL_DEGREES", default: "0.1", "the side of the place cells that share one weather request"),
        SettingSpec("HERALD_WEATHER_REUSE_MINUTES", default: "60", "how long a place's weather serves later passes"),
        SettingSpec("HERALD_FORECAST_INSIGHT_URL", secret: true, "the team's forecast insight service"),
        SettingSpec("HERALD_FORECAST_INSIGHT_SECRET", secret: true, "the whsec_ secret that signs the insight requests"),
        SettingSpec("HERALD_FORECAST_INSIGHT_TIMEOUT_SECONDS", default: "10", "how long one insight request may take"),
        SettingSpec("HERALD_CA_FILE", "an extra trusted CA for the providers"),
        SettingSpec("HERALD_CONNECTIONS_PER_HOST", default: "64", "connections open at once to one host"),
        SettingSpec("HERALD_APNS_QUOTA", default: "off", "APNs messages a second or minute (no published rate)"),
        SettingSpec("HERALD_APNS_CONCURRENCY", default: "500", "APNs requests in flight at once"),
        SettingSpec("HERALD_FCM_QUOTA", default: "600000/min", "FCM messages a second or minute, per project"),
        SettingSpec("HERALD_EXPO_QUOTA", default: "600/s", "Expo notifications a second or minute, per project"),
        SettingSpec("HERALD_TWILIO_QUOTA", default: "off", "Twilio messages a second or minute"),
        SettingSpec("HERALD_WHATSAPP_QUOTA", default: "80/s", "WhatsApp messages a second or minute, per number"),
        SettingSpec("HERALD_SENDGRID_QUOTA", default: "off", "SendGrid messages a second or minute"),
        SettingSpec("HERALD_SMTP_QUOTA", default: "off", "SMTP messages a second or minute"),
        SettingSpec("HERALD_WEBHOOK_QUOTA", default: "off", "webhook requests a second or minute"),
        SettingSpec("HERALD_QUOTA_SHARES", default: "1", "passes and followers sending at once; each paces to its share of every quota"),
        SettingSpec("HERALD_DETAILED_LOCK_SCREEN", default: "false", "true: health details in push text"),
        SettingSpec("HERALD_DEEP_LINK_SCHEME", default: "herald", "the URL scheme of the app's deep links"),
        SettingSpec("HERALD_CUSTOM_SOUND", default: "custom.wav", "the sound file a payload's \"sound\": \"custom\" plays"),
        SettingSpec("HERALD_LEASE_SECONDS", default: "600", "a claimed row's lease"),
        SettingSpec("HERALD_RETENTION_DAYS", default: "30", "terminal rows older than this are pruned"),
        SettingSpec("HERALD_FOLLOW_LISTEN", default: "auto", "how a follower learns of due rows and apps' changes: auto, on (LISTEN) or off (poll)"),
        SettingSpec("HERALD_FOLLOW_POLL_MS", default: "500", "a polling follower's interval"),
        SettingSpec("HERALD_RECONNECT_SECONDS", default: "30", "how long a pass whose database connection ended tries to connect again"),
        SettingSpec("HERALD_LOG_LEVEL", default: "info", "the log level"),
        SettingSpec("HERALD_CURL_VERBOSE", "1: libcurl describes every exchange on stderr"),
        SettingSpec("HERALD_SQL_DIR", "the folder herald migrate reads herald's migrations from (default: share/herald/sql beside the binary)"),
    ]

    /// The registry's entry for `key`, if it declares one.
    public static func spec(_ key: String) -> SettingSpec? { registry.first { $0.matches(key) } }

    /// The variables set that herald does not read, a typo most often: every `HERALD_*` one, and any of
    /// the config file, that the registry does not declare. `herald doctor` and `herald run` warn of each.
    public var unknown: [String] {
        keys.filter { Settings.spec($0) == nil && ($0.hasPrefix("HERALD_") || source(of: $0) == .configFile) }
    }
}
