import Foundation
import HeraldCore
import HeraldHTTP

/// Twilio Programmable Messaging (providers.md §4): one form-encoded
/// `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` per SMS, HTTP basic auth (sid:token).
///
///     let sms = try TwilioAdapter(accountSid: env["TWILIO_ACCOUNT_SID"]!, authToken: env["TWILIO_AUTH_TOKEN"]!,
///                                 from: env["TWILIO_FROM"], messagingServiceSid: env["TWILIO_MESSAGING_SERVICE_SID"],
///                                 baseURL: env["TWILIO_URL"])
///
/// A 201 means Twilio queued the message; delivery (and async errors such as 30007) is learned later:
/// the `statuses` phase polls the Message resource and the `events` phase applies status callbacks.
public struct TwilioAdapter: SingleMessageAdapter {
    /// An address that refuses the channel turns it off for the recipient.
    public var deadDestination: FollowUp? { .optOut }
    public let provider = Provider.twilio
    public let accountSid: String
    /// Internal, not private: the credential probe (CredentialProbes.swift) authenticates with it.
    let authToken: String
    /// The sender (E.164 number, short code or alphanumeric id), or nil when a Messaging Service sends.
    public let from: String?
    public let messagingServiceSid: String?
    /// e.g. "https://api.twilio.com" (no trailing slash).
    public let baseURL: String
    public var timeout: Double
    /// TWILIO_STATUS_CALLBACK_URL: sent as `StatusCallback` with each message, so Twilio posts its status
    /// changes to the app's provider-events endpoint (the `events` phase applies them). Without it,
    /// only a Messaging Service's own callback URL (set in the Console) posts them; the `statuses`
    /// phase polls either way.
    public var statusCallback: String?

    /// Exactly one of `from` and `messagingServiceSid` (empty strings count as absent).
    public init(accountSid: String, authToken: String, from: String?, messagingServiceSid: String?,
                baseURL: String? = nil, timeout: Double = 15) throws {
        let sid = accountSid.trimmingCharacters(in: .whitespacesAndNewlines)
        let token = authToken.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !sid.isEmpty else { throw AdapterError("TWILIO_ACCOUNT_SID is empty: set it to your account's AC… sid") }
        guard !token.isEmpty else { throw AdapterError("TWILIO_AUTH_TOKEN is empty") }
        let from = from?.trimmingCharacters(in: .whitespaces).nonEmpty
        let service = messagingServiceSid?.trimmingCharacters(in: .whitespaces).nonEmpty
        switch (from, service) {
        case (nil, nil):
            throw AdapterError("set one of TWILIO_FROM (a Twilio number) or TWILIO_MESSAGING_SERVICE_SID (MG…)")
        case (_?, _?):
            throw AdapterError("set only one of TWILIO_FROM and TWILIO_MESSAGING_SERVICE_SID, not both")
        default:
            break
        }
        self.accountSid = sid
        self.authToken = token
        self.from = from
        self.messagingServiceSid = service
        self.baseURL = try AdapterSupport.baseURL(baseURL, default: "https://api.twilio.com", variable: "TWILIO_URL")
        self.timeout = timeout
    }

    public var url: String { "\(baseURL)/2010-04-01/Accounts/\(AdapterSupport.percentEncode(accountSid))/Messages.json" }

    var secrets: [String] { [authToken] }

    /// The SMS text: "Title: body" (or whichever is not empty; just the body when it already starts with
    /// the title), cut to 1,600 UTF-16 units on a character boundary (Twilio's limit, §4.2).
    public static func text(for rendered: RenderedNotification) -> String {
        Truncation.sms(rendered.titleAndBody)
    }

    public func request(for envelope: Envelope) throws -> HTTPRequest {
        let to = envelope.destination.address.trimmingCharacters(in: .whitespaces)
        guard !to.isEmpty else { throw AdapterError("twilio: the recipient has no phone number") }
        var fields = [("To", to)]
        if let from { fields.append(("From", from)) }
        if let messagingServiceSid { fields.append(("MessagingServiceSid", messagingServiceSid)) }
        fields.append(("Body", Self.text(for: envelope.rendered)))
        if let statusCallback { fields.append(("StatusCallback", statusCallback)) }
        let credentials = Data("\(accountSid):\(authToken)".utf8).base64EncodedString()
        return HTTPRequest(
            method: "POST", url: url,
            headers: [
                ("content-type", "application/x-www-form-urlencoded"),
                ("accept", "application/json"),
                ("authorization", "Basic \(credentials)"),
            ],
            body: Array(AdapterSupport.formEncode(fields).utf8), timeout: timeout, version: .http1_1)
    }

    /// The Message resource of a message sent earlier: `GET …/Messages/{MessageSid}.json` with the same
    /// basic auth (providers.md §4.1). The `statuses` phase reads its `status` and `error_code` with
    /// ``TwilioTruth/poll(_:messageSid:)``.
    public func statusRequest(messageSid: String) -> HTTPRequest {
        let credentials = Data("\(accountSid):\(authToken)".utf8).base64EncodedString()
        return HTTPRequest(
            method: "GET",
            url: "\(baseURL)/2010-04-01/Accounts/\(AdapterSupport.percentEncode(accountSid))/Messages/\(AdapterSupport.percentEncode(messageSid)).json",
            headers: [("accept", "application/json"), ("authorization", "Basic \(credentials)")],
            body: [], timeout: timeout, version: .http1_1)
    }

    /// Twilio error codes that mean "stop sending to this number" (providers.md §4.4, §8). 21610 lasts
    /// until the recipient texts START. The HTTP status of 21614 and 21635 is unconfirmed (400 presumed);
    /// classification keys on the code, so it does not matter here.
    public static let deactivatingCodes: Set<Int> = [21211, 21610, 21614, 21635]

    /// Codes that an operator must fix, with what to fix. Those about the account or its sender refuse
    /// every message (`refused`, see `accountCodes`); the others are about this destination's region or
    /// a trial account's unverified number, and fail only this message.
    static let configCodes: [Int: String] = [
        20003: "authentication failed: check TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (and the account's region and status)",
        20403: "the account may not use this API (suspended or closed?): check the Twilio account",
        20404: "the account or resource was not found: check TWILIO_ACCOUNT_SID",
        21408: "no geo permission for the destination's region: enable it in the Twilio Console (Messaging geo permissions)",
        21606: "the From number cannot send SMS: set TWILIO_FROM to an SMS-capable Twilio number",
        21608: "trial account: the To number is not verified; verify it or upgrade the account",
        21212: "the From number is not valid: check TWILIO_FROM",
        21659: "the From number is not a Twilio number of this account: check TWILIO_FROM",
        21703: "the Messaging Service has no senders: check TWILIO_MESSAGING_SERVICE_SID",
        21704: "the Messaging Service has no senders: check TWILIO_MESSAGING_SERVICE_SID",
    ]

    /// The configuration codes about the account or its sender (credentials, a closed account, a From
    /// that cannot send): every message would be refused alike (providers.md §4.4: 20003, 20403 config).
    static let accountCodes: Set<Int> = [20003, 20403, 20404, 21606, 21212, 21659]

    public func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse {
        AdapterSupport.classify(result, provider: .twilio, secrets: secrets, now: now,
                                outcome: { Self.outcome($0, now: $1) }, throttle: Self.throttle)
    }

    /// Whom a "slow down" is about (providers.md §4.4, §4.6): 20429 (too many concurrent requests, HTTP
    /// 429) and any other 429 or 503 concern the account: provider-wide. 14107 (more than 30 messages
    /// between two numbers in 30 s) concerns that one recipient; providers.md gives it no HTTP status
    /// (whether it is ever answered at send time rather than in a status callback is unconfirmed).
    static func throttle(_ response: HTTPResponse, _ outcome: DeliveryOutcome) -> ThrottleScope? {
        guard case .retry(let after, let code, _) = outcome else { return nil }
        switch code {
        case "14107": return .destination(wait: after)
        case "20429": return .provider(wait: after)
        default: return ThrottleScope.providerWide(outcome, httpStatus: response.status)
        }
    }

    /// 21211 (not a valid phone number) for most numbers at once says the numbers are stored in a form
    /// Twilio does not take, not that every recipient is gone. 21610 (STOP), 21614 and 21635 (landline,
    /// not mobile) are about the number itself: always acted on.
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check that phone numbers are stored in E.164 (+ and the country code) and TWILIO_URL, if set",
                           codes: ["21211"])
    }

    static func outcome(_ response: HTTPResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        let json = AdapterSupport.json(response)
        let retryAfter = AdapterSupport.retryAfter(response, now: now)
        if (200..<300).contains(status) {
            // 201 Created: Twilio queued the SMS. Without a readable sid it was still created; sending it
            // again would send a second SMS, so it counts as delivered with no id.
            return .delivered(messageId: json?["sid"]?.stringValue)
        }
        guard let code = json?["code"]?.intValue else {
            let snippet = AdapterSupport.snippet(response)
            let text = "twilio answered \(status)" + (snippet.isEmpty ? "" : ": \(snippet)")
            switch status {
            case 429, 500..<600: return .retry(after: retryAfter, code: "http_\(status)", message: text)
            case 401, 403:
                return .refused(code: "http_\(status)", message: text + " (check TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN)")
            default: return .permanent(code: "http_\(status)", message: text)
            }
        }
        let message = json?["message"]?.stringValue ?? "error"
        let label = String(code)
        let text = "twilio \(code): \(message)"
        if deactivatingCodes.contains(code) {
            return .destinationInvalid(code: label, message: text)
        }
        if let fix = configCodes[code] {
            return accountCodes.contains(code) ? .refused(code: label, message: "\(text) — \(fix)")
                                               : .permanent(code: label, message: "\(text) — \(fix)")
        }
        switch code {
        case 20429:
            return .retry(after: retryAfter, code: label, message: "\(text) (too many concurrent requests)")
        case 14107:
            return .retry(after: retryAfter ?? 30, code: label, message: text)
        case 21617:
            return .permanent(code: label, message: "\(text) (body over 1,600 characters)")
        default:
            break
        }
        switch status {
        case 429, 500..<600: return .retry(after: retryAfter, code: label, message: text)
        default: return .permanent(code: label, message: text)
        }
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}

extension TwilioAdapter: StatusPolling {
    /// What became of a message is asked later, by the statuses phase.
    public var statusPolling: (any StatusPolling)? { self }

    public func isPollable(messageId: String) -> Bool { TwilioTruth.isMessageSid(messageId) }
    public func statusRequest(messageId: String) -> HTTPRequest { statusRequest(messageSid: messageId) }
    public func readStatus(_ result: Result<HTTPResponse, TransportError>, messageId: String) -> StatusPoll {
        TwilioTruth.poll(result, messageSid: messageId)
    }
    public var notFoundCode: String { "20404" }
}
