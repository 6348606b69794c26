import Foundation
import HeraldCore
import HeraldHTTP

/// What Expo answered to a send: one outcome per message, from its push tickets or from a refusal of the
/// whole request (`errors`), and what each error code of a ticket or receipt means.
extension ExpoAdapter {
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
    ///   charged, is the pass's to give (`AnswerPolicy.Outcome.notSent`), not an adapter's.
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
}
