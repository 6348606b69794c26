import Foundation

/// What became of one send to one destination. Adapters classify provider answers into these four.
public enum DeliveryOutcome: Sendable, Equatable {
    /// Accepted by the provider; its message id when it gives one.
    case delivered(messageId: String?)
    /// Transient: try again later — after `after` seconds when the provider said so (`Retry-After`).
    case retry(after: Double?, code: String?, message: String)
    /// Permanent for this message: retrying unchanged will not help.
    case permanent(code: String?, message: String)
    /// The destination is dead (unregistered token, unsubscribed phone): deactivate it, never retry.
    case destinationInvalid(code: String?, message: String)
    /// The provider refused herald itself — its credentials or its configuration (a revoked APNs key, a
    /// rotated Twilio token, an expired WhatsApp token, a topic the key may not push to) — so it would
    /// refuse every message until an operator fixes the setting `message` names. Not the message's
    /// fault: the pass stops calling that provider, the row goes to the channel's next provider or back
    /// to the queue with no attempt charged, and the pass ends degraded.
    case refused(code: String?, message: String)

    public var label: String {
        switch self {
        case .delivered: "delivered"
        case .retry: "retry"
        case .permanent: "permanent"
        case .destinationInvalid: "destination_invalid"
        // Stored as a retry in notification_deliveries (its outcomes are these four): the destination
        // is tried again; the provider's code says why.
        case .refused: "retry"
        }
    }

    /// The provider refused herald's own credentials or configuration.
    public var isRefused: Bool {
        if case .refused = self { true } else { false }
    }

    public var code: String? {
        switch self {
        case .delivered: nil
        case .retry(_, let c, _), .permanent(let c, _), .destinationInvalid(let c, _), .refused(let c, _): c
        }
    }

    public var message: String? {
        switch self {
        case .delivered: nil
        case .retry(_, _, let m), .permanent(_, let m), .destinationInvalid(_, let m), .refused(_, let m): m
        }
    }
}

/// Who a provider's "slow down" is about. Each adapter decides from its provider's documentation
/// (providers.md); the pass throttles the whole provider only for `.provider`.
public enum ThrottleScope: Sendable, Equatable {
    /// One destination only (APNs `TooManyRequests` for one device token, WhatsApp 131056 for one
    /// recipient): that row retries after `wait` (or its backoff) while the provider keeps taking the others.
    case destination(wait: Double?)
    /// The whole provider (account, project, sender number, receiver): no more requests to it in this pass
    /// before `wait` seconds. Without a wait the row retries with its backoff and the pass goes on calling
    /// the provider.
    case provider(wait: Double?)

    public var wait: Double? {
        switch self {
        case .destination(let w), .provider(let w): w
        }
    }

    /// About one destination only: says nothing of the provider's health (its circuit breaker).
    public var isAboutOneDestination: Bool {
        if case .destination = self { true } else { false }
    }

    /// The rule every adapter used before scopes were its own: a retry with a wait on HTTP 429 or 503 is
    /// provider-wide. Adapters whose provider documents a narrower scope override it.
    public static func providerWide(_ outcome: DeliveryOutcome, httpStatus: Int?) -> ThrottleScope? {
        guard case .retry(let after?, _, _) = outcome, httpStatus == 429 || httpStatus == 503 else { return nil }
        return .provider(wait: after)
    }
}

/// An outcome with the facts of the exchange that produced it, for `notification_deliveries`.
public struct ClassifiedResponse: Sendable, Equatable {
    public var outcome: DeliveryOutcome
    public var httpStatus: Int?
    public var latencyMs: Int?
    /// Set when the provider asked us to slow down, with whom that is about; nil otherwise.
    public var throttle: ThrottleScope?
    /// What the answer asks for besides being recorded (a receipt to check, a dead destination): the
    /// adapter declares it, the fold acts on it. The pass never tells providers apart by name.
    public var followUps: [FollowUp]
    /// When the provider found the destination invalid, if it says (APNs 410's `timestamp`): a token
    /// registered again after it is not deactivated.
    public var invalidSince: Date?
    /// The connection ended before the answer arrived: no answer of the provider's, so it counts toward
    /// neither its circuit breaker nor a throttle, and the destination stays with its provider.
    public var connectionEnded = false

    public init(_ outcome: DeliveryOutcome, httpStatus: Int? = nil, latencyMs: Int? = nil,
                throttle: ThrottleScope? = nil, followUps: [FollowUp] = []) {
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.latencyMs = latencyMs
        self.throttle = throttle
        self.followUps = followUps
    }
}

/// What to check when most of a provider's destinations are refused at once in a pass: a configuration
/// slip (the wrong APNs environment, another Firebase project, an SMTP server that does not relay) makes
/// every destination look dead. See `ProviderHealth`.
public struct ConfigurationCheck: Sendable, Equatable {
    /// The configuration to name, e.g. "check APNS_ENV (sandbox/production) and APNS_TOPIC".
    public var hint: String
    /// The destination-invalid codes such a slip produces; nil: every destination-invalid answer.
    /// Codes the provider gives only for a destination it knows is dead (APNs `Unregistered` with its
    /// timestamp, FCM `UNREGISTERED`, Twilio 21610) are left out, so they are always acted on.
    public var codes: Set<String>?

    public init(hint: String, codes: Set<String>?) {
        self.hint = hint
        self.codes = codes
    }

    /// True when `outcome` is a destination-invalid answer that a configuration slip could explain.
    public func mayBeConfiguration(_ outcome: DeliveryOutcome) -> Bool {
        guard case .destinationInvalid(let code, _) = outcome else { return false }
        guard let codes else { return true }
        return code.map { codes.contains($0) } ?? false
    }
}

/// What a provider's answer asks the pass to do besides recording it. Adapters declare these on the
/// `ClassifiedResponse`; `DeliveryFold` turns them into records.
public enum FollowUp: Sendable, Equatable {
    /// The provider only accepted the message: check its receipt (ticket) in a later pass (Expo).
    case checkReceipt(ticketId: String)
    /// The destination is dead: deactivate its device token.
    case deactivateDestination
    /// The recipient's address refuses the channel (STOP, unsubscribed): turn the channel off for them.
    case optOut
}
