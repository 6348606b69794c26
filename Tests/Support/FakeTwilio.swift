import Foundation

/// A fake Twilio Messaging API on loopback TLS (providers.md §4): `POST /2010-04-01/Accounts/{sid}/Messages.json`,
/// HTTP basic auth that must match, a form-encoded body, `To` in E.164, `From` or `MessagingServiceSid`,
/// `Body` of at most 1,600 characters. Answers 201 with a Message resource, or Twilio's error JSON
/// `{"code","message","more_info","status"}`. `GET …/Messages/{sid}.json` answers the message's status,
/// scripted with `setStatus` (for the `statuses` phase's polling). `GET /2010-04-01/Accounts/{sid}.json`
/// answers the account with its `status` (`active` unless `accountStatus` says otherwise), for
/// `herald doctor --online`.
///
///     let twilio = try FakeTwilio(tls: certificates, accountSid: "AC…", authToken: "…")
///     twilio.fail(to: "+15555550100", code: 21610, message: "Attempt to send to unsubscribed recipient")
public final class FakeTwilio: Sendable {
    public let server: FakeHTTPServer
    public var baseURL: String { server.baseURL }
    public let accountSid: String

    struct State {
        var failures: [String: (code: Int, message: String, status: Int)] = [:]
        var next: [FakeResponse] = []
        var accepted: [[String: String]] = []
        /// Message SID → its status and error code, as `GET …/Messages/{sid}.json` reports them.
        var statuses: [String: (status: String, errorCode: Int?)] = [:]
        var statusRequests: [String] = []
        var accountStatus = "active"
    }
    private let state: MsgFakeLock<State>

    public init(tls: TestCertificates, accountSid: String, authToken: String) throws {
        let state = MsgFakeLock(State())
        self.state = state
        self.accountSid = accountSid
        let expectedAuth = "Basic " + Data("\(accountSid):\(authToken)".utf8).base64EncodedString()
        server = try FakeHTTPServer(tls: tls) { request in
            FakeTwilio.handle(request, accountSid: accountSid, expectedAuth: expectedAuth, state: state)
        }
    }

    public func shutdown() { server.shutdown() }

    /// Messages to `to` fail with this Twilio error.
    public func fail(to: String, code: Int, message: String, status: Int = 400) {
        state.with { $0.failures[to] = (code, message, status) }
    }

    /// The next requests get these answers, in order, instead of the normal ones.
    public func enqueue(_ responses: FakeResponse...) { state.with { $0.next += responses } }

    /// The form fields of every message accepted (201), in order.
    public var accepted: [[String: String]] { state.with { $0.accepted } }

    /// What `GET …/Messages/{sid}.json` says about a message from now on (a message accepted and never
    /// scripted is `queued`; a sid never seen is 404, code 20404).
    public func setStatus(_ sid: String, _ status: String, errorCode: Int? = nil) {
        state.with { $0.statuses[sid] = (status, errorCode) }
    }

    /// What `GET /2010-04-01/Accounts/{sid}.json` says of the account: `active`, `suspended` or `closed`.
    public func setAccountStatus(_ status: String) { state.with { $0.accountStatus = status } }

    /// The sids asked about with `GET …/Messages/{sid}.json`, in order.
    public var statusRequests: [String] { state.with { $0.statusRequests } }

    /// Twilio's error body.
    public static func error(_ status: Int, code: Int, message: String) -> FakeResponse {
        .json(status, MsgFakeWire.text([
            "code": code, "message": message,
            "more_info": "https://www.twilio.com/docs/errors/\(code)", "status": status,
        ] as [String: Any]))
    }

    static func handle(_ request: FakeRequest, accountSid: String, expectedAuth: String,
                       state: MsgFakeLock<State>) -> FakeResponse {
        if let scripted = state.with({ $0.next.isEmpty ? nil : $0.next.removeFirst() }) { return scripted }
        guard request.header("authorization") == expectedAuth else {
            return error(401, code: 20003, message: "Authenticate")
        }
        if request.method == "GET", request.path == "/2010-04-01/Accounts/\(accountSid).json" {
            return .json(200, MsgFakeWire.text([
                "sid": accountSid, "status": state.with { $0.accountStatus }, "type": "Full",
                "friendly_name": "herald test account", "uri": "/2010-04-01/Accounts/\(accountSid).json",
            ]))
        }
        let messagesPrefix = "/2010-04-01/Accounts/\(accountSid)/Messages/"
        if request.method == "GET", request.path.hasPrefix(messagesPrefix), request.path.hasSuffix(".json") {
            let sid = String(request.path.dropFirst(messagesPrefix.count).dropLast(".json".count))
            guard let known = state.with({ s -> (status: String, errorCode: Int?)? in
                s.statusRequests.append(sid)
                return s.statuses[sid]
            }) else {
                return error(404, code: 20404, message: "The requested resource \(request.path) was not found")
            }
            let message: [String: Any] = [
                "sid": sid, "account_sid": accountSid, "status": known.status,
                "error_code": known.errorCode.map { $0 as Any } ?? NSNull(),
                "error_message": NSNull(), "direction": "outbound-api", "api_version": "2010-04-01",
                "uri": "/2010-04-01/Accounts/\(accountSid)/Messages/\(sid).json",
            ]
            return .json(200, MsgFakeWire.text(message))
        }
        guard request.method == "POST", request.path == "/2010-04-01/Accounts/\(accountSid)/Messages.json" else {
            return error(404, code: 20404, message: "The requested resource \(request.path) was not found")
        }
        guard request.header("content-type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            return error(400, code: 21602, message: "Message body is required.")   // a JSON body reads as no parameters
        }
        let form = MsgFakeWire.form(request.body)
        guard let to = form["To"], !to.isEmpty else { return error(400, code: 21604, message: "A 'To' phone number is required.") }
        guard MsgFakeWire.isE164(to) else {
            return error(400, code: 21211, message: "The 'To' number \(to) is not a valid phone number.")
        }
        guard form["From"]?.isEmpty == false || form["MessagingServiceSid"]?.isEmpty == false else {
            return error(400, code: 21603, message: "A 'From' phone number is required.")
        }
        guard let body = form["Body"], !body.isEmpty else { return error(400, code: 21602, message: "Message body is required.") }
        // Twilio counts characters; UTF-16 units here (what herald cuts on), the stricter reading.
        guard body.utf16.count <= 1600 else {
            return error(400, code: 21617, message: "The concatenated message body exceeds the 1600 character limit.")
        }
        if let failure = state.with({ $0.failures[to] }) {
            return error(failure.status, code: failure.code, message: failure.message)
        }
        state.with { $0.accepted.append(form) }
        let sid = "SM" + MsgFakeWire.hex(32)
        let service = form["MessagingServiceSid"]
        state.with { $0.statuses[sid] = (service == nil ? "queued" : "accepted", nil) }
        let message: [String: Any] = [
            "sid": sid, "account_sid": accountSid, "to": to, "from": form["From"].map { $0 as Any } ?? NSNull(),
            "messaging_service_sid": service.map { $0 as Any } ?? NSNull(), "body": body,
            "status": service == nil ? "queued" : "accepted",
            "num_segments": service == nil ? "1" : "0", "num_media": "0", "direction": "outbound-api",
            "api_version": "2010-04-01", "price": NSNull(), "price_unit": "USD",
            "error_code": NSNull(), "error_message": NSNull(),
            "uri": "/2010-04-01/Accounts/\(accountSid)/Messages/\(sid).json",
        ]
        return .json(201, MsgFakeWire.text(message))
    }
}
