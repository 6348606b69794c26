import Foundation
import HeraldCore
import HeraldHTTP
import _CryptoExtras

/// A Google service account (the JSON key file) and the OAuth 2.0 access token exchanged for it with
/// the JWT-bearer grant (providers.md §2.2). The token is cached until it is about to expire; the cache
/// is thread-safe and shared by every copy of the adapter that owns it.
///
///     let account = try GoogleServiceAccount(json: fileText)
///     try account.refreshIfNeeded(now: now, transport: transport)
///     let bearer = account.accessToken        // "ya29.…"
public final class GoogleServiceAccount: @unchecked Sendable {
    public let projectId: String
    public let clientEmail: String
    public let tokenURI: String
    public let scope: String
    private let key: _RSA.Signing.PrivateKey
    private let lock = NSLock()
    private var cached: (token: String, expiresAt: Date)?
    /// The token before `cached` (replaced or dropped).
    private var previous: String?
    private var exchanges = 0
    /// Where the access token is shared with the other passes (the worker's database); nil: this process only.
    private var sharedStore: (any CredentialStore)?

    /// Refresh when the token expires within this many seconds.
    public static let refreshMargin: TimeInterval = 5 * 60
    /// The assertion's lifetime; Google allows at most an hour.
    public static let assertionLifetime: TimeInterval = 3600

    /// - Throws: `AdapterError` naming the missing or malformed field (never quoting the key).
    public init(json: String, scope: String = "https://www.googleapis.com/auth/firebase.messaging") throws {
        guard let parsed = try? JSONValue.parse(json), case .object(let o) = parsed else {
            throw Self.fileError(" is not a JSON object")
        }
        func field(_ name: String) throws -> String {
            guard let v = o[name] else { throw Self.fileError(" has no \"\(name)\" field") }
            guard case .string(let s) = v, !s.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw Self.fileError(": \"\(name)\" must be a non-empty string")
            }
            return s.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if let type = o["type"]?.stringValue, type != "service_account" {
            throw Self.fileError(": \"type\" is \"\(type)\", expected \"service_account\"")
        }
        projectId = try field("project_id")
        clientEmail = try field("client_email")
        let pem = try field("private_key")
        tokenURI = try field("token_uri")
        guard let url = URL(string: tokenURI), let scheme = url.scheme?.lowercased(),
              scheme == "https" || scheme == "http", url.host != nil else {
            throw Self.fileError(": \"token_uri\" is not an http(s) URL")
        }
        guard pem.contains("-----BEGIN") else {
            throw Self.fileError(": \"private_key\" is not a PEM key")
        }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw Self.fileError(": \"private_key\" is not a valid RSA private key (PEM PKCS#8, 2048 bits or more)")
        }
        self.scope = scope
    }

    /// The cached access token, if any (nil before the first exchange and after `invalidate()`).
    public var accessToken: String? { lock.withLock { cached?.token } }

    /// When the cached token expires.
    public var expiresAt: Date? { lock.withLock { cached?.expiresAt } }

    /// Token exchanges that succeeded so far.
    public var exchangeCount: Int { lock.withLock { exchanges } }

    /// Drops the cached token (after a 401 from FCM): the next `refreshIfNeeded` exchanges again, and the
    /// other passes too.
    public func invalidate() {
        let (dropped, store) = lock.withLock {
            let dropped = cached?.token
            if let dropped { previous = dropped }
            cached = nil
            return (dropped, sharedStore)
        }
        if let dropped { store?.forget(storeKey, token: dropped) }
    }

    /// Shares the access token through `store` from now on: a pass takes the one another pass got while
    /// it is far from expiring, and exchanges one for all when it is not.
    public func share(through store: any CredentialStore) {
        lock.withLock { sharedStore = store }
    }

    /// The key the access token is shared under: one per service account.
    public var storeKey: String { "fcm:\(clientEmail)" }

    /// The access tokens requests may have carried: the cached one and the one before it (answers to
    /// requests sent with it may arrive after a 401 dropped it). An answer that echoes one of them must
    /// not carry it into `last_error`.
    public var recentTokens: [String] { lock.withLock { [cached?.token, previous].compactMap { $0 } } }

    /// True when there is no token or it expires within `refreshMargin` of `now`.
    public func needsRefresh(now: Date) -> Bool {
        lock.withLock {
            guard let cached else { return true }
            return cached.expiresAt.timeIntervalSince(now) <= Self.refreshMargin
        }
    }

    /// The signed RS256 assertion for the grant: iss = client_email, scope, aud = token_uri, iat, exp.
    func assertion(now: Date) throws -> String {
        let iat = now.timeIntervalSince1970.rounded(.down)
        let header: JSONValue = ["alg": "RS256", "typ": "JWT"]
        let claims: JSONValue = [
            "iss": .string(clientEmail), "scope": .string(scope), "aud": .string(tokenURI),
            "iat": .number(iat), "exp": .number(iat + Self.assertionLifetime),
        ]
        return try JWT.rs256(header: header, claims: claims, key: key)
    }

    /// Makes sure a token far from expiring is cached: the shared one when another pass got it, else one
    /// exchanged now (for all passes, when there is a store). Errors carry the provider's
    /// `error`/`error_description`, never the key, the assertion or a token.
    public func refreshIfNeeded(now: Date, transport: HTTPTransport, timeout: Double = 15) throws {
        guard needsRefresh(now: now) else { return }
        let store = lock.withLock { sharedStore }
        let usable: (SharedCredential) -> Bool = { $0.expiresAt.timeIntervalSince(now) > Self.refreshMargin }
        let fresh = try store?.credential(storeKey, now: now, usable: usable,
                                          mint: { try exchange(now: now, transport: transport, timeout: timeout) })
            ?? exchange(now: now, transport: transport, timeout: timeout)
        lock.withLock {
            if cached?.token != fresh.token {
                if let cached { previous = cached.token }
                cached = (fresh.token, fresh.expiresAt)
            }
        }
    }

    /// Exchanges a new assertion for an access token at Google's token endpoint.
    func exchange(now: Date, transport: HTTPTransport, timeout: Double) throws -> SharedCredential {
        let signed: String
        do { signed = try assertion(now: now) } catch {
            throw AdapterError("FCM token exchange: could not sign the assertion with the service account key")
        }
        let form = "grant_type=" + Self.formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer")
            + "&assertion=" + Self.formEncode(signed)
        let request = HTTPRequest(method: "POST", url: tokenURI,
                                  headers: [("content-type", "application/x-www-form-urlencoded"),
                                            ("accept", "application/json")],
                                  body: Array(form.utf8), timeout: timeout, version: .http2)
        let response: HTTPResponse
        switch transport.perform(request) {
        case .failure(let error):
            throw AdapterError("FCM token exchange with \(tokenURI) failed: \(error.asOutcome.message ?? "transport error")")
        case .success(let r): response = r
        }
        let body = try? JSONValue.parse(Data(response.body))
        guard response.status == 200 else {
            var reason = ""
            if let error = body?["error"]?.stringValue { reason = AdapterSupport.readable(error, maxUTF8Bytes: 100) }
            if let text = body?["error_description"]?.stringValue {
                reason += (reason.isEmpty ? "" : ": ") + AdapterSupport.readable(text, maxUTF8Bytes: 300)
            }
            if reason.isEmpty { reason = "no OAuth error in the answer" }
            throw AdapterError("FCM token exchange failed (\(response.status)): \(reason)")
        }
        guard let token = body?["access_token"]?.stringValue, !token.isEmpty else {
            throw AdapterError("FCM token exchange answered 200 without an access_token")
        }
        // It goes into an Authorization header: visible ASCII only (RFC 6750's b64token alphabet is a
        // subset). A token with a line break or a control character would fail every request locally,
        // and being cached, for its whole lifetime.
        guard token.utf8.count <= 4096, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw AdapterError("FCM token exchange answered an access_token that cannot go into a header")
        }
        // Google answers 3599; a lifetime that is not a number between a minute and an hour is ignored
        // (an answer that claimed a day would keep a revoked token a day).
        let lifetime = body?["expires_in"]?.doubleValue.flatMap { $0.isFinite && (60...3600).contains($0) ? $0 : nil } ?? 3600
        lock.withLock { exchanges += 1 }
        return SharedCredential(token: token, issuedAt: now, expiresAt: now.addingTimeInterval(lifetime))
    }

    /// application/x-www-form-urlencoded value encoding: unreserved characters kept, the rest %XX.
    static func formEncode(_ s: String) -> String { PercentEncoding.encode(s) }

    /// An error about the service account file's contents, naming FCM_SERVICE_ACCOUNT_FILE.
    static func fileError(_ detail: String) -> AdapterError {
        AdapterError(setting: "FCM_SERVICE_ACCOUNT_FILE", subject: "FCM service account file", detail: detail)
    }
}
