import Foundation

/// A fake Expo Push Service on loopback TLS (providers.md §3). It checks what Expo checks — POST JSON,
/// at most 100 messages, Expo push token syntax, a valid `priority`, the access token when one is
/// required — answers `{"data":[tickets…]}` in message order, and serves receipts for the tickets it
/// issued.
///
///     let expo = try FakeExpo(tls: certificates)
///     expo.failTicket(token: "ExponentPushToken[dead]", error: "DeviceNotRegistered")
///     expo.failReceipt(token: "ExponentPushToken[gone]", error: "DeviceNotRegistered")
///     // adapter baseURL: expo.baseURL
public final class FakeExpo: Sendable {
    public let server: FakeHTTPServer
    public var baseURL: String { server.baseURL }

    struct State {
        var accessToken: String?
        var ticketErrors: [String: (error: String, message: String)] = [:]
        var receiptErrors: [String: (error: String, message: String)] = [:]
        var receiptsReady = true
        /// Messages whose compact JSON is bigger get a MessageTooBig ticket. Expo measures the payload
        /// it makes for Apple or Google, not our JSON: a smaller limit stands in for that difference.
        var maxMessageBytes = 4096
        var next: [FakeResponse] = []
        /// Ticket id → token, for every ok ticket issued.
        var tickets: [String: String] = [:]
        var sendBatchSizes: [Int] = []
    }
    private let state: MsgFakeLock<State>

    /// `accessToken`: when set, requests must carry `Authorization: Bearer <it>` ("enhanced push security");
    /// `ending`: how the fake ends its connections (nil: never).
    public init(tls: TestCertificates, accessToken: String? = nil, ending: ConnectionEnding? = nil) throws {
        let state = MsgFakeLock(State(accessToken: accessToken))
        self.state = state
        server = try FakeHTTPServer(tls: tls, ending: ending) { request in FakeExpo.handle(request, state: state) }
    }

    public func shutdown() { server.shutdown() }

    /// Messages to `token` get an error ticket with this `details.error` (e.g. "DeviceNotRegistered").
    public func failTicket(token: String, error: String, message: String? = nil) {
        state.with { $0.ticketErrors[token] = (error, message ?? "\"\(token)\" failed: \(error)") }
    }

    /// Tickets issued for `token` get an error receipt with this `details.error`.
    public func failReceipt(token: String, error: String, message: String? = nil) {
        state.with { $0.receiptErrors[token] = (error, message ?? "\"\(token)\" is not a registered push notification recipient") }
    }

    /// When false, the receipts endpoint omits every id (not ready yet).
    public func setReceiptsReady(_ ready: Bool) { state.with { $0.receiptsReady = ready } }

    /// The size above which a message gets a MessageTooBig ticket (4096 by default).
    public func setMaxMessageBytes(_ bytes: Int) { state.with { $0.maxMessageBytes = bytes } }

    /// The next requests (send or receipts) get these answers, in order, instead of the normal ones.
    public func enqueue(_ responses: FakeResponse...) { state.with { $0.next += responses } }

    /// The number of messages in each send request, in arrival order.
    public var sendBatchSizes: [Int] { state.with { $0.sendBatchSizes } }

    /// Ticket ids issued so far, with their tokens.
    public var issuedTickets: [String: String] { state.with { $0.tickets } }

    /// The send requests received.
    public var sendRequests: [FakeRequest] { server.requests.filter { $0.path == "/--/api/v2/push/send" } }

    /// `ExponentPushToken[…]` / `ExpoPushToken[…]`, or a bare UUID (the SDK's `isExpoPushToken`).
    public static func isExpoPushToken(_ token: String) -> Bool {
        if (token.hasPrefix("ExponentPushToken[") || token.hasPrefix("ExpoPushToken[")) && token.hasSuffix("]") {
            return true
        }
        return token.range(of: "^[a-z0-9]{8}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{12}$",
                           options: [.regularExpression, .caseInsensitive]) != nil
    }

    static func error(_ status: Int, code: String, message: String) -> FakeResponse {
        .json(status, MsgFakeWire.text(["errors": [["code": code, "message": message]]]))
    }

    static func handle(_ request: FakeRequest, state: MsgFakeLock<State>) -> FakeResponse {
        if let scripted = state.with({ $0.next.isEmpty ? nil : $0.next.removeFirst() }) { return scripted }
        guard request.method == "POST" else { return .json(405, #"{"errors":[{"code":"METHOD_NOT_ALLOWED","message":"POST only"}]}"#) }
        if let required = state.with({ $0.accessToken }), request.header("authorization") != "Bearer \(required)" {
            // HTTP status of UNAUTHORIZED is unconfirmed (providers.md §3.5); 401 presumed.
            return error(401, code: "UNAUTHORIZED",
                         message: "The bearer token is invalid or missing (enhanced push security is enabled).")
        }
        guard request.header("content-type")?.lowercased().hasPrefix("application/json") == true else {
            return error(400, code: "VALIDATION_ERROR", message: "content-type must be application/json")
        }
        switch request.path {
        case "/--/api/v2/push/send": return send(request, state: state)
        case "/--/api/v2/push/getReceipts": return receipts(request, state: state)
        default: return error(404, code: "NOT_FOUND", message: "Not found")
        }
    }

    static func send(_ request: FakeRequest, state: MsgFakeLock<State>) -> FakeResponse {
        let messages: [[String: Any]]
        switch MsgFakeWire.json(request.body) {
        case let list as [[String: Any]]: messages = list
        case let one as [String: Any]: messages = [one]
        default: return error(400, code: "VALIDATION_ERROR", message: "The request body must be a push message or an array of them.")
        }
        // Each recipient counts toward the 100.
        let tokens: [[String]] = messages.map { m in
            if let s = m["to"] as? String { return [s] }
            return (m["to"] as? [String]) ?? []
        }
        let recipients = tokens.reduce(0) { $0 + $1.count }
        // Exact status unconfirmed (providers.md: 4xx).
        guard recipients <= 100 else {
            return error(400, code: "PUSH_TOO_MANY_NOTIFICATIONS",
                         message: "You are trying to send more than 100 push notifications in one request.")
        }
        for (i, m) in messages.enumerated() {
            guard !tokens[i].isEmpty else {
                return error(400, code: "VALIDATION_ERROR", message: "\"[\(i)].to\" is required.")
            }
            // The exact error for a malformed token is not in providers.md; a validation error here.
            for t in tokens[i] where !isExpoPushToken(t) {
                return error(400, code: "VALIDATION_ERROR", message: "\"[\(i)].to\" must be a valid Expo push token, got \"\(t)\".")
            }
            if let p = m["priority"], !["default", "normal", "high"].contains(p as? String ?? "") {
                return error(400, code: "VALIDATION_ERROR", message: "\"[\(i)].priority\" must be one of [default, normal, high].")
            }
        }
        var tickets: [[String: Any]] = []
        state.with { s in
            s.sendBatchSizes.append(recipients)
            for (i, list) in tokens.enumerated() {
                // The message's size as compact JSON (JSONSerialization writes "/" as "\/": undone).
                let size = (try? JSONSerialization.data(withJSONObject: messages[i]))
                    .map { String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "\\/", with: "/").utf8.count } ?? 0
                for token in list {
                    if let failure = s.ticketErrors[token] {
                        tickets.append(["status": "error", "message": failure.message,
                                        "details": ["error": failure.error, "expoPushToken": token]])
                    } else if size > s.maxMessageBytes {
                        tickets.append(["status": "error", "message": "Message too big (\(size) bytes).",
                                        "details": ["error": "MessageTooBig"]])
                    } else {
                        let id = UUID().uuidString.lowercased()
                        s.tickets[id] = token
                        tickets.append(["status": "ok", "id": id])
                    }
                }
            }
        }
        return .json(200, MsgFakeWire.text(["data": tickets]))
    }

    static func receipts(_ request: FakeRequest, state: MsgFakeLock<State>) -> FakeResponse {
        guard let body = MsgFakeWire.json(request.body) as? [String: Any], let ids = body["ids"] as? [String] else {
            return error(400, code: "VALIDATION_ERROR", message: "\"ids\" must be an array of receipt ids.")
        }
        guard ids.count <= 1000 else {
            return error(400, code: "PUSH_TOO_MANY_RECEIPTS", message: "You are trying to get more than 1000 push receipts in one request.")
        }
        var data: [String: Any] = [:]
        state.with { s in
            guard s.receiptsReady else { return }
            for id in ids {
                guard let token = s.tickets[id] else { continue }   // unknown ids are omitted
                if let failure = s.receiptErrors[token] {
                    data[id] = ["status": "error", "message": failure.message, "details": ["error": failure.error]]
                } else {
                    data[id] = ["status": "ok"]
                }
            }
        }
        return .json(200, MsgFakeWire.text(["data": data]))
    }
}
