import Foundation
import HeraldCore
import HeraldHTTP

/// Firebase Cloud Messaging, HTTP v1 API (providers.md §2).
///
/// `prepare` exchanges a service-account JWT for an OAuth access token (cached until five minutes before
/// it expires); each notification is one `POST {base}/v1/projects/{project_id}/messages:send`.
///
///     let fcm = try FCMAdapter(serviceAccountJSON: fileText)
///     try fcm.prepare(now: now, transport: transport)
///     let outcome = fcm.classify(transport.perform(try fcm.request(for: envelope)), now: now)
public struct FCMAdapter: SingleMessageAdapter {
    /// A dead token is deactivated.
    public var deadDestination: FollowUp? { .deactivateDestination }
    public let provider = Provider.fcm
    public let account: GoogleServiceAccount
    /// "https://fcm.googleapis.com", or the FCM_URL override.
    public let baseURL: String
    public var timeout: Double

    /// The smallest delay after QUOTA_EXCEEDED: Google asks for at least a minute.
    public static let quotaRetryAfter: Double = 60

    /// - Parameters:
    ///   - serviceAccountJSON: the service-account key file's text (project_id, client_email,
    ///     private_key, token_uri).
    ///   - baseURL: overrides https://fcm.googleapis.com (FCM_URL).
    /// - Throws: `AdapterError` naming the missing or malformed field.
    public init(serviceAccountJSON: String, baseURL: String? = nil, timeout: Double = 15) throws {
        account = try GoogleServiceAccount(json: serviceAccountJSON)
        let base = baseURL?.isEmpty == false ? baseURL! : "https://fcm.googleapis.com"
        guard let url = URL(string: base), let scheme = url.scheme?.lowercased(),
              scheme == "https" || scheme == "http", url.host != nil else {
            throw AdapterError("FCM_URL must be an http(s) URL, got '\(base)'")
        }
        self.baseURL = base.hasSuffix("/") ? String(base.dropLast()) : base
        self.timeout = timeout
    }

    /// Fetches an access token when there is none or it expires within five minutes.
    public func prepare(now: Date, transport: HTTPTransport) throws {
        try account.refreshIfNeeded(now: now, transport: transport, timeout: timeout)
    }

    // MARK: Request

    public var sendURL: String { baseURL + "/v1/projects/" + account.projectId + "/messages:send" }

    /// FCM's `data` is map<string,string>: numbers and booleans become their text, arrays and objects
    /// their JSON, nulls are left out. Reserved keys (`from`, `message_type`, `google.*`,
    /// `gcm.notification.*`) would be rejected with INVALID_ARGUMENT, so they are dropped.
    public static func stringData(_ data: [String: JSONValue]) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for (key, value) in data {
            if key == "from" || key == "message_type" || key.hasPrefix("google.") || key.hasPrefix("gcm.notification.") {
                continue
            }
            switch value {
            case .null: continue
            case .string, .number, .bool: out[key] = .string(value.stringValue ?? "")
            case .array, .object: out[key] = .string(value.jsonText)
            }
        }
        return out
    }

    /// The request body `{"message":{…}}` for one title and body.
    ///
    /// A silent row is a data-only message: no `notification` block, and for iOS a background push
    /// (`apns-push-type: background`, `apns-priority: 5`, `content-available: 1`). An image goes to
    /// `notification.image` and, for iOS, `apns.fcm_options.image` with `mutable-content: 1`; it stays in
    /// `data.image_url`, and action buttons travel in `data.actions` (a JSON string) with the iOS category.
    public static func body(title: String, body: String, for envelope: Envelope) -> JSONValue {
        let item = envelope.item
        let r = envelope.rendered
        let high = PushUrgency.of(item) == .immediate
        // A copy sent again replaces the first on the device, Android and iOS alike.
        let collapse = JSONValue.string(CollapseKey.of(item))
        let android: [String: JSONValue] = ["priority": high ? "HIGH" : "NORMAL", "collapse_key": collapse]
        var message: [String: JSONValue] = [
            "token": .string(envelope.destination.address),
            "data": .object(stringData(r.data)),
            "android": .object(android),
        ]
        if r.silent {
            message["apns"] = [
                "headers": ["apns-priority": "5", "apns-push-type": "background", "apns-collapse-id": collapse],
                "payload": ["aps": ["content-available": 1]],
            ]
            return ["message": .object(message)]
        }
        var notification: [String: JSONValue] = ["title": .string(title), "body": .string(body)]
        var aps: [String: JSONValue] = ["badge": .number(Double(r.badge))]
        if let sound = r.sound { aps["sound"] = .string(sound) }
        if let category = r.category { aps["category"] = .string(category) }
        var apns: [String: JSONValue] = ["headers": ["apns-priority": high ? "10" : "5", "apns-collapse-id": collapse]]
        if let image = r.imageURL {
            notification["image"] = .string(image)
            aps["mutable-content"] = 1
            apns["fcm_options"] = ["image": .string(image)]
        }
        apns["payload"] = ["aps": .object(aps)]
        message["notification"] = .object(notification)
        message["apns"] = .object(apns)
        return ["message": .object(message)]
    }

    /// One access token per service account for every pass, until shortly before it expires.
    public func shareCredentials(through store: any CredentialStore) { account.share(through: store) }

    public func request(for envelope: Envelope) throws -> HTTPRequest {
        guard let accessToken = account.accessToken else {
            throw AdapterError("FCM has no access token: prepare(now:transport:) has not succeeded")
        }
        let token = envelope.destination.address.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw AdapterError("FCM registration token is empty") }
        var e = envelope
        e.destination.address = token
        let r = envelope.rendered
        // The whole request body within 4096 bytes: stricter than FCM's limit on the payload (keys and
        // values), so whatever fits here fits there.
        guard let fitted = Truncation.fit(title: r.title, body: r.body, limitBytes: Truncation.pushPayloadBytes,
                                          encode: { t, b in Array(Self.body(title: t, body: b, for: e).jsonText.utf8) })
        else {
            throw AdapterError("FCM message exceeds 4096 bytes even with an empty title and body: the data is too large")
        }
        return HTTPRequest(method: "POST", url: sendURL,
                           headers: [("authorization", "Bearer " + accessToken),
                                     ("content-type", "application/json")],
                           body: fitted.encoded, timeout: timeout, version: .http2)
    }

    // MARK: Classification

    /// 200 delivered (the message `name`); errors by the FcmError `errorCode` in `details` (stored as the
    /// code), else by the google.rpc `status` and the HTTP status (providers.md §2.5).
    public func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse {
        // The tokens are read before the answer is classified: a 401 drops the current one.
        AdapterSupport.classify(result, provider: .fcm, secrets: account.recentTokens, now: now,
                                outcome: { outcome($0, now: $1) }, throttle: Self.throttle)
    }

    /// Whom a "slow down" is about (providers.md §2.5, §2.6). FCM answers 429 QUOTA_EXCEEDED for the
    /// project's quota (600,000/min), for one device (240/min, 5,000/h on Android) or for a topic, and
    /// says which in a `google.rpc.QuotaFailure` detail (`violations[]` with `subject`, `description`
    /// and, on newer Google APIs, `quotaId` / `quotaMetric`). The exact wording FCM puts there is
    /// unconfirmed, so: a violation that names a device (and not the project) holds back that token only;
    /// anything else — the project, a topic, no QuotaFailure, an overload 429 — is provider-wide.
    /// 503 UNAVAILABLE with a Retry-After is provider-wide too.
    static func throttle(_ response: HTTPResponse, _ outcome: DeliveryOutcome) -> ThrottleScope? {
        guard case .retry(let after, let code, _) = outcome else { return nil }
        let error = AdapterSupport.json(response)?["error"]
        if response.status == 429 || code == "QUOTA_EXCEEDED" || error?["status"]?.stringValue == "RESOURCE_EXHAUSTED" {
            return quotaIsPerDevice(error) ? .destination(wait: after) : .provider(wait: after)
        }
        return ThrottleScope.providerWide(outcome, httpStatus: response.status)
    }

    /// True when the error's QuotaFailure names a device quota and not the project's.
    static func quotaIsPerDevice(_ error: JSONValue?) -> Bool {
        guard case .array(let details)? = error?["details"] else { return false }
        var text = ""
        for detail in details where detail["@type"]?.stringValue?.hasSuffix("google.rpc.QuotaFailure") == true {
            guard case .array(let violations)? = detail["violations"] else { continue }
            for v in violations {
                for key in ["subject", "description", "quotaId", "quotaMetric"] {
                    text += " " + (v[key]?.stringValue ?? "")
                }
            }
        }
        text = text.lowercased()
        return text.contains("device") && !text.contains("project")
    }

    /// Tokens registered with another Firebase project answer SENDER_ID_MISMATCH: a service account of
    /// the wrong project makes every token do so. UNREGISTERED is FCM knowing the token is dead.
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check FCM_SERVICE_ACCOUNT_FILE: its project_id must be the Firebase project the apps register with",
                           codes: ["SENDER_ID_MISMATCH"])
    }

    func outcome(_ response: HTTPResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        let parsed = AdapterSupport.json(response)
        if (200..<300).contains(status) {
            return .delivered(messageId: parsed?["name"]?.stringValue)
        }
        let after = AdapterSupport.retryAfter(response, now: now)

        guard let error = parsed?["error"], case .object = error else {
            let text = AdapterSupport.snippet(response)
            let message = "FCM answered \(status) without a google.rpc error" + (text.isEmpty ? "" : ": " + text)
            if status == 401 {
                account.invalidate()
                return .retry(after: after, code: "http_401", message: message + "; the access token is dropped")
            }
            if status == 429 { return .retry(after: max(after ?? 0, Self.quotaRetryAfter), code: "http_429", message: message) }
            return status >= 500 ? .retry(after: after, code: "http_\(status)", message: message)
                                 : .permanent(code: "http_\(status)", message: message)
        }
        let rpcStatus = error["status"]?.stringValue
        let text = error["message"]?.stringValue.map { Truncation.prefix($0, maxUTF8Bytes: 300) } ?? ""
        var fcmCode: String?
        if case .array(let details)? = error["details"] {
            for detail in details where detail["@type"]?.stringValue?.hasSuffix("google.firebase.fcm.v1.FcmError") == true {
                fcmCode = detail["errorCode"]?.stringValue
                break
            }
        }
        let code = fcmCode ?? rpcStatus ?? "http_\(status)"
        func message(_ advice: String) -> String {
            "FCM \(status) \(code)" + (text.isEmpty ? "" : ": \(text)") + (advice.isEmpty ? "" : " — \(advice)")
        }

        switch fcmCode {
        case "UNREGISTERED":
            return .destinationInvalid(code: code, message: message("the app instance is unregistered"))
        case "SENDER_ID_MISMATCH":
            return .destinationInvalid(code: code, message: message("the token belongs to another Firebase project"))
        case "INVALID_ARGUMENT":
            return .permanent(code: code, message: message(""))
        case "QUOTA_EXCEEDED":
            return .retry(after: max(after ?? 0, Self.quotaRetryAfter), code: code, message: message("over quota"))
        case "UNAVAILABLE", "INTERNAL":
            return .retry(after: after, code: code, message: message(""))
        case "THIRD_PARTY_AUTH_ERROR":
            return .permanent(code: code, message: message(
                "the APNs auth key or web-push credentials in the Firebase project are invalid or missing: fix them in the Firebase console"))
        case "UNSPECIFIED_ERROR":
            return .permanent(code: code, message: message(""))
        case .some:
            return status == 429 || status >= 500 ? .retry(after: after, code: code, message: message(""))
                                                  : .permanent(code: code, message: message(""))
        case nil:
            break
        }

        // No FCM code: a Google API error. 401 means the OAuth token is missing or expired (the exact
        // body for this case is unconfirmed; see providers.md §2.5): drop it so prepare fetches another.
        if status == 401 || rpcStatus == "UNAUTHENTICATED" {
            account.invalidate()
            return .retry(after: after, code: code, message: message("the access token was refused; a new one is fetched"))
        }
        if status == 403 || rpcStatus == "PERMISSION_DENIED" {
            return .refused(code: code, message: message(
                "the service account lacks cloudmessaging.messages.create on the project (wording unconfirmed)"))
        }
        if status == 429 || rpcStatus == "RESOURCE_EXHAUSTED" {
            return .retry(after: max(after ?? 0, Self.quotaRetryAfter), code: code, message: message(""))
        }
        if status >= 500 {
            return .retry(after: after, code: code, message: message(""))
        }
        return .permanent(code: code, message: message(""))
    }
}
