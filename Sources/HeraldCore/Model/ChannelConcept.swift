/// A channel as one concept: its preference toggle, where it reaches a recipient, and the profile switch
/// a provider's "this address refuses the channel" turns off. Its providers are registered in the
/// worker's `ProviderCatalog`; the SQL that applies an opt-out is `herald_switch_off_channels`.
extension Channel {
    /// How a channel finds a recipient's destinations.
    public enum Reach: Sendable, Equatable {
        /// The recipient's active device tokens, each served by the provider that issued it (push).
        case deviceTokens
        /// An address in the recipient's profile (`Channel.address(in:)`), served by the channel's providers.
        case profileAddress
        /// The provider's own address (the operator's webhook URL).
        case providerAddress
        /// The recipient's inbox (in_app).
        case inbox
    }

    public var reach: Reach {
        switch self {
        case .push: .deviceTokens
        case .sms, .whatsapp, .email: .profileAddress
        case .webhook: .providerAddress
        case .inApp: .inbox
        }
    }

    /// The recipient's toggle for the channel; about another member (a champion's alert), the champion
    /// toggles. Webhook is the operator's channel: always on.
    public func isEnabled(_ p: Preferences, aboutAnotherMember: Bool) -> Bool {
        switch self {
        case .push: p.notifyPush
        case .email: aboutAnotherMember ? p.championNotifyEmail : p.notifyEmail
        case .sms: aboutAnotherMember ? p.championNotifySMS : p.notifySMS
        case .whatsapp: p.notifyWhatsApp
        case .inApp: p.notifyInApp
        case .webhook: true
        }
    }

    /// The recipient's address on a `.profileAddress` channel; nil otherwise or when the profile has none.
    public func address(in p: Preferences) -> String? {
        switch self {
        case .sms, .whatsapp: p.phoneE164
        case .email: p.email
        case .push, .webhook, .inApp: nil
        }
    }

    /// The recipient's own toggle for the channel in `user_profiles` (the app's users may change it);
    /// nil for the operator's webhook, always on.
    public var toggleColumn: String? {
        switch self {
        case .push: "notify_push"
        case .sms: "notify_sms"
        case .whatsapp: "notify_whatsapp"
        case .email: "notify_email"
        case .inApp: "notify_in_app"
        case .webhook: nil
        }
    }

    /// The `user_profiles` column that decides whether the channel reaches a recipient: the toggle, or
    /// about another member (a champion's alert) the champion toggle where the channel has one.
    public func decidingColumn(aboutAnotherMember: Bool) -> String? {
        switch self {
        case .email where aboutAnotherMember: "champion_notify_email"
        case .sms where aboutAnotherMember: "champion_notify_sms"
        default: toggleColumn
        }
    }

    /// The `user_profiles` toggle an opt-out turns off (Twilio 21610 STOP, an email that bounces for
    /// good); nil: the channel has none, and a dead destination there is only recorded.
    public var optOutSwitch: String? {
        switch self {
        case .sms: "notify_sms"
        case .whatsapp: "notify_whatsapp"
        case .email: "notify_email"
        case .push, .webhook, .inApp: nil
        }
    }
}
