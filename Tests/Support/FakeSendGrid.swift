import Foundation

/// A fake SendGrid v3 Mail Send on loopback TLS (providers.md §6): `POST /v3/mail/send`, `Authorization:
/// Bearer <key>`, body validation (personalizations with `to`, `from.email`, a subject, `content`
/// values of at least one character, text/plain first); answers 202 with `X-Message-Id`, or
/// `{"errors":[{"message","field","help"}]}`. `GET /v3/scopes` answers the key's scopes (`scopes`), for
/// `herald doctor --online`.
///
///     let sendgrid = try FakeSendGrid(tls: certificates, apiKey: "SG.…")
///     sendgrid.fail(email: "bounce@example.com", status: 400, message: "Does not contain a valid address.")
public final class FakeSendGrid: Sendable {
    public let server: FakeHTTPServer
    public var baseURL: String { server.baseURL }

    /// One accepted email.
    public struct Sent: Sendable {
        public var messageId: String
        public var to: [String]
        public var fromEmail: String
        public var subject: String
        public var contentTypes: [String]
        public var text: String
        public var customArgs: [String: String]
        public var headers: [String: String]
    }

    struct State {
        var failures: [String: (status: Int, message: String, field: String?)] = [:]
        var next: [FakeResponse] = []
        var sent: [Sent] = []
    }
    private let state: MsgFakeLock<State>

    /// `scopes`: what `GET /v3/scopes` says the key may do.
    public init(tls: TestCertificates, apiKey: String, scopes: [String] = ["mail.send", "user.profile.read"]) throws {
        let state = MsgFakeLock(State())
        self.state = state
        server = try FakeHTTPServer(tls: tls) { request in
            if request.method == "GET", request.path == "/v3/scopes", request.header("authorization") == "Bearer \(apiKey)" {
                return .json(200, MsgFakeWire.text(["scopes": scopes]))
            }
            return FakeSendGrid.handle(request, apiKey: apiKey, state: state)
        }
    }

    public func shutdown() { server.shutdown() }

    /// Mail to `email` fails with this status and error message.
    public func fail(email: String, status: Int, message: String, field: String? = nil) {
        state.with { $0.failures[email] = (status, message, field) }
    }

    /// The next requests get these answers, in order, instead of the normal ones.
    public func enqueue(_ responses: FakeResponse...) { state.with { $0.next += responses } }

    /// Every accepted email, in order.
    public var sent: [Sent] { state.with { $0.sent } }

    /// SendGrid's error body.
    public static func error(_ status: Int, _ message: String, field: String? = nil,
                             headers: [(String, String)] = []) -> FakeResponse {
        .json(status, MsgFakeWire.text(["errors": [[
            "message": message, "field": field.map { $0 as Any } ?? NSNull(), "help": NSNull()] as [String: Any]]]), headers: headers)
    }

    static func handle(_ request: FakeRequest, apiKey: String, state: MsgFakeLock<State>) -> FakeResponse {
        if let scripted = state.with({ $0.next.isEmpty ? nil : $0.next.removeFirst() }) { return scripted }
        guard request.header("authorization") == "Bearer \(apiKey)" else {
            return error(401, "The provided authorization grant is invalid, expired, or revoked")
        }
        guard request.method == "POST" else { return error(405, "method not allowed") }
        guard request.path == "/v3/mail/send" else { return error(404, "not found") }
        guard let body = MsgFakeWire.json(request.body) as? [String: Any] else {
            return error(400, "Bad Request", field: nil)
        }
        guard let personalizations = body["personalizations"] as? [[String: Any]], !personalizations.isEmpty else {
            return error(400, "You must have at least one personalization.", field: "personalizations")
        }
        var recipients: [String] = []
        for (i, p) in personalizations.enumerated() {
            guard let to = p["to"] as? [[String: Any]], !to.isEmpty else {
                return error(400, "The to array is required for all personalization objects, and must have at least one email object with a valid email address.",
                             field: "personalizations.\(i).to")
            }
            for (j, address) in to.enumerated() {
                guard let email = address["email"] as? String, email.contains("@"), !email.contains(" ") else {
                    return error(400, "Does not contain a valid address.", field: "personalizations.\(i).to.\(j).email")
                }
                recipients.append(email)
            }
        }
        guard recipients.count <= 1000 else {
            return error(400, "There is a limit of 1000 total recipients (to + cc + bcc) per request.", field: "personalizations")
        }
        guard let from = body["from"] as? [String: Any], let fromEmail = from["email"] as? String, fromEmail.contains("@") else {
            return error(400, "The from object must be provided for every email send. It is an object that requires the email parameter, but may also contain a name parameter.",
                         field: "from")
        }
        let subject = (body["subject"] as? String) ?? (personalizations[0]["subject"] as? String) ?? ""
        guard !subject.isEmpty else {
            return error(400, "The subject is required. You can get around this requirement if you use a template with a subject defined or if every personalization has a subject defined.",
                         field: "subject")
        }
        guard let content = body["content"] as? [[String: Any]], !content.isEmpty else {
            return error(400, "Unless a valid template_id is provided, the content parameter is required. There must be at least one defined content block. We typically suggest both text/plain and text/html blocks are included, but only one block is required.",
                         field: "content")
        }
        var types: [String] = []
        for (i, c) in content.enumerated() {
            guard let type = c["type"] as? String, !type.isEmpty, let value = c["value"] as? String, !value.isEmpty else {
                return error(400, "The content value must be a string at least one character in length.", field: "content.\(i).value")
            }
            types.append(type)
        }
        if let html = types.firstIndex(of: "text/html"), let plain = types.firstIndex(of: "text/plain"), plain > html {
            return error(400, "If present, text/plain content must be first, followed by text/html.", field: "content.0.type")
        }
        if let failure = recipients.lazy.compactMap({ r in state.with { $0.failures[r] } }).first {
            return error(failure.status, failure.message, field: failure.field)
        }
        let id = String((0..<22).map { _ in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".randomElement()! })
        let args = (personalizations[0]["custom_args"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        let headers = (body["headers"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        let plain = content.first(where: { $0["type"] as? String == "text/plain" })
        let text = plain?["value"] as? String ?? ""
        state.with {
            $0.sent.append(Sent(messageId: id, to: recipients, fromEmail: fromEmail, subject: subject,
                                contentTypes: types, text: text, customArgs: args, headers: headers))
        }
        return FakeResponse(status: 202, headers: [("x-message-id", id)])
    }
}
