import Foundation

/// A provider's short-lived bearer credential: the APNs provider token, the FCM access token.
public struct SharedCredential: Sendable, Equatable {
    public var token: String
    public var issuedAt: Date
    public var expiresAt: Date

    public init(token: String, issuedAt: Date, expiresAt: Date) {
        self.token = token
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// Where a provider's credential is shared by every pass, on every host and shard, so that it is minted
/// once per its lifetime however many passes run: Apple answers TooManyProviderTokenUpdates to a team
/// whose provider token changes more often than every 20 minutes, and Google's token endpoint need not
/// be asked once a pass. The worker keeps them in its database; an adapter without a store keeps its
/// own, in the process.
///
///     let jwt = try store.credential("apns:TEAM:KEY", now: now, usable: { $0.issuedAt > now - 50 * 60 },
///                                    mint: { try signNewToken(now) })?.token
public protocol CredentialStore: AnyObject, Sendable {
    /// The shared credential for `key`: the stored one while `usable` says so, else the one `mint`
    /// makes, stored for the other passes (one pass mints at a time; the others wait for it and take
    /// it). Nil when the store cannot be used: the caller mints for itself. An error `mint` throws is
    /// rethrown.
    func credential(_ key: String, now: Date, usable: (SharedCredential) -> Bool,
                    mint: () throws -> SharedCredential) throws -> SharedCredential?

    /// Forgets `token` for `key` (the provider refused it), unless another pass already replaced it.
    func forget(_ key: String, token: String)
}
