import Foundation

/// A fake WhatsApp Cloud API on loopback TLS (providers.md §5): `POST /{version}/{phone_number_id}/messages`
/// with `Authorization: Bearer`, a template message body; answers
/// `{"messaging_product":"whatsapp","contacts":[…],"messages":[{"id":"wamid.…"}]}` or Graph's error envelope.
/// `GET /{version}/{phone_number_id}` answers the sender's `verified_name` and `quality_rating`, for
/// `herald doctor --online`.
///
///     let wa = try FakeWhatsApp(tls: certificates, token: "EAAG…", phoneNumberId: "1065…")
///     wa.fail(to: "+15555550100", code: 131026, message: "Message undeliverable")
public final class FakeWhatsApp: Sendable {
    public let server: FakeHTTPServer
    public var baseURL: String { server.baseURL }

    /// One accepted template message.
    public struct Sent: Sendable, Equatable {
        public var to: String
        public var name: String
        public var language: String
        public var parameters: [String]
    }

    struct State {
        var failures: [String: (code: Int, message: String, status: Int)] = [:]
        var next: [FakeResponse] = []
        var sent: [Sent] = []
    }
    private let state: MsgFakeLock<State>

    /// `approvedTemplates`: when set, other template names fail with 132001 (as for an unapproved one).
    public init(tls: TestCertificates, token: String, phoneNumberId: String, apiVersion: String = "v21.0",
                approvedTemplates: Set<String>? = nil) throws {
        let state = MsgFakeLock(State())
        self.state = state
        let path = "/\(apiVersion)/\(phoneNumberId)/messages"
        server = try FakeHTTPServer(tls: tls) { request in
            FakeWhatsApp.handle(request, token: token, path: path, approved: approvedTemplates, state: state)
        }
    }

    public func shutdown() { server.shutdown() }

    /// Messages to `to` fail with this Graph error code.
    public func fail(to: String, code: Int, message: String, status: Int = 400) {
        state.with { $0.failures[to] = (code, message, status) }
    }

    /// The next requests get these answers, in order, instead of the normal ones.
    public func enqueue(_ responses: FakeResponse...) { state.with { $0.next += responses } }

    /// Every accepted message, in order.
    public var sent: [Sent] { state.with { $0.sent } }

    /// Graph's error envelope.
    public static func error(_ status: Int, code: Int, message: String, type: String = "OAuthException",
                             details: String? = nil) -> FakeResponse {
        var error: [String: Any] = [
            "message": "(#\(code)) \(message)", "type": type, "code": code, "fbtrace_id": "A" + MsgFakeWire.hex(16),
        ]
        if let details { error["error_data"] = ["messaging_product": "whatsapp", "details": details] }
        return .json(status, MsgFakeWire.text(["error": error]))
    }

    static func handle(_ request: FakeRequest, token: String, path: String, approved: Set<String>?,
                       state: MsgFakeLock<State>) -> FakeResponse {
        if let scripted = state.with({ $0.next.isEmpty ? nil : $0.next.removeFirst() }) { return scripted }
        guard request.header("authorization") == "Bearer \(token)" else {
            return .json(401, MsgFakeWire.text(["error": [
                "message": "Invalid OAuth access token - Cannot parse access token", "type": "OAuthException",
                "code": 190, "fbtrace_id": "A" + MsgFakeWire.hex(16)] as [String: Any]]))
        }
        let sender = String(path.dropLast("/messages".count))
        if request.method == "GET", request.path == sender || request.path.hasPrefix(sender + "?") {
            return .json(200, MsgFakeWire.text([
                "verified_name": "Herald Test", "quality_rating": "GREEN", "id": String(sender.split(separator: "/").last ?? ""),
            ]))
        }
        guard request.method == "POST", request.path == path else {
            return error(400, code: 100, message: "Unsupported post request. Object with ID does not exist.",
                         type: "GraphMethodException")
        }
        guard let body = MsgFakeWire.json(request.body) as? [String: Any] else {
            return error(400, code: 100, message: "Invalid parameter", details: "The request body is not JSON")
        }
        guard body["messaging_product"] as? String == "whatsapp" else {
            return error(400, code: 100, message: "Invalid parameter", details: "messaging_product must be whatsapp")
        }
        guard let to = body["to"] as? String, !to.isEmpty else {
            return error(400, code: 131008, message: "Required parameter is missing", details: "to is required")
        }
        guard body["type"] as? String == "template", let template = body["template"] as? [String: Any],
              let name = template["name"] as? String, !name.isEmpty,
              let language = (template["language"] as? [String: Any])?["code"] as? String, !language.isEmpty else {
            return error(400, code: 131008, message: "Required parameter is missing",
                         details: "template.name and template.language.code are required")
        }
        var parameters: [String] = []
        for component in template["components"] as? [[String: Any]] ?? [] {
            guard component["type"] as? String == "body" else { continue }
            for p in component["parameters"] as? [[String: Any]] ?? [] {
                guard p["type"] as? String == "text", let text = p["text"] as? String, !text.isEmpty else {
                    return error(400, code: 131009, message: "Parameter value is not valid",
                                 details: "body parameters must be non-empty text")
                }
                if text.contains("\n") || text.contains("\t") || text.contains("     ") {
                    return error(400, code: 132018, message: "There was an issue with the parameters in your template.",
                                 details: "Param text cannot have new-line/tab characters or more than 4 consecutive spaces")
                }
                parameters.append(text)
            }
        }
        if let approved, !approved.contains(name) {
            return error(404, code: 132001, message: "Template name does not exist in the translation",
                         details: "template name (\(name)) does not exist in \(language)")
        }
        if let failure = state.with({ $0.failures[to] }) {
            return error(failure.status, code: failure.code, message: failure.message)
        }
        state.with { $0.sent.append(Sent(to: to, name: name, language: language, parameters: parameters)) }
        let waId = to.hasPrefix("+") ? String(to.dropFirst()) : to
        return .json(200, MsgFakeWire.text([
            "messaging_product": "whatsapp",
            "contacts": [["input": to, "wa_id": waId]],
            "messages": [["id": "wamid.HBgL" + MsgFakeWire.hex(24).uppercased(), "message_status": "accepted"]],
        ] as [String: Any]))
    }
}
