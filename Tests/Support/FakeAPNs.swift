import Crypto
import Foundation

/// A loopback APNs (providers.md §1) on `FakeHTTPServer` with TLS and HTTP/2. It checks what Apple
/// checks — HTTP/2, `POST /3/device/<token>`, the ES256 provider token (signature, `kid`, `iss`, `iat`
/// within the last hour), `apns-topic`, the 4096-byte limit — and answers with Apple's statuses and
/// `{"reason":…}` bodies. Per-token behaviours script the other errors.
///
/// The auth key is made at run time; `keyPEM` is what the adapter is configured with.
///
///     let apns = try FakeAPNs(certificates: certificates)
///     apns.script("dead", .unregistered(timestamp: 1_700_000_000_000))
///     let adapter = try APNsAdapter(keyPEM: apns.keyPEM, keyId: apns.keyId, teamId: apns.teamId,
///                                   topic: apns.topic, baseURL: apns.baseURL)
public final class FakeAPNs: Sendable {
    /// What the fake answers for one device token.
    public struct Behaviour: Sendable {
        public var response: FakeResponse

        /// An APNs error: `status` with `{"reason":reason}`, plus headers (e.g. retry-after).
        public static func error(_ status: Int, _ reason: String, headers: [(String, String)] = [],
                                 delay: Double = 0) -> Behaviour {
            Behaviour(response: .json(status, #"{"reason":"\#(reason)"}"#, headers: headers, delay: delay))
        }

        /// 410 Unregistered with Apple's `timestamp` (milliseconds since the epoch).
        public static func unregistered(timestamp: Int64) -> Behaviour {
            Behaviour(response: .json(410, #"{"reason":"Unregistered","timestamp":\#(timestamp)}"#))
        }

        /// Success, after `seconds`.
        public static func delay(_ seconds: Double) -> Behaviour {
            Behaviour(response: FakeResponse(status: 200, delay: seconds))
        }

        /// Anything at all (a malformed body, a proxy's HTML page…).
        public static func raw(_ response: FakeResponse) -> Behaviour { Behaviour(response: response) }
    }

    public let topic: String
    public let keyId: String
    public let teamId: String
    /// The `.p8` auth key (PEM PKCS#8 EC P-256) made for this fake.
    public let keyPEM: String
    public let server: FakeHTTPServer
    private let state: FakeAPNsState

    /// `latency`: how long every unscripted answer takes (the benchmark's 20 ms provider); `ending`: how
    /// the fake ends its connections (nil: never).
    public init(certificates: TestCertificates, topic: String = "com.example.herald",
                keyId: String = "ABC123DEFG", teamId: String = "DEF123GHIJ", latency: Double = 0,
                threads: Int = 1, ending: ConnectionEnding? = nil) throws {
        let key = P256.Signing.PrivateKey()
        let state = FakeAPNsState(publicKey: key.publicKey, topic: topic, keyId: keyId, teamId: teamId, latency: latency)
        self.topic = topic
        self.keyId = keyId
        self.teamId = teamId
        keyPEM = key.pemRepresentation
        self.state = state
        server = try FakeHTTPServer(tls: certificates, threads: threads, ending: ending) { request in state.handle(request) }
    }

    public var baseURL: String { server.baseURL }
    public var requests: [FakeRequest] { server.requests }
    public var connectionCount: Int { server.connectionCount }
    /// Streams never processed: beyond a GOAWAY's last stream id.
    public var refusedCount: Int { server.refusedCount }
    public func shutdown() { server.shutdown() }

    /// Scripts the answer for `token` (replacing an earlier script).
    public func script(_ token: String, _ behaviour: Behaviour) { state.set(token, behaviour) }

    /// The fake's clock for the `iat` check (default: the real clock). Tests that inject `now` into
    /// the adapter set it to match.
    public func setClock(_ now: Date?) { state.setClock(now) }

    /// Different valid provider tokens seen so far (to prove reuse).
    public var distinctJWTs: Int { state.distinctJWTs }
    /// Every provider token seen, valid or not, in arrival order.
    public var jwtsSeen: [String] { state.jwtsSeen }
    /// Answers 429 TooManyRequests to each push over `quota` (with a window equal to `latency`: the
    /// pushes in flight at once).
    public func enforce(_ quota: FakeQuota) { state.setQuota(quota) }
}

private final class FakeAPNsState: @unchecked Sendable {
    let publicKey: P256.Signing.PublicKey
    let topic: String
    let keyId: String
    let teamId: String
    let latency: Double
    private let lock = NSLock()
    private var scripts: [String: FakeAPNs.Behaviour] = [:]
    private var clock: Date?
    private var valid: Set<String> = []
    private var seen: [String] = []
    private var quota: FakeQuota?

    init(publicKey: P256.Signing.PublicKey, topic: String, keyId: String, teamId: String, latency: Double) {
        self.latency = latency
        self.publicKey = publicKey
        self.topic = topic
        self.keyId = keyId
        self.teamId = teamId
    }

    func set(_ token: String, _ behaviour: FakeAPNs.Behaviour) { lock.withLock { scripts[token] = behaviour } }
    func setClock(_ now: Date?) { lock.withLock { clock = now } }
    func setQuota(_ q: FakeQuota) { lock.withLock { quota = q } }
    var distinctJWTs: Int { lock.withLock { valid.count } }
    var jwtsSeen: [String] { lock.withLock { seen } }

    static func reason(_ status: Int, _ reason: String) -> FakeResponse {
        .json(status, #"{"reason":"\#(reason)"}"#)
    }

    func handle(_ request: FakeRequest) -> FakeResponse {
        // APNs is HTTP/2 only; real APNs would not answer HTTP/1.1 at all (this status is the fake's own).
        guard request.httpVersion == "2" else { return .text(505, "APNs requires HTTP/2") }
        guard request.method == "POST" else { return Self.reason(405, "MethodNotAllowed") }
        let prefix = "/3/device/"
        guard request.path.hasPrefix(prefix) else { return Self.reason(404, "BadPath") }
        let token = String(request.path.dropFirst(prefix.count))
        guard !token.isEmpty else { return Self.reason(400, "MissingDeviceToken") }
        if let quota = lock.withLock({ quota }), !quota.admit() { return Self.reason(429, "TooManyRequests") }

        guard let authorization = request.header("authorization"), !authorization.isEmpty else {
            return Self.reason(403, "MissingProviderToken")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return Self.reason(403, "InvalidProviderToken") }
        let jwt = String(parts[1])
        // A token already verified is not verified again (its signature cannot have changed); its
        // age is still checked.
        let known = lock.withLock { () -> Bool in seen.append(jwt); return valid.contains(jwt) }
        switch known ? verifyAge(jwt) : verify(jwt) {
        case .invalid: return Self.reason(403, "InvalidProviderToken")
        case .expired: return Self.reason(403, "ExpiredProviderToken")
        case .valid: lock.withLock { _ = valid.insert(jwt) }
        }

        guard let requestTopic = request.header("apns-topic"), !requestTopic.isEmpty else {
            return Self.reason(400, "MissingTopic")
        }
        guard requestTopic == topic else { return Self.reason(400, "BadTopic") }
        if let collapse = request.header("apns-collapse-id"), collapse.utf8.count > 64 {
            return Self.reason(400, "BadCollapseId")
        }
        guard !request.body.isEmpty else { return Self.reason(400, "PayloadEmpty") }
        guard request.body.count <= 4096 else { return Self.reason(413, "PayloadTooLarge") }

        if let scripted = lock.withLock({ scripts[token] }) {
            var response = scripted.response
            if response.status == 200 { response.headers.append(("apns-id", apnsId(request))) }
            return response
        }
        return FakeResponse(status: 200, headers: [("apns-id", apnsId(request))], delay: latency)
    }

    private func apnsId(_ request: FakeRequest) -> String {
        request.header("apns-id") ?? UUID().uuidString.lowercased()
    }

    enum Verdict { case valid, invalid, expired }

    private var issuedAt: [String: Double] = [:]

    private func verifyAge(_ jwt: String) -> Verdict {
        guard let iat = lock.withLock({ issuedAt[jwt] }) else { return verify(jwt) }
        let now = (lock.withLock { clock } ?? Date()).timeIntervalSince1970
        return now - iat > 3600 ? .expired : .valid
    }

    /// ES256 signature with the configured public key, `alg`, `kid`, `iss`; `iat` (number, or a string
    /// as APNSwift sends) within the last hour. A token more than five minutes in the future is treated
    /// as invalid (Apple's handling of that case is unconfirmed).
    private func verify(_ jwt: String) -> Verdict {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3,
              let headerData = base64URLDecode(parts[0]), let claimsData = base64URLDecode(parts[1]),
              let signatureData = base64URLDecode(parts[2]),
              let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any],
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
              publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)),
              header["alg"] as? String == "ES256", header["kid"] as? String == keyId,
              claims["iss"] as? String == teamId
        else { return .invalid }
        let iat: Double
        if let n = claims["iat"] as? NSNumber { iat = n.doubleValue }
        else if let s = claims["iat"] as? String, let n = Double(s) { iat = n }
        else { return .invalid }
        let now = (lock.withLock { clock } ?? Date()).timeIntervalSince1970
        if iat > now + 300 { return .invalid }
        if now - iat > 3600 { return .expired }
        lock.withLock { issuedAt[jwt] = iat }
        return .valid
    }
}

/// base64url (padding optional) to bytes.
func base64URLDecode(_ text: String) -> Data? {
    var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while s.count % 4 != 0 { s += "=" }
    return Data(base64Encoded: s)
}
