/// A provider herald delivers through. The raw value is what the database stores
/// (`notification_deliveries.provider`, `device_tokens.provider`, `push_receipts.provider`,
/// `provider_events.provider`). The case is a provider's registration in the core: its adapter and its
/// `ProviderRegistration` (worker, Config/Providers) complete it.
///
///     Provider(rawValue: "fcm")?.channel  // .push
///     Provider.log.channel                // nil: any channel
public enum Provider: String, CaseIterable, Sendable, Codable, Comparable {
    case apns, fcm, expo
    case twilio, whatsapp
    case sendgrid, smtp
    case webhook
    /// In-app: written to the `inbox` table.
    case inbox
    /// Printed as a JSON line (development, demos): serves any channel.
    case log

    /// The channel the provider serves; nil for `log`, which serves every channel.
    public var channel: Channel? {
        switch self {
        case .apns, .fcm, .expo: .push
        case .twilio: .sms
        case .whatsapp: .whatsapp
        case .sendgrid, .smtp: .email
        case .webhook: .webhook
        case .inbox: .inApp
        case .log: nil
        }
    }

    /// Whether the provider issues device tokens (push): a push destination stays with its token's
    /// provider, never fails over to another.
    public var issuesDeviceTokens: Bool { channel?.reach == .deviceTokens }

    public static func < (a: Provider, b: Provider) -> Bool { a.rawValue < b.rawValue }

    /// The provider of a device token as an app stored it (`device_tokens.provider`): a push provider,
    /// or why the token cannot be used. An unknown or non-push provider is never taken for APNs.
    ///
    ///     Provider.ofDeviceToken("expo")   // .success(.expo)
    ///     Provider.ofDeviceToken("twilio") // .failure(…"not a push provider"…)
    public static func ofDeviceToken(_ raw: String?) -> Result<Provider, UnusableToken> {
        guard let raw else { return .failure(UnusableToken("the device token has no provider")) }
        guard let provider = Provider(rawValue: raw) else {
            return .failure(UnusableToken("the device token's provider '\(Self.clip(raw))' is unknown \(pushList)"))
        }
        guard provider.issuesDeviceTokens else {
            return .failure(UnusableToken("the device token's provider '\(raw)' is not a push provider \(pushList)"))
        }
        return .success(provider)
    }

    private static let pushList =
        "(push providers: \(allCases.filter(\.issuesDeviceTokens).map(\.rawValue).joined(separator: ", ")))"

    private static func clip(_ s: String) -> String {
        let printable = String(s.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }.prefix(40).map(Character.init))
        return s.unicodeScalars.count > 40 ? printable + "…" : printable
    }
}

/// Why a device token cannot be delivered to: its provider is missing, unknown or not a push provider.
public struct UnusableToken: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
