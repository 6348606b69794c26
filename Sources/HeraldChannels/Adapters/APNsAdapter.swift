import Foundation
import HeraldCore
import HeraldHTTP

/// Apple Push Notification service, provider API with token auth (providers.md §1).
///
/// `POST {base}/3/device/{token}` over HTTP/2 (APNs speaks nothing else), `authorization: bearer <ES256
/// JWT>` shared by all requests for 50 minutes, an alert payload of at most 4096 bytes.
///
///     let apns = try APNsAdapter(keyPEM: p8Text, keyId: "ABC123DEFG", teamId: "DEF123GHIJ",
///                                topic: "com.example.app", environment: .production)
///     let outcome = apns.classify(transport.perform(try apns.request(for: envelope)), now: now)
public struct APNsAdapter: SingleMessageAdapter {
    /// A dead token is deactivated.
    public var deadDestination: FollowUp? { .deactivateDestination }
    public enum Environment: String, Sendable, CaseIterable {
        case production
        case sandbox

        /// Apple's hosts (providers.md §1.1). APNSwift uses `api.development.push.apple.com` for the
        /// sandbox; Apple's current page names `api.sandbox.push.apple.com` (the alias's status is
        /// unconfirmed), so the documented name is used.
        public var baseURL: String {
            switch self {
            case .production: "https://api.push.apple.com"
            case .sandbox: "https://api.sandbox.push.apple.com"
            }
        }
    }

    public let provider = Provider.apns
    public let topic: String
    public let environment: Environment
    /// The base URL requests go to: the environment's host, or the APNS_URL override.
    public let baseURL: String
    public var timeout: Double
    /// The shared provider-token cache (a reference: copies of the adapter share it).
    public let tokens: APNsTokenCache

    /// Notifications are stored by APNs and retried until this long after they were scheduled.
    public static let expiration: TimeInterval = 24 * 3600

    /// - Parameters:
    ///   - keyPEM: the `.p8` auth key's text (PEM, PKCS#8 EC P-256).
    ///   - keyId: the key's 10-character Key ID (the JWT's `kid`).
    ///   - teamId: the 10-character Team ID (the JWT's `iss`).
    ///   - topic: the app's bundle ID (`apns-topic`).
    ///   - baseURL: overrides the environment's host (APNS_URL), e.g. a fake on loopback.
    /// - Throws: `AdapterError` saying what is wrong with the key or settings (never the key itself).
    public init(keyPEM: String, keyId: String, teamId: String, topic: String,
                environment: Environment = .production, baseURL: String? = nil, timeout: Double = 15) throws {
        let topic = topic.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !topic.isEmpty else { throw AdapterError("APNS_TOPIC is empty: set it to the app's bundle ID") }
        let base = (baseURL?.isEmpty == false ? baseURL! : environment.baseURL)
        guard let url = URL(string: base), let scheme = url.scheme?.lowercased(),
              scheme == "https" || scheme == "http", url.host != nil else {
            throw AdapterError("APNS_URL must be an http(s) URL, got '\(base)'")
        }
        tokens = try APNsTokenCache(keyPEM: keyPEM, keyId: keyId, teamId: teamId)
        self.topic = topic
        self.environment = environment
        self.baseURL = base.hasSuffix("/") ? String(base.dropLast()) : base
        self.timeout = timeout
    }

    // MARK: Request

    /// `10` (send now) for critical alerts and high-priority rows, else `5` (power-aware delivery).
    public static func priority(for item: QueueItem) -> Int {
        PushUrgency.of(item) == .immediate ? 10 : 5
    }

    /// `apns-push-type` and `apns-priority` for an envelope: a silent row is a background push, which
    /// Apple requires at priority 5 (10 is an error).
    public static func pushType(for envelope: Envelope) -> (type: String, priority: Int) {
        envelope.rendered.silent ? ("background", 5) : ("alert", priority(for: envelope.item))
    }

    /// The JSON payload: `aps` (alert, sound, badge, category, thread-id) and the notification's data
    /// keys at the top level (an `aps` data key is dropped: it would clobber Apple's dictionary).
    ///
    /// A silent row's `aps` is only `content-available: 1` (no alert, sound or badge). An image sets
    /// `mutable-content: 1`, so the app's notification service extension can fetch `image_url` from the
    /// data; action buttons come from the `category` the app registered, their texts in `actions`.
    public static func payload(title: String, body: String, for envelope: Envelope) -> JSONValue {
        let r = envelope.rendered
        if r.silent {
            var top = r.data
            top["aps"] = ["content-available": 1]
            return .object(top)
        }
        var aps: [String: JSONValue] = [
            "alert": ["title": .string(title), "body": .string(body)],
            "badge": .number(Double(r.badge)),
        ]
        if let sound = r.sound { aps["sound"] = .string(sound) }
        if let category = r.category { aps["category"] = .string(category) }
        if r.imageURL != nil { aps["mutable-content"] = 1 }
        // Groups a kind's notifications together in Notification Center.
        aps["thread-id"] = .string(envelope.item.kindRaw)
        // Critical alerts break through Focus as time-sensitive; low priority ones stay passive.
        aps["interruption-level"] = .string(InterruptionLevel.of(severity: envelope.item.severity,
                                                                 priority: envelope.item.priority).rawValue)
        var top = r.data
        top["aps"] = .object(aps)
        return .object(top)
    }

    /// The payload's bytes, the body (then the title) shortened on character boundaries to fit 4096.
    public static func payloadBytes(for envelope: Envelope) throws -> [UInt8] {
        let r = envelope.rendered
        guard let fitted = Truncation.fit(title: r.title, body: r.body, limitBytes: Truncation.pushPayloadBytes,
                                          encode: { t, b in Array(payload(title: t, body: b, for: envelope).jsonText.utf8) })
        else {
            throw AdapterError("APNs payload exceeds 4096 bytes even with an empty title and body: the custom data is too large")
        }
        return fitted.encoded
    }

    /// One provider token per team and key for every pass: Apple refuses updates more often than every
    /// 20 minutes.
    public func shareCredentials(through store: any CredentialStore) { tokens.share(through: store) }

    public func request(for envelope: Envelope) throws -> HTTPRequest {
        let token = envelope.destination.address.trimmingCharacters(in: .whitespacesAndNewlines)
        // Apple says not to assume a length or format for device tokens (simulator tokens are longer);
        // only what could break the path is refused.
        guard !token.isEmpty, token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw AdapterError("APNs device token is empty or not alphanumeric")
        }
        let item = envelope.item
        let push = Self.pushType(for: envelope)
        var headers: [(String, String)] = [
            ("authorization", "bearer " + (try tokens.token(now: envelope.now))),
            ("apns-topic", topic),
            ("apns-push-type", push.type),
            ("apns-priority", String(push.priority)),
            ("apns-expiration", String(Int(item.scheduledAt.addingTimeInterval(Self.expiration).timeIntervalSince1970))),
            ("apns-id", item.id.lowercased),
            ("content-type", "application/json"),
        ]
        headers.append(("apns-collapse-id", CollapseKey.of(item)))
        return HTTPRequest(method: "POST", url: baseURL + "/3/device/" + token, headers: headers,
                           body: try Self.payloadBytes(for: envelope), timeout: timeout, version: .http2)
    }

    // MARK: Classification

    /// What to do about one `reason` (providers.md §1.7).
    enum Action {
        case deactivate
        case retry
        case refreshTokenAndRetry
        case fail
        /// herald's key, team, topic or environment: every push would be refused (`DeliveryOutcome.refused`).
        case config
    }

    /// How long a row waits after APNs answers 500 without a Retry-After.
    public static let internalErrorWait: Double = 15 * 60

    /// Apple's reason table: the action and a sentence for `last_error`.
    static let reasons: [String: (Action, String)] = [
        "BadCollapseId": (.fail, "apns-collapse-id is longer than 64 bytes"),
        "BadDeviceToken": (.deactivate, "the device token is invalid or belongs to the other APNs environment (sandbox vs production)"),
        "BadExpirationDate": (.fail, "apns-expiration is invalid"),
        "BadMessageId": (.fail, "apns-id is not a valid UUID"),
        "BadPriority": (.fail, "apns-priority is invalid"),
        "BadTopic": (.config, "APNS_TOPIC is not valid for this key: set it to the app's bundle ID"),
        "DeviceTokenNotForTopic": (.deactivate, "the device token does not belong to APNS_TOPIC"),
        "DuplicateHeaders": (.fail, "a header was repeated"),
        "IdleTimeout": (.retry, "the connection idled out"),
        "InvalidPushType": (.fail, "apns-push-type is invalid"),
        "MissingDeviceToken": (.fail, "no device token in the path"),
        "MissingTopic": (.config, "apns-topic is required: set APNS_TOPIC"),
        "PayloadEmpty": (.fail, "the payload is empty"),
        "TopicDisallowed": (.config, "pushing to APNS_TOPIC is not allowed for this team: check the bundle ID and its push capability"),
        "BadCertificate": (.config, "the client certificate is bad"),
        "BadCertificateEnvironment": (.config, "the client certificate is for the other environment"),
        "ExpiredProviderToken": (.refreshTokenAndRetry, "the provider token (JWT) is older than an hour; a new one is minted"),
        "Forbidden": (.config, "APNs forbids this action: check the key's scope and the team"),
        "InvalidProviderToken": (.config, "the provider token was rejected: check APNS_KEY_ID, APNS_TEAM_ID and APNS_KEY_FILE belong together and the key is not revoked"),
        "MissingProviderToken": (.config, "no provider token was sent: configure APNS_KEY_FILE, APNS_KEY_ID and APNS_TEAM_ID"),
        "UnrelatedKeyIdInToken": (.retry, "the key id differs from the one first used on this connection"),
        "BadEnvironmentKeyIdInToken": (.config, "the key is not enabled for this APNs environment: check APNS_ENV against the key's environment"),
        "BadEnvironmentKeyInToken": (.config, "the key is not enabled for this APNs environment: check APNS_ENV against the key's environment"),
        "BadPath": (.fail, "the request path is invalid"),
        "MethodNotAllowed": (.fail, "the method must be POST"),
        "ExpiredToken": (.deactivate, "the device token has expired"),
        "Unregistered": (.deactivate, "the device token is no longer active for the topic"),
        "PayloadTooLarge": (.fail, "the payload exceeds 4096 bytes"),
        "TooManyProviderTokenUpdates": (.retry, "the provider token changed too often on this connection"),
        "TooManyRequests": (.retry, "too many notifications to this device token"),
        "InternalServerError": (.retry, "APNs had an internal error"),
        "ServiceUnavailable": (.retry, "APNs is unavailable"),
        "Shutdown": (.retry, "the APNs server is shutting down"),
    ]

    /// 200 delivered (the `apns-id`); otherwise by Apple's `reason` (stored as the code): dead tokens
    /// deactivate, 429/5xx retry (after `Retry-After` when given), configuration errors are permanent
    /// with what to fix, ExpiredProviderToken drops the cached JWT and retries. A body that is not
    /// `{"reason":…}` is classified by status alone.
    public func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse {
        var classified = AdapterSupport.classify(result, provider: .apns, secrets: tokens.recentTokens, now: now,
                                                 outcome: { outcome($0, now: $1) }, throttle: Self.throttle)
        if case .destinationInvalid = classified.outcome, case .success(let response) = result {
            classified.invalidSince = Self.invalidSince(response)
        }
        return classified
    }

    /// A 410's `timestamp`: when APNs last confirmed the token invalid for the topic (milliseconds since
    /// the epoch, providers.md §1.7). A token registered again after it is kept. Only a plausible instant
    /// (1970–9999) is read; any other value is ignored.
    static func invalidSince(_ response: HTTPResponse) -> Date? {
        guard response.status == 410, let parsed = AdapterSupport.json(response),
              let ms = parsed["timestamp"]?.doubleValue, ms.isFinite, (0...253_402_300_799_000).contains(ms) else { return nil }
        return Date(timeIntervalSince1970: ms / 1000)
    }

    /// Whom a "slow down" is about (providers.md §1.7, §1.8). APNs documents 429 as "too many requests
    /// for the same token" and publishes no global rate: `TooManyRequests` (and a 429 without a readable
    /// reason) holds back that token only. `TooManyProviderTokenUpdates` is about the JWT all requests
    /// share, and 503 (ServiceUnavailable, Shutdown) about the server: both provider-wide.
    static func throttle(_ response: HTTPResponse, _ outcome: DeliveryOutcome) -> ThrottleScope? {
        guard case .retry(let after, let code, _) = outcome else { return nil }
        switch (response.status, code) {
        case (429, "TooManyProviderTokenUpdates"): return .provider(wait: after)
        case (429, _): return .destination(wait: after)
        default: return ThrottleScope.providerWide(outcome, httpStatus: response.status)
        }
    }

    /// A wrong APNS_ENV makes every token answer BadDeviceToken (a token belongs to one environment,
    /// providers.md §1.5), a wrong APNS_TOPIC DeviceTokenNotForTopic. `Unregistered` and `ExpiredToken`
    /// (410) are APNs saying it knows the token is dead: always acted on.
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check APNS_ENV (sandbox/production) and APNS_TOPIC",
                           codes: ["BadDeviceToken", "DeviceTokenNotForTopic"])
    }

    func outcome(_ response: HTTPResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        if status == 200 {
            return .delivered(messageId: response.header("apns-id"))
        }
        // Apple: a 500 may be retried after 15 minutes (providers.md §1); Retry-After, when sent, wins.
        let after = AdapterSupport.retryAfter(response, now: now) ?? (status == 500 ? Self.internalErrorWait : nil)
        let transient = status == 429 || status >= 500

        guard let parsed = AdapterSupport.json(response), let reason = parsed["reason"]?.stringValue,
              !reason.isEmpty else {
            let text = AdapterSupport.snippet(response)
            let message = "APNs answered \(status) without a JSON reason" + (text.isEmpty ? "" : ": " + text)
            return transient ? .retry(after: after, code: "http_\(status)", message: message)
                             : .permanent(code: "http_\(status)", message: message)
        }

        guard let entry = Self.reasons[reason] else {
            let message = "APNs answered \(status) \(reason)"
            return transient ? .retry(after: after, code: reason, message: message)
                             : .permanent(code: reason, message: message)
        }
        let (action, sentence) = entry
        var message = "APNs \(status) \(reason): \(sentence)"
        switch action {
        case .deactivate:
            // Apple documents milliseconds since the epoch (apns2 reads seconds; Apple's text wins). Only a
            // plausible instant (1970–9999) is quoted; any other number is ignored.
            if let ms = parsed["timestamp"]?.doubleValue, ms.isFinite, (0...253_402_300_799_000).contains(ms) {
                message += " (since \(ISO8601.string(Date(timeIntervalSince1970: ms / 1000))))"
            }
            return .destinationInvalid(code: reason, message: message)
        case .retry:
            return .retry(after: after, code: reason, message: message)
        case .refreshTokenAndRetry:
            tokens.invalidate(ifOlderThan: 20 * 60, now: now)
            return .retry(after: after, code: reason, message: message)
        case .fail:
            return .permanent(code: reason, message: message)
        case .config:
            return .refused(code: reason, message: message)
        }
    }
}
