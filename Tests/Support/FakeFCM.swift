import Crypto
import Foundation
import _CryptoExtras

/// A loopback FCM HTTP v1 (providers.md §2) with its OAuth token endpoint, on `FakeHTTPServer` with TLS.
///
/// - `POST /token`: the JWT-bearer grant. Verifies the RS256 assertion against the service account's
///   public key, `iss`, `aud`, `scope`, and `exp − iat ≤ 3600`; answers
///   `{"access_token":…,"expires_in":3599,"token_type":"Bearer"}` or 400 `invalid_grant`.
/// - `POST /v1/projects/<id>/messages:send`: requires `Authorization: Bearer <an unexpired issued
///   token>` (else 401 UNAUTHENTICATED), `data` values all strings (else 400 INVALID_ARGUMENT), at most
///   4096 bytes; answers `{"name":"projects/<id>/messages/<n>"}` or a scripted google.rpc.Status.
///
/// The RSA key and the service-account JSON (token_uri pointing here) are made at run time.
///
///     let fcm = try FakeFCM(certificates: certificates)
///     fcm.script("gone", .fcmError(404, status: "NOT_FOUND", errorCode: "UNREGISTERED",
///                                  message: "Requested entity was not found."))
///     let adapter = try FCMAdapter(serviceAccountJSON: fcm.serviceAccountJSON, baseURL: fcm.baseURL)
public final class FakeFCM: Sendable {
    public struct Behaviour: Sendable {
        public var response: FakeResponse

        /// A google.rpc.Status error with an FcmError detail carrying `errorCode`.
        public static func fcmError(_ http: Int, status: String, errorCode: String, message: String,
                                    headers: [(String, String)] = []) -> Behaviour {
            Behaviour(response: .json(http, FakeFCMState.rpcError(http, status: status, message: message, details: [
                ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode],
            ]), headers: headers))
        }

        /// Which quota a 429 QUOTA_EXCEEDED is about.
        public enum Quota: Sendable {
            case project, device, topic
        }

        /// 429 RESOURCE_EXHAUSTED / QUOTA_EXCEEDED with a `google.rpc.QuotaFailure` detail naming the quota
        /// (FCM's ErrorCode page: "an extension of type google.rpc.QuotaFailure is returned to specify which
        /// quota was exceeded"). The violations' exact wording is unconfirmed (providers.md §2.5); these
        /// follow Google's QuotaFailure shape (`subject`, `description`) and FCM's names for the three
        /// quotas (message rate, device message rate, topic message rate).
        public static func quotaExceeded(_ quota: Quota, retryAfter: Int? = nil) -> Behaviour {
            let violation: [String: Any]
            switch quota {
            case .project:
                violation = ["subject": "project_number:000000000000",
                             "description": "Message rate exceeded: the sending rate of messages for the project is too high."]
            case .device:
                violation = ["subject": "registration_token",
                             "description": "Device message rate exceeded: the rate of messages to this device is too high."]
            case .topic:
                violation = ["subject": "topic",
                             "description": "Topic message rate exceeded: the rate of messages to this topic is too high."]
            }
            return Behaviour(response: .json(429, FakeFCMState.rpcError(429, status: "RESOURCE_EXHAUSTED",
                message: "Quota exceeded.", details: [
                    ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "QUOTA_EXCEEDED"],
                    ["@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]],
                ]), headers: retryAfter.map { [("retry-after", String($0))] } ?? []))
        }

        /// Anything at all.
        public static func raw(_ response: FakeResponse) -> Behaviour { Behaviour(response: response) }
    }

    public let projectId: String
    public let clientEmail: String
    /// The service account's private key (PEM PKCS#8), also inside `serviceAccountJSON`.
    public let privateKeyPEM: String
    /// A service-account key file whose token_uri is this fake's `/token`.
    public let serviceAccountJSON: String
    public let server: FakeHTTPServer
    private let state: FakeFCMState

    /// `ending`: how the fake ends its connections (nil: never).
    public init(certificates: TestCertificates, projectId: String = "herald-test",
                clientEmail: String = "herald-push@herald-test.iam.gserviceaccount.com",
                ending: ConnectionEnding? = nil) throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let state = FakeFCMState(publicKey: key.publicKey, projectId: projectId, clientEmail: clientEmail)
        let server = try FakeHTTPServer(tls: certificates, ending: ending) { request in state.handle(request) }
        state.setTokenURI(server.baseURL + "/token")
        self.server = server
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.state = state
        let privateKeyPEM = key.pkcs8PEMRepresentation
        self.privateKeyPEM = privateKeyPEM
        let account: [String: String] = [
            "type": "service_account",
            "project_id": projectId,
            "private_key_id": "0123456789abcdef0123456789abcdef01234567",
            "private_key": privateKeyPEM,
            "client_email": clientEmail,
            "client_id": "100000000000000000001",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": server.baseURL + "/token",
        ]
        let data = try JSONSerialization.data(withJSONObject: account, options: [.sortedKeys])
        serviceAccountJSON = String(decoding: data, as: UTF8.self)
    }

    public var baseURL: String { server.baseURL }
    public var tokenURI: String { server.baseURL + "/token" }
    public var requests: [FakeRequest] { server.requests }
    public func shutdown() { server.shutdown() }

    public func script(_ token: String, _ behaviour: Behaviour) { state.set(token, behaviour) }
    /// The fake's clock for token expiry and the assertion's `exp` (default: the real clock).
    public func setClock(_ now: Date?) { state.setClock(now) }
    /// Successful token exchanges so far.
    public var tokenExchanges: Int { state.exchanges }
    /// Access tokens issued so far, in order.
    public var issuedTokens: [String] { state.issued }
    /// Forgets every issued access token: the next send answers 401 UNAUTHENTICATED.
    public func revokeAccessTokens() { state.revoke() }
    /// Makes the token endpoint answer this instead of verifying (nil: verify again).
    public func scriptTokenEndpoint(_ response: FakeResponse?) { state.setTokenOverride(response) }
    /// Holds the project to `quota` (FCM's own is 600,000 messages a minute): each send over it is
    /// answered 429 RESOURCE_EXHAUSTED / QUOTA_EXCEEDED (project).
    public func enforce(_ quota: FakeQuota) { state.setQuota(quota) }
}

final class FakeFCMState: @unchecked Sendable {
    let publicKey: _RSA.Signing.PublicKey
    let projectId: String
    let clientEmail: String
    private let lock = NSLock()
    private var tokenURI = ""
    private var scripts: [String: FakeFCM.Behaviour] = [:]
    private var clock: Date?
    private var live: [String: Date] = [:]
    private var issuedTokens: [String] = []
    private var tokenOverride: FakeResponse?
    private var messages = 0
    private var quota: FakeQuota?

    init(publicKey: _RSA.Signing.PublicKey, projectId: String, clientEmail: String) {
        self.publicKey = publicKey
        self.projectId = projectId
        self.clientEmail = clientEmail
    }

    func setTokenURI(_ uri: String) { lock.withLock { tokenURI = uri } }
    func set(_ token: String, _ behaviour: FakeFCM.Behaviour) { lock.withLock { scripts[token] = behaviour } }
    func setClock(_ now: Date?) { lock.withLock { clock = now } }
    func revoke() { lock.withLock { live.removeAll() } }
    func setTokenOverride(_ r: FakeResponse?) { lock.withLock { tokenOverride = r } }
    func setQuota(_ q: FakeQuota) { lock.withLock { quota = q } }
    var exchanges: Int { lock.withLock { issuedTokens.count } }
    var issued: [String] { lock.withLock { issuedTokens } }
    private var now: Date { lock.withLock { clock } ?? Date() }

    static func rpcError(_ code: Int, status: String, message: String, details: [[String: Any]] = []) -> String {
        var error: [String: Any] = ["code": code, "message": message, "status": status]
        if !details.isEmpty { error["details"] = details }
        let data = (try? JSONSerialization.data(withJSONObject: ["error": error], options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    func handle(_ request: FakeRequest) -> FakeResponse {
        guard request.method == "POST" else { return .json(405, Self.rpcError(405, status: "UNIMPLEMENTED", message: "Method not allowed")) }
        if request.path == "/token" { return token(request) }
        if request.path == "/v1/projects/\(projectId)/messages:send" {
            if let quota = lock.withLock({ quota }), !quota.admit() {
                return FakeFCM.Behaviour.quotaExceeded(.project).response
            }
            return send(request)
        }
        if request.path.hasPrefix("/v1/projects/") {
            return .json(404, Self.rpcError(404, status: "NOT_FOUND", message: "Requested entity was not found."))
        }
        return .text(404, "Not Found")
    }

    private static func invalidGrant(_ description: String) -> FakeResponse {
        .json(400, #"{"error":"invalid_grant","error_description":"\#(description)"}"#)
    }

    /// The JWT-bearer grant (error wordings follow recorded Google answers; exact text unconfirmed).
    private func token(_ request: FakeRequest) -> FakeResponse {
        if let override = lock.withLock({ tokenOverride }) { return override }
        var form: [String: String] = [:]
        for pair in request.text.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { continue }
            form[kv[0].removingPercentEncoding ?? kv[0]] = kv[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return .json(400, #"{"error":"unsupported_grant_type","error_description":"Invalid grant_type: \#(form["grant_type"] ?? "")"}"#)
        }
        guard let assertion = form["assertion"] else { return Self.invalidGrant("Missing required parameter: assertion") }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3,
              let headerData = base64URLDecode(parts[0]), let claimsData = base64URLDecode(parts[1]),
              let signatureData = base64URLDecode(parts[2]),
              let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any]
        else { return Self.invalidGrant("Invalid JWT: malformed") }
        guard header["alg"] as? String == "RS256",
              publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signatureData),
                                         for: Data((parts[0] + "." + parts[1]).utf8), padding: .insecurePKCS1v1_5)
        else { return Self.invalidGrant("Invalid JWT Signature.") }
        guard claims["iss"] as? String == clientEmail else { return Self.invalidGrant("Invalid JWT: Failed issuer check.") }
        guard claims["aud"] as? String == lock.withLock({ tokenURI }) else {
            return Self.invalidGrant("Invalid JWT: Failed audience check.")
        }
        let scopes = (claims["scope"] as? String ?? "").split(separator: " ")
        guard scopes.contains("https://www.googleapis.com/auth/firebase.messaging")
                || scopes.contains("https://www.googleapis.com/auth/cloud-platform") else {
            return .json(400, #"{"error":"invalid_scope","error_description":"Invalid OAuth scope or ID token audience provided."}"#)
        }
        let now = self.now.timeIntervalSince1970
        guard let iat = (claims["iat"] as? NSNumber)?.doubleValue, let exp = (claims["exp"] as? NSNumber)?.doubleValue,
              exp - iat <= 3600, exp > now, iat <= now + 300 else {
            return Self.invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        let token = "ya29.fake-" + UUID().uuidString.lowercased()
        lock.withLock {
            live[token] = Date(timeIntervalSince1970: now + 3599)
            issuedTokens.append(token)
        }
        return .json(200, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#)
    }

    private func send(_ request: FakeRequest) -> FakeResponse {
        let unauthenticated = FakeResponse.json(401, Self.rpcError(401, status: "UNAUTHENTICATED", message:
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."),
            headers: [("www-authenticate", #"Bearer realm="https://accounts.google.com/""#)])
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer ") else {
            return unauthenticated
        }
        let bearer = String(authorization.dropFirst("Bearer ".count))
        let now = self.now
        guard let expiry = lock.withLock({ live[bearer] }), expiry > now else { return unauthenticated }

        guard request.body.count <= 4096 else {
            // FCM limits the payload (keys and values) to 4096 bytes; this fake holds the whole request
            // body to it, which is stricter and what herald's adapter promises.
            return .json(400, Self.rpcError(400, status: "INVALID_ARGUMENT", message: "Message is too big", details: [
                ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"],
            ]))
        }
        guard let root = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any],
              let message = root["message"] as? [String: Any] else {
            return .json(400, Self.rpcError(400, status: "INVALID_ARGUMENT", message: "Invalid JSON payload received."))
        }
        guard let token = message["token"] as? String, !token.isEmpty else {
            return .json(400, Self.rpcError(400, status: "INVALID_ARGUMENT", message: "Recipient of the message is not set.", details: [
                ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"],
            ]))
        }
        if let data = message["data"] as? [String: Any] {
            for (index, key) in data.keys.sorted().enumerated() where !(data[key] is String) {
                let text = "Invalid value at 'message.data[\(index)].value' (TYPE_STRING), \(data[key] ?? "null")"
                return .json(400, Self.rpcError(400, status: "INVALID_ARGUMENT", message: text, details: [
                    ["@type": "type.googleapis.com/google.rpc.BadRequest",
                     "fieldViolations": [["field": "message.data[\(index)].value", "description": text]]],
                ]))
            }
        } else if message["data"] != nil {
            return .json(400, Self.rpcError(400, status: "INVALID_ARGUMENT", message: "Invalid value at 'message.data'"))
        }
        if let scripted = lock.withLock({ scripts[token] }) { return scripted.response }
        let n = lock.withLock { messages += 1; return messages }
        return .json(200, #"{"name":"projects/\#(projectId)/messages/0:\#(n)"}"#)
    }
}
