import Foundation
import HeraldChannels
import HeraldPostgres
import Logging

/// The providers' short-lived credentials, shared by every pass through herald's database
/// (`herald_provider_credentials`, which no app role may read). A pass that finds none usable takes an
/// advisory lock on the key, so that of passes racing one mints and the others take its token. The
/// store has a connection of its own (the pass's may be recording on another thread). A store that
/// cannot be used — the table missing or unreadable, the database gone — says so once, at warning level,
/// and the pass goes on with its own credentials, as a pass without a store does: it never stops
/// delivery.
///
///     let credentials = SharedCredentials(url: databaseURL, passId: id, logger: logger)
///     routes.shareCredentials(through: credentials)
///     defer { credentials.close() }
final class SharedCredentials: CredentialStore, @unchecked Sendable {  // every var under `lock`
    /// Advisory lock class of the keys ("cred").
    static let lockClass: Int32 = 0x6372_6564

    private let url: String
    private let applicationName: String
    private let logger: Logger
    private let lock = NSLock()
    private var db: PGConnection?
    private var broken = false

    init(url: String, passId: String, logger: Logger) {
        self.url = url
        self.applicationName = "herald \(passId) credentials"
        self.logger = logger
    }

    func credential(_ key: String, now: Date, usable: (SharedCredential) -> Bool,
                    mint: () throws -> SharedCredential) throws -> SharedCredential? {
        try lock.withLock {
            guard !broken else { return nil }
            var minted: SharedCredential?
            var mintError: (any Error)?
            do {
                let db = try connection()
                return try db.transaction { db in
                    try db.execute("select pg_advisory_xact_lock(\(Self.lockClass), hashtext(\(key)))")
                    if let stored = try Self.read(key, db: db), usable(stored) { return stored }
                    do { minted = try mint() } catch { mintError = error; throw error }
                    try Self.write(key, minted!, db: db)
                    return minted!
                }
            } catch {
                if let mintError { throw mintError }  // the provider's answer: the caller reports it
                fail(error)
                return minted  // minted but not stored: this pass uses it alone
            }
        }
    }

    func forget(_ key: String, token: String) {
        lock.withLock {
            guard !broken else { return }
            do {
                _ = try connection().execute("""
                    delete from herald_provider_credentials where key = \(key) and token = \(token)
                    """)
            } catch {
                fail(error)
            }
        }
    }

    func close() {
        lock.withLock {
            db?.close()
            db = nil
        }
    }

    private func connection() throws -> PGConnection {
        if let db { return db }
        let opened = try Runner.connect(url, applicationName: applicationName)
        db = opened
        return opened
    }

    /// Stops using the store for the rest of the pass, with one warning.
    private func fail(_ error: any Error) {
        broken = true
        db?.close()
        db = nil
        logger.warning("cannot share provider credentials through the database; this pass uses its own", metadata: [
            "error": .string("\(error)"), "hint": "run `herald migrate`, and grant herald's role select, insert, update and delete on herald_provider_credentials",
        ])
    }

    static func read(_ key: String, db: PGConnection) throws -> SharedCredential? {
        guard let row = try db.query("""
            select token, issued_at, expires_at from herald_provider_credentials where key = \(key)
            """).first, let token = row["token"].string, let issued = row["issued_at"].date,
            let expires = row["expires_at"].date else { return nil }
        return SharedCredential(token: token, issuedAt: issued, expiresAt: expires)
    }

    static func write(_ key: String, _ credential: SharedCredential, db: PGConnection) throws {
        try db.execute("""
            insert into herald_provider_credentials (key, token, issued_at, expires_at)
            values (\(key), \(credential.token), \(credential.issuedAt), \(credential.expiresAt))
            on conflict (key) do update
               set token = excluded.token, issued_at = excluded.issued_at, expires_at = excluded.expires_at,
                   updated_at = now()
            """)
    }
}

extension ChannelRoutes {
    /// Shares every configured provider's credentials through `store`.
    func shareCredentials(through store: any CredentialStore) {
        for route in routes.values {
            guard case .providers(let adapters, _) = route else { continue }
            for adapter in adapters.values { adapter.shareCredentials(through: store) }
        }
    }
}
