import Foundation
import HeraldCore
import HeraldHTTP

/// Expo Push Service (providers.md §3): up to 100 messages per `POST /--/api/v2/push/send`, one push
/// ticket per message in order; receipts fetched later with `POST /--/api/v2/push/getReceipts`.
///
///     let expo = try ExpoAdapter(accessToken: env["EXPO_ACCESS_TOKEN"], baseURL: env["EXPO_URL"])
///     let request = try expo.request(for: envelopes)          // envelopes.count ≤ expo.maxBatch
///     let outcomes = expo.classify(transport.perform(request), count: envelopes.count, now: now)
///
/// A ticket "ok" means Expo took the message, not that the device got it: `delivered(ticketId)` stores
/// the ticket id, and `receiptsRequest(ids:)` / `classifyReceipts(_:)` later tell whether Apple or Google
/// accepted it (DeviceNotRegistered there deactivates the token).
public struct ExpoAdapter: ProviderAdapter, ReceiptChecking {
    /// A dead token is deactivated.
    public var deadDestination: FollowUp? { .deactivateDestination }
    public let provider = Provider.expo
    /// Expo takes at most 100 messages per send request.
    public let maxBatch = 100
    /// Expo takes at most 1,000 ids per receipts request.
    public static let maxReceiptIds = 1000
    public var receiptBatch: Int { Self.maxReceiptIds }
    /// e.g. "https://exp.host" (no trailing slash).
    public let baseURL: String
    /// Sent as `Authorization: Bearer` when "enhanced push security" is on; nil sends no header.
    private let accessToken: String?
    /// The Android notification channel for kinds without one of their own in `androidChannels`
    /// (HERALD_ANDROID_CHANNEL); nil: the kind's built-in default (`defaultAndroidChannels`).
    public var androidChannelId: String?
    /// The Android notification channel per kind (HERALD_ANDROID_CHANNEL_<KIND>), by raw kind.
    public var androidChannels: [String: String]
    public var timeout: Double
    /// The rows whose message Expo refused as too big once: their next message is cut to
    /// `shrunkPayloadBytes`, and a second refusal fails them. Shared by copies of the adapter.
    public let tooBig = ExpoTooBigMemo()

    /// The Android channel of each kind when nothing is configured. The app creates these channels
    /// (`setNotificationChannelAsync`); a message naming a channel the device lacks is not shown.
    public static let defaultAndroidChannels: [String: String] = [
        "pattern_alert": "herald-alerts",
        "daily_forecast": "herald-forecasts",
        "prompt": "herald-prompts",
        "reminder": "herald-reminders",
        "system": "herald-system",
    ]
    /// What a message is cut to on its one retry after Expo's MessageTooBig: three quarters of 4,096.
    public static let shrunkPayloadBytes = Truncation.pushPayloadBytes * 3 / 4
    /// The back-off after MessageRateExceeded, by attempt: 5 s, 30 s, then 2 min.
    public static let rateExceededSchedule: [Double] = [5, 30, 120]

    public init(accessToken: String?, baseURL: String? = nil, androidChannelId: String? = nil,
                androidChannels: [String: String] = [:], timeout: Double = 15) throws {
        self.baseURL = try AdapterSupport.baseURL(baseURL, default: "https://exp.host", variable: "EXPO_URL")
        let token = accessToken?.trimmingCharacters(in: .whitespacesAndNewlines)
        self.accessToken = (token?.isEmpty ?? true) ? nil : token
        self.androidChannelId = androidChannelId
        self.androidChannels = androidChannels
        self.timeout = timeout
    }

    /// The Android channel for a row: the data's `channel_id`, else the kind's configured channel, else
    /// HERALD_ANDROID_CHANNEL, else the kind's default; nil for an unknown kind with nothing configured.
    public func androidChannel(for envelope: Envelope) -> String? {
        let kind = envelope.item.kindRaw
        return envelope.rendered.data["channel_id"]?.stringValue ?? androidChannels[kind] ?? androidChannelId
            ?? Self.defaultAndroidChannels[kind]
    }

    /// The wait before the next attempt after MessageRateExceeded (5 s, 30 s, then 2 min), `attempt`
    /// counting from 1.
    public static func rateExceededWait(attempt: Int) -> Double {
        rateExceededSchedule[min(max(attempt, 1), rateExceededSchedule.count) - 1]
    }

    public var sendURL: String { baseURL + "/--/api/v2/push/send" }
    public var receiptsURL: String { baseURL + "/--/api/v2/push/getReceipts" }

    private var secrets: [String] { accessToken.map { [$0] } ?? [] }

    // MARK: Sending

    /// Expo's priority for a row: high priority or critical severity → "high" (APNs 10, FCM high);
    /// normal → "default" (the platform's default: high on iOS, normal on Android); low → "normal"
    /// (APNs 5: delivered when convenient, batched, as low-priority notifications may be).
    public static func priority(for item: QueueItem) -> String {
        switch PushUrgency.of(item) {
        case .immediate: "high"
        case .normal: "default"
        case .low: "normal"
        }
    }

    /// One message object, its texts shortened (body first) so its JSON is at most 4,096 bytes. When the
    /// data object alone is too big, only its `kind`, `queue_id` and `deep_link` are kept. Throws when
    /// even that does not fit; `request(for:)` then throws for any batch holding it, and the pass sends
    /// the batch without it, failing it alone.
    ///
    /// A silent row is data-only: `_contentAvailable: true` and no title, body, sound or badge. An image
    /// goes to `richContent.image` with `mutableContent: true` (and stays in `data.image_url`); action
    /// buttons travel in `data.actions` with the row's `categoryId`.
    public func message(for envelope: Envelope) throws -> JSONValue {
        let r = envelope.rendered
        let limit = tooBig.contains(envelope.item.id) ? Self.shrunkPayloadBytes : Truncation.pushPayloadBytes
        var base: [String: JSONValue] = [
            "to": .string(envelope.destination.address),
            "data": .object(r.data),
            "priority": .string(Self.priority(for: envelope.item)),
            // A copy sent again replaces the first (Expo's SDK types name it; its docs do not yet).
            "collapseId": .string(CollapseKey.of(envelope.item)),
        ]
        if let channel = androidChannel(for: envelope) { base["channelId"] = .string(channel) }
        if r.silent {
            base["_contentAvailable"] = true
        } else {
            base["badge"] = .number(Double(r.badge))
            base["sound"] = r.sound.map { JSONValue.string($0) } ?? JSONValue.null
            base["interruptionLevel"] = .string(InterruptionLevel.of(severity: envelope.item.severity,
                                                                     priority: envelope.item.priority).rawValue)
            if let category = r.category { base["categoryId"] = .string(category) }
            if let image = r.imageURL {
                base["richContent"] = ["image": .string(image)]
                base["mutableContent"] = true
            }
        }
        func encode(_ title: String, _ body: String) -> [UInt8] {
            var m = base
            if !r.silent {
                m["title"] = .string(title)
                m["body"] = .string(body)
            }
            return Array(JSONValue.object(m).jsonText.utf8)
        }
        var fitted = Truncation.fit(title: r.title, body: r.body, limitBytes: limit, encode: encode)
        if fitted == nil {
            // The data alone is too big: keep only what the app needs to open the notification.
            base["data"] = .object(r.data.filter { ["kind", "queue_id", "deep_link"].contains($0.key) })
            fitted = Truncation.fit(title: r.title, body: r.body, limitBytes: limit, encode: encode)
        }
        guard let fitted else {
            throw AdapterError("expo: the message cannot be made to fit in \(limit) bytes, even with its title and body "
                               + "cut and its data reduced to kind, queue_id and deep_link: the token or one of those is too long")
        }
        if !r.silent {
            base["title"] = .string(fitted.title)
            base["body"] = .string(fitted.body)
        }
        return .object(base)
    }

    public func request(for envelopes: [Envelope]) throws -> HTTPRequest {
        guard !envelopes.isEmpty else { throw AdapterError("expo: no messages to send") }
        guard envelopes.count <= maxBatch else {
            throw AdapterError("expo: \(envelopes.count) messages in one request; at most \(maxBatch)")
        }
        let messages = try envelopes.map { try message(for: $0) }
        return HTTPRequest(method: "POST", url: sendURL, headers: headers(),
                           body: Array(JSONValue.array(messages).jsonText.utf8), timeout: timeout, version: .http2)
    }

    private func headers() -> [(String, String)] {
        var h = [("content-type", "application/json"), ("accept", "application/json")]
        if let accessToken { h.append(("authorization", "Bearer \(accessToken)")) }
        return h
    }

    /// One outcome per message, in order. Request-level answers (transport failure, 429, 5xx, an
    /// `errors` body, an unreadable body, a ticket count that does not match) give every message the
    /// same outcome.
    public func classify(_ result: Result<HTTPResponse, TransportError>, count: Int,
                         now: Date) -> [ClassifiedResponse] {
        let response: HTTPResponse
        switch result {
        case .failure(let error):
            return Array(repeating: ClassifiedResponse(
                AdapterSupport.transportOutcome(error, provider: .expo, secrets: secrets)), count: count)
        case .success(let r):
            response = r
        }
        let status = response.status
        let latency = AdapterSupport.latencyMs(response)
        func all(_ outcome: DeliveryOutcome) -> [ClassifiedResponse] {
            // A whole-request "slow down" (TOO_MANY_REQUESTS: over 600 notifications/s for the project,
            // providers.md §3.5/§3.6), or a 429/503 with a wait, concerns the project: provider-wide.
            var throttle = ThrottleScope.providerWide(outcome, httpStatus: status)
            if case .retry(let after, "TOO_MANY_REQUESTS", _) = outcome { throttle = .provider(wait: after) }
            return Array(repeating: ClassifiedResponse(AdapterSupport.redact(outcome, secrets: secrets),
                                                       httpStatus: status, latencyMs: latency, throttle: throttle),
                         count: count)
        }
        let json = AdapterSupport.json(response)

        // Request-level errors: {"errors":[{"code","message"}]}, with any status.
        if let errors = json?["errors"], case .array(let list) = errors, let first = list.first {
            return all(Self.requestError(code: first["code"]?.stringValue, message: first["message"]?.stringValue,
                                         status: status, retryAfter: AdapterSupport.retryAfter(response, now: now)))
        }
        guard (200..<300).contains(status) else {
            return all(Self.requestError(code: nil, message: AdapterSupport.snippet(response), status: status,
                                         retryAfter: AdapterSupport.retryAfter(response, now: now)))
        }
        // Tickets: {"data":[…]}, or one object when a single message went to a single token.
        let tickets: [JSONValue]
        switch json?["data"] {
        case .array(let list)?: tickets = list
        case .object(let one)? where count == 1: tickets = [.object(one)]
        default:
            return all(.retry(after: nil, code: "malformed_response",
                              message: "expo answered \(status) without push tickets: \(AdapterSupport.snippet(response))"))
        }
        guard tickets.count == count else {
            // The SDK treats this as an error too; Expo may have taken some, so a retry can duplicate.
            return all(.retry(after: nil, code: "ticket_count_mismatch",
                              message: "expo answered \(tickets.count) push tickets for \(count) messages"))
        }
        return tickets.map { ticket in
            let outcome = Self.ticketOutcome(ticket)
            // MessageRateExceeded: too many messages to this one device (§3.5).
            var throttle: ThrottleScope?
            if case .retry(let after, "MessageRateExceeded", _) = outcome { throttle = .destination(wait: after) }
            let redacted = AdapterSupport.redact(outcome, secrets: secrets)
            // A ticket is only an acceptance: its receipt is checked by a later pass.
            var followUps: [FollowUp] = []
            if case .delivered(let id?) = redacted { followUps.append(.checkReceipt(ticketId: id)) }
            return ClassifiedResponse(redacted, httpStatus: status, latencyMs: latency, throttle: throttle,
                                      followUps: followUps)
        }
    }

    /// The same, knowing each message's row: MessageTooBig is retried once at once with the message cut
    /// to `shrunkPayloadBytes` (a second refusal fails the row), and MessageRateExceeded waits
    /// 5 s, 30 s, 2 min by the row's attempt. A refusal of the whole request that only some messages
    /// caused fails only those (see `splitRefusal(_:tokens:)`).
    public func classify(_ result: Result<HTTPResponse, TransportError>, envelopes: [Envelope],
                         now: Date) -> [ClassifiedResponse] {
        var answers = classify(result, count: envelopes.count, now: now)
        let tokens = envelopes.map(\.destination.address)
        if case .success(let response) = result, answers.count == envelopes.count,
           let outcomes = Self.splitRefusal(response, tokens: tokens) {
            for i in answers.indices {
                // Expo's words may quote the tokens of the request: none goes into last_error.
                answers[i].outcome = AdapterSupport.redact(outcomes[i], secrets: secrets + tokens)
                // The messages that retry at once were refused for another message's sake: that says
                // nothing of Expo's health, so they do not count toward its circuit breaker.
                if case .retry = outcomes[i] { answers[i].throttle = .destination(wait: 0) } else { answers[i].throttle = nil }
            }
        }
        for (i, envelope) in envelopes.enumerated() where i < answers.count {
            let id = envelope.item.id
            switch answers[i].outcome {
            case .retry(_, "MessageRateExceeded", let message):
                let wait = Self.rateExceededWait(attempt: envelope.item.attempts)
                answers[i].outcome = .retry(after: wait, code: "MessageRateExceeded", message: message)
                answers[i].throttle = .destination(wait: wait)
            case .permanent("MessageTooBig", let message):
                if tooBig.insert(id) {
                    answers[i].outcome = .retry(after: 0, code: "MessageTooBig",
                                                message: message + " (retried once, cut to \(Self.shrunkPayloadBytes) bytes)")
                } else {
                    tooBig.remove(id)
                }
            case .delivered:
                tooBig.remove(id)
            default:
                break
            }
        }
        return answers
    }

    /// A refusal of the whole request (`errors`) that only some of its messages caused: one outcome per
    /// message, in order; nil when the answer is not such a refusal or does not say which messages.
    ///
    /// - PUSH_TOO_MANY_EXPERIENCE_IDS: the request mixed tokens of several Expo projects, and `details`
    ///   maps each project to its tokens (providers.md §3.5; the HTTP status, 400 in third-party tests, is
    ///   unconfirmed, so the code decides). herald sends for one project, taken to be the one with the most
    ///   tokens in the request: the tokens of the others fail (permanent, "token of another Expo
    ///   project"); the rest retry at once, sent again without them. On a tie nothing is told apart: every
    ///   message retries with its backoff (`requestError`). The retry is an attempt like any other and
    ///   counts as a transient failure for the pass's circuit breaker: a "not sent" answer, with no attempt
    ///   charged, is the pass's to give (DeliveryPass `JobResult.notSent`), not an adapter's.
    /// - VALIDATION_ERROR in a request of several messages (a code not in providers.md: unconfirmed): the
    ///   message Expo's text names, by its place (`"[3].to"`, as Joi paths read; unconfirmed) or by its
    ///   token, fails (permanent); the others retry at once, sent again without it. When none is named,
    ///   every message retries with its backoff: one bad message must not fail the others for good.
    static func splitRefusal(_ response: HTTPResponse, tokens: [String]) -> [DeliveryOutcome]? {
        guard tokens.count > 1, case .array(let errors)? = AdapterSupport.json(response)?["errors"],
              let error = errors.first else { return nil }
        let text = error["message"]?.stringValue ?? ""
        switch error["code"]?.stringValue {
        case "PUSH_TOO_MANY_EXPERIENCE_IDS":
            guard case .object(let details)? = error["details"] else { return nil }
            // Only this request's tokens count: a project is weighed by its messages here.
            let sent = Set(tokens)
            var projectsOf: [String: Set<String>] = [:]
            var size: [String: Int] = [:]
            for (project, list) in details {
                guard case .array(let listed) = list else { continue }
                for token in Set(listed.compactMap(\.stringValue)) where sent.contains(token) {
                    projectsOf[token, default: []].insert(project)
                    size[project, default: 0] += 1
                }
            }
            let most = size.values.max() ?? 0
            let leaders = size.filter { $0.value == most }.keys
            guard leaders.count == 1, let home = leaders.first else { return nil }
            func name(_ project: String) -> String { Truncation.prefix(project, maxUTF8Bytes: 100) }
            let others = size.keys.filter { $0 != home }.sorted().map(name).joined(separator: ", ")
            return tokens.map { token in
                // A token listed under herald's project too (however odd) is not another project's.
                if let projects = projectsOf[token], !projects.contains(home), let project = projects.sorted().first {
                    return .permanent(code: "PUSH_TOO_MANY_EXPERIENCE_IDS",
                                      message: "expo: token of another Expo project (\(name(project))) than most of the "
                                      + "request's (\(name(home))); herald sends for one project")
                }
                return .retry(after: 0, code: "PUSH_TOO_MANY_EXPERIENCE_IDS",
                              message: "expo: the request also held tokens of another Expo project (\(others)); sent again without them")
            }
        case "VALIDATION_ERROR":
            var named = Set<Int>()
            if let i = messageIndex(in: text), i < tokens.count { named.insert(i) }
            for (i, token) in tokens.enumerated() where token.count >= 8 && text.contains(token) { named.insert(i) }
            guard named.count < tokens.count else { return nil }
            return tokens.indices.map { i in
                if named.contains(i) {
                    return .permanent(code: "VALIDATION_ERROR", message: "expo refused this message: \(text)")
                }
                if named.isEmpty {
                    return .retry(after: nil, code: "VALIDATION_ERROR",
                                  message: "expo refused the request without naming the message at fault; tried again: \(text)")
                }
                return .retry(after: 0, code: "VALIDATION_ERROR",
                              message: "expo refused the request for another message in it; sent again without it: \(text)")
            }
        default:
            return nil
        }
    }

    /// The place of the message a validation error names: 3 in `"[3].to" must be a string`; nil if none.
    static func messageIndex(in text: String) -> Int? {
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "[") {
            let after = rest[rest.index(after: open)...]
            let digits = after.prefix(while: { $0.isASCII && $0.isNumber })
            let tail = after[digits.endIndex...]
            if (1...6).contains(digits.count), tail.hasPrefix("]."), let i = Int(digits) { return i }
            rest = after
        }
        return nil
    }

    /// DeviceNotRegistered is Expo relaying Apple's or Google's word that the token is dead: always acted
    /// on, never suspected of being a configuration slip.
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check EXPO_ACCESS_TOKEN and the Expo project's push credentials", codes: [])
    }

    /// Its tickets' receipts are checked later, by the receipts phase.
    public var receipts: (any ReceiptChecking)? { self }

    /// A push ticket: ok → delivered(ticket id); error → by `details.error`.
    static func ticketOutcome(_ ticket: JSONValue) -> DeliveryOutcome {
        switch ticket["status"]?.stringValue {
        case "ok":
            return .delivered(messageId: ticket["id"]?.stringValue)
        case "error":
            return errorOutcome(code: ticket["details"]?["error"]?.stringValue,
                                message: ticket["message"]?.stringValue ?? "")
        default:
            return .retry(after: nil, code: "malformed_response",
                          message: "expo push ticket without a status: \(Truncation.prefix(ticket.jsonText, maxUTF8Bytes: 200))")
        }
    }

    /// A ticket's or receipt's `details.error` (providers.md §3.5).
    public static func errorOutcome(code: String?, message: String) -> DeliveryOutcome {
        let text = message.isEmpty ? (code ?? "error") : message
        switch code {
        case "DeviceNotRegistered":
            return .destinationInvalid(code: "DeviceNotRegistered", message: "expo: \(text)")
        case "MessageTooBig":
            return .permanent(code: "MessageTooBig", message: "expo: payload over 4096 bytes: \(text)")
        case "MessageRateExceeded":
            return .retry(after: nil, code: "MessageRateExceeded", message: "expo: too many messages to this device: \(text)")
        case "InvalidCredentials":
            return .permanent(code: "InvalidCredentials",
                              message: "expo: the project's push credentials (APNs key / FCM) are invalid or revoked; upload valid ones to Expo: \(text)")
        case "MismatchSenderId":
            return .permanent(code: "MismatchSenderId",
                              message: "expo: FCM sender id does not match the project's FCM credentials; fix them in Expo: \(text)")
        case "ProviderError", "ExpoError":
            // providers.md: retrying these is an inference, not Expo's documented advice.
            return .retry(after: nil, code: code, message: "expo: \(text)")
        case let other?:
            return .permanent(code: other, message: "expo: \(text)")
        case nil:
            return .permanent(code: "expo_error", message: "expo: \(text)")
        }
    }

    /// Whole-request errors (providers.md §3.5; HTTP statuses of PUSH_TOO_MANY_* and UNAUTHORIZED are
    /// unconfirmed, so the code decides, then the status).
    static func requestError(code: String?, message: String?, status: Int, retryAfter: Double?) -> DeliveryOutcome {
        let text = (message?.isEmpty ?? true) ? "" : ": \(message!)"
        switch code {
        case "TOO_MANY_REQUESTS":
            return .retry(after: retryAfter, code: "TOO_MANY_REQUESTS", message: "expo: over 600 notifications/s\(text)")
        case "UNAUTHORIZED":
            // herald's access token: every request would be refused alike.
            return .refused(code: "UNAUTHORIZED",
                              message: "expo: access token required or invalid; set EXPO_ACCESS_TOKEN to a valid Expo access token\(text)")
        case "PUSH_TOO_MANY_EXPERIENCE_IDS":
            // Which tokens are of another project is told apart by `splitRefusal`, knowing the tokens.
            return .retry(after: retryAfter, code: "PUSH_TOO_MANY_EXPERIENCE_IDS",
                          message: "expo: the request mixes tokens of several Expo projects; herald sends for one project, so tokens of other projects must be removed\(text)")
        case "PUSH_TOO_MANY_NOTIFICATIONS":
            return .permanent(code: "PUSH_TOO_MANY_NOTIFICATIONS", message: "expo: over 100 messages in one request\(text)")
        default:
            break
        }
        let label = code ?? "http_\(status)"
        switch status {
        case 429:
            return .retry(after: retryAfter, code: label, message: "expo answered 429\(text)")
        case 500..<600:
            return .retry(after: retryAfter, code: label, message: "expo answered \(status)\(text)")
        case 401, 403:
            return .refused(code: label,
                            message: "expo answered \(status); check EXPO_ACCESS_TOKEN\(text)")
        case 200..<300:
            // An `errors` body with a 2xx status: nothing was sent; unknown why, so try again later.
            return .retry(after: retryAfter, code: label, message: "expo answered \(status) with an error\(text)")
        default:
            return .permanent(code: label, message: "expo answered \(status)\(text)")
        }
    }

    // MARK: Receipts

    /// `POST /--/api/v2/push/getReceipts` for at most 1,000 ticket ids (more are dropped: the caller
    /// chunks; see `maxReceiptIds`).
    public func receiptsRequest(ids: [String]) -> HTTPRequest {
        let body: JSONValue = ["ids": .array(ids.prefix(Self.maxReceiptIds).map { .string($0) })]
        return HTTPRequest(method: "POST", url: receiptsURL, headers: headers(), body: Array(body.jsonText.utf8),
                           timeout: timeout, version: .http2)
    }

    /// The receipts Expo has ready. Ids asked for but absent are not ready yet (ask again later; after
    /// about a day Expo no longer has them).
    public func classifyReceipts(_ result: Result<HTTPResponse, TransportError>) -> ReceiptsResult {
        let response: HTTPResponse
        switch result {
        case .failure(let error):
            return .failed(AdapterSupport.transportOutcome(error, provider: .expo, secrets: secrets))
        case .success(let r):
            response = r
        }
        let json = AdapterSupport.json(response)
        if let errors = json?["errors"], case .array(let list) = errors, let first = list.first {
            let outcome = Self.requestError(code: first["code"]?.stringValue, message: first["message"]?.stringValue,
                                            status: response.status, retryAfter: nil)
            return .failed(AdapterSupport.redact(outcome, secrets: secrets))
        }
        guard (200..<300).contains(response.status) else {
            let outcome = Self.requestError(code: nil, message: AdapterSupport.snippet(response),
                                            status: response.status, retryAfter: nil)
            return .failed(AdapterSupport.redact(outcome, secrets: secrets))
        }
        guard case .object(let data)? = json?["data"] else {
            return .failed(.retry(after: nil, code: "malformed_response",
                                  message: "expo answered \(response.status) without receipts: \(AdapterSupport.redact(AdapterSupport.snippet(response), secrets: secrets))"))
        }
        var receipts: [String: ExpoReceipt] = [:]
        for (id, receipt) in data {
            switch receipt["status"]?.stringValue {
            case "ok":
                receipts[id] = .ok
            case "error":
                let code = AdapterSupport.readable(receipt["details"]?["error"]?.stringValue ?? "expo_error",
                                                   maxUTF8Bytes: AdapterSupport.maxCodeBytes)
                let message = receipt["message"]?.stringValue.map {
                    AdapterSupport.redact(AdapterSupport.readable($0), secrets: secrets)
                } ?? code
                receipts[id] = .error(code: code, message: Truncation.prefix(message, maxUTF8Bytes: AdapterSupport.maxMessageBytes))
            default:
                // Any other status ("pending", none, one Expo adds later) is not a final word: the
                // receipt is asked for again, like one not in the answer, until the phase gives up.
                continue
            }
        }
        return .receipts(receipts)
    }
}

/// The rows Expo refused as too big once (in this process): their next message is cut shorter. Bounded:
/// past 10,000 rows it starts over (a row then gets one more full-size try).
public final class ExpoTooBigMemo: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: Set<UUID> = []
    static let capacity = 10_000

    public init() {}

    public func contains(_ id: UUID) -> Bool { lock.withLock { ids.contains(id) } }

    /// True when `id` was not there yet.
    @discardableResult
    public func insert(_ id: UUID) -> Bool {
        lock.withLock {
            if ids.count >= Self.capacity { ids.removeAll() }
            return ids.insert(id).inserted
        }
    }

    public func remove(_ id: UUID) { _ = lock.withLock { ids.remove(id) } }
}

/// One Expo push receipt: whether Apple or Google accepted the message.
public enum ExpoReceipt: Sendable, Equatable {
    case ok
    /// `details.error` ("DeviceNotRegistered", "MessageTooBig", …) and Expo's message.
    case error(code: String, message: String)

    /// True when the token is dead and must be deactivated.
    public var isDeviceNotRegistered: Bool {
        if case .error("DeviceNotRegistered", _) = self { return true }
        return false
    }

    /// As a delivery outcome: ok → delivered; errors as for push tickets (DeviceNotRegistered →
    /// destinationInvalid, MessageRateExceeded → retry, InvalidCredentials → permanent, …).
    public var outcome: DeliveryOutcome {
        switch self {
        case .ok: .delivered(messageId: nil)
        case .error(let code, let message): ExpoAdapter.errorOutcome(code: code, message: message)
        }
    }
}

/// The answer to one receipts request.
public enum ReceiptsResult: Sendable, Equatable {
    /// The receipts that are ready, by ticket id. An id asked for and absent here is not ready yet.
    case receipts([String: ExpoReceipt])
    /// The request itself failed (transport, 429/5xx, `errors`, unreadable body): ask again later
    /// when the outcome is a retry.
    case failed(DeliveryOutcome)

    /// The receipt for `id`; nil when not ready yet or the request failed.
    public func receipt(for id: String) -> ExpoReceipt? {
        if case .receipts(let r) = self { return r[id] }
        return nil
    }

    /// The ids of `asked` with no receipt yet.
    public func notReady(_ asked: [String]) -> [String] {
        guard case .receipts(let r) = self else { return asked }
        return asked.filter { r[$0] == nil }
    }
}
