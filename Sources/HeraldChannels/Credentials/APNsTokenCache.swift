import Crypto
import Foundation
import HeraldCore

/// The APNs provider token (an ES256 JWT), minted once and shared by every request until it is 50
/// minutes old. Apple rejects a token whose `iat` is older than an hour (403 ExpiredProviderToken) and
/// answers 429 TooManyProviderTokenUpdates when a connection sees a new token more often than every 20
/// minutes, so a token per request is wrong; 50 minutes sits inside Apple's 20–60 minute window (the
/// same choice as sideshow/apns2; APNSwift uses 55).
///
/// Thread-safe: one cache is shared by every copy of the adapter; `now` is always passed in (the
/// envelope's or the classification's time), never read from the clock here. With a `CredentialStore`
/// the token is shared by every pass (`share(through:)`), so passes on many hosts mint one together.
///
///     let jwt = try cache.token(now: envelope.now)   // the same string for 50 minutes
public final class APNsTokenCache: @unchecked Sendable {
    /// A token is reused while younger than this.
    public static let lifetime: TimeInterval = 50 * 60

    public let keyId: String
    public let teamId: String
    private let key: P256.Signing.PrivateKey
    private let lock = NSLock()
    private var current: (jwt: String, issuedAt: Date)?
    /// The token before `current` (replaced or invalidated): answers to requests that carried it may
    /// still arrive.
    private var previous: String?
    private var minted = 0
    /// Where the token is shared with the other passes (the worker's database); nil: this process only.
    private var sharedStore: (any CredentialStore)?

    /// `keyPEM`: the `.p8` file's text (PEM, PKCS#8 EC P-256 private key).
    public init(keyPEM: String, keyId: String, teamId: String) throws {
        let trimmed = keyPEM.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw AdapterError("APNS_KEY_FILE is empty: expected the .p8 auth key (PEM, PKCS#8 EC P-256)")
        }
        guard trimmed.contains("-----BEGIN") else {
            throw AdapterError("APNS_KEY_FILE is not PEM: expected the .p8 auth key starting with a BEGIN PRIVATE KEY line")
        }
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: trimmed)
        } catch {
            // The key itself is never part of the message.
            throw AdapterError("APNS_KEY_FILE is not a valid EC P-256 private key (.p8, PEM PKCS#8); download the key again from the Apple developer account")
        }
        // A value from a file or a Kubernetes secret often ends in a newline, which would go into the JWT.
        let id = keyId.trimmingCharacters(in: .whitespacesAndNewlines)
        let team = teamId.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !id.isEmpty else { throw AdapterError("APNS_KEY_ID is empty: set it to the 10-character Key ID of the .p8 key") }
        guard !team.isEmpty else { throw AdapterError("APNS_TEAM_ID is empty: set it to the 10-character Team ID") }
        self.keyId = id
        self.teamId = team
    }

    /// Shares the token through `store` from now on: a pass takes the one another pass minted while it
    /// is young enough, and mints one for all when it is not.
    public func share(through store: any CredentialStore) {
        lock.withLock { sharedStore = store }
    }

    /// The key this token is shared under: one token per team and key.
    public var storeKey: String { "apns:\(teamId):\(keyId)" }

    /// A token issued at `issuedAt` is sent at `now` while younger than `lifetime` (and not from the
    /// future by more than a minute, which would mean the clock moved back).
    static func isUsable(issuedAt: Date, now: Date) -> Bool {
        let age = now.timeIntervalSince(issuedAt)
        return age < lifetime && age > -60
    }

    /// The token to send at `now`: the cached one while it is usable, else the shared one (another
    /// pass's, or one minted now for all), else, when nothing can be shared, one of this process's own.
    public func token(now: Date) throws -> String {
        let (cached, store) = lock.withLock { (current.flatMap { Self.isUsable(issuedAt: $0.issuedAt, now: now) ? $0.jwt : nil }, sharedStore) }
        if let cached { return cached }
        if let store, let shared = try store.credential(storeKey, now: now, usable: { Self.isUsable(issuedAt: $0.issuedAt, now: now) },
                                                        mint: { try mint(now: now) }) {
            lock.withLock {
                if current?.jwt != shared.token {
                    if let current { previous = current.jwt }
                    current = (shared.token, shared.issuedAt)
                }
            }
            return shared.token
        }
        let fresh = try mint(now: now)
        lock.withLock {
            if let current { previous = current.jwt }
            current = (fresh.token, fresh.issuedAt)
        }
        return fresh.token
    }

    /// Signs a new token issued at `now`.
    private func mint(now: Date) throws -> SharedCredential {
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyId)]
        let claims: JSONValue = ["iss": .string(teamId), "iat": .number(now.timeIntervalSince1970.rounded(.down))]
        let jwt = try JWT.es256(header: header, claims: claims, key: key)
        lock.withLock { minted += 1 }
        return SharedCredential(token: jwt, issuedAt: now, expiresAt: now.addingTimeInterval(Self.lifetime))
    }

    /// Drops the cached token (after 403 ExpiredProviderToken): the next request mints a new one.
    public func invalidate() {
        let (dropped, store) = lock.withLock {
            let dropped = current?.jwt
            if let dropped { previous = dropped }
            current = nil
            return (dropped, sharedStore)
        }
        if let dropped { store?.forget(storeKey, token: dropped) }
    }

    /// Drops the cached token only if it is at least `minimumAge` old at `now`. An ExpiredProviderToken
    /// answer about a token minted minutes ago is about the one it replaced (a request still in flight)
    /// or this host's clock; minting again for each such answer would earn TooManyProviderTokenUpdates.
    public func invalidate(ifOlderThan minimumAge: TimeInterval, now: Date) {
        let (dropped, store) = lock.withLock { () -> (String?, (any CredentialStore)?) in
            guard let current, now.timeIntervalSince(current.issuedAt) >= minimumAge else { return (nil, nil) }
            previous = current.jwt
            self.current = nil
            return (current.jwt, sharedStore)
        }
        if let dropped { store?.forget(storeKey, token: dropped) }
    }

    /// The tokens requests may have carried: the current one and the one before it. An answer that
    /// echoes one of them must not carry it into `last_error`.
    public var recentTokens: [String] {
        lock.withLock { [current?.jwt, previous].compactMap { $0 } }
    }

    /// Tokens minted so far (tests and metrics).
    public var mintedCount: Int { lock.withLock { minted } }
}
