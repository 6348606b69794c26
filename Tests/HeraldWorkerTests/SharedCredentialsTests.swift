import Foundation
import HeraldChannels
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Logging
import Testing

/// Providers' short-lived credentials outlive a pass: the APNs provider token and the FCM access token
/// are kept in the database (no app role may read them), minted once for every pass, taken over by the
/// next, replaced once when the provider refuses one; a store that cannot be used falls back, with a
/// warning, to the pass's own and never stops delivery.
@Suite(.serialized) struct SharedCredentialsTests {
    /// One push row for a recipient with an APNs and an FCM token.
    static func enqueuePush(_ f: Fixtures, at: Date) throws {
        let user = try f.profile()
        try f.token(user, ProviderPass.apnsToken(), provider: "apns")
        try f.token(user, "fcm-" + UUID().uuidString, provider: "fcm")
        _ = try f.enqueue(to: user, channel: "push", at: at.addingTimeInterval(-60))
    }

    /// One delivery pass in the lab (APNs and FCM).
    static func pass(_ lab: ProviderLab, logger: Logger? = nil) -> (Summary, ExitCode) {
        ProviderPass.pass(lab.url, lab.settings, now: ProviderPass.now(), phases: [.deliver], logger: logger)
    }

    /// Five passes in a row, then two at once: one APNs provider token, one OAuth exchange, every row
    /// sent, and the credentials in the database.
    @Test func passesInARowAndAtOnceShareOneTokenOfEach() throws {
        try withProviderLab(.apns, .fcm) { rig in
            for _ in 0..<5 {
                try Self.enqueuePush(rig.f, at: Date())
                let (summary, code) = Self.pass(rig)
                #expect(code == .ok, "\(summary.error ?? "") \(summary.phaseErrors)")
                #expect(summary.sent == 1)
            }
            for _ in 0..<2 { try Self.enqueuePush(rig.f, at: Date()) }
            let results = Results()
            inParallel(2) { _ in
                let (s, code) = Self.pass(rig)
                results.add(s, code)
            }
            #expect(results.sent == 2)
            #expect(rig.apns.distinctJWTs == 1, "\(rig.apns.distinctJWTs) provider tokens")
            #expect(rig.fcm.tokenExchanges == 1, "\(rig.fcm.tokenExchanges) OAuth exchanges")
            let keys = try rig.f.db.query("select key from herald_provider_credentials order by key").compactMap { $0["key"].string }
            #expect(keys == ["apns:\(rig.apns.teamId):\(rig.apns.keyId)", "fcm:\(rig.fcm.clientEmail)"])
        }
    }

    /// Two passes that both find no usable token at the same moment mint one: the second waits for the
    /// first's and takes it (each pass has a store of its own, on a connection of its own).
    @Test func passesRacingForANewTokenMintOne() throws {
        try withTestDatabase { (tdb) throws in
            let mints = Counter()
            let tokens = Tokens()
            let now = Date()
            inParallel(2) { i in
                let store = SharedCredentials(url: tdb.url, passId: "racer-\(i)", logger: Logger(label: "test"))
                defer { store.close() }
                let shared = try? store.credential("apns:T:K", now: now, usable: { $0.expiresAt > now }) {
                    // The other pass has arrived: it waits for this one's lock on the key.
                    let waited = try Self.waitForAWaiter(tdb.url)
                    #expect(waited, "the other pass never waited for the lock")
                    return SharedCredential(token: "jwt-\(mints.increment())", issuedAt: now, expiresAt: now.addingTimeInterval(3000))
                }
                tokens.add(shared?.token)
            }
            #expect(mints.value == 1)
            #expect(tokens.all == ["jwt-1", "jwt-1"])
        }
    }

    /// Whether a session waits for a lock on a shared credential's key, polled until one does (false
    /// after 20 s).
    static func waitForAWaiter(_ url: String) throws -> Bool {
        let observer = try PGConnection(url, applicationName: "herald-tests")
        defer { observer.close() }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try observer.query("""
                select 1 from pg_locks
                 where locktype = 'advisory' and not granted and classid::int8 = \(Int(SharedCredentials.lockClass))
                """).count > 0 { return true }
            usleep(10_000)
        }
        return false
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func increment() -> Int { lock.withLock { n += 1; return n } }
        var value: Int { lock.withLock { n } }
    }

    final class Tokens: @unchecked Sendable {
        private let lock = NSLock()
        private var tokens: [String?] = []
        func add(_ token: String?) { lock.withLock { tokens.append(token) } }
        var all: [String?] { lock.withLock { tokens } }
    }

    /// The app's roles cannot read the credentials.
    @Test func anAppRoleReadsNoToken() throws {
        try withProviderLab(.apns, .fcm) { rig in
            try Self.enqueuePush(rig.f, at: Date())
            _ = Self.pass(rig)
            for role in ["authenticated", "anon"] {
                try rig.f.db.execute("set role \(unescaped: role)")
                #expect(throws: PGError.self) { try rig.f.db.query("select token from herald_provider_credentials") }
                try rig.f.db.execute("reset role")
            }
        }
    }

    /// A store that cannot be read (its table gone) falls back to the pass's own credentials, with one
    /// warning, and the pass still sends.
    @Test func aTableThatCannotBeReadFallsBackWithAWarning() throws {
        try withProviderLab(.apns, .fcm) { rig in
            try rig.f.db.execute("drop table herald_provider_credentials")
            try Self.enqueuePush(rig.f, at: Date())
            let log = CollectedLog()
            let logger = Logger(label: "herald") { JSONLogHandler(label: $0, level: .info, stream: log.stream) }
            let (summary, code) = Self.pass(rig, logger: logger)
            #expect(code == .ok)
            #expect(summary.sent == 1)
            let warnings = log.text.split(separator: "\n").filter { $0.contains("cannot share provider credentials") }
            #expect(warnings.count == 1, "\(log.text)")
            #expect(!log.text.contains(rig.apns.jwtsSeen.first ?? "no token seen"), "a token in the log")
        }
    }

    /// An ExpiredProviderToken answer about a shared token at least 20 minutes old replaces it, once: the
    /// pass mints a new one for all, and the next pass takes it.
    @Test func expiredProviderTokenReplacesTheSharedTokenOnce() throws {
        try withProviderLab(.apns, .fcm) { rig in
            let now = Date()
            let old = try APNsTokenCache(keyPEM: rig.apns.keyPEM, keyId: rig.apns.keyId, teamId: rig.apns.teamId)
            let stale = try old.token(now: now.addingTimeInterval(-30 * 60))
            try SharedCredentials.write("apns:\(rig.apns.teamId):\(rig.apns.keyId)", SharedCredential(
                token: stale, issuedAt: now.addingTimeInterval(-30 * 60), expiresAt: now.addingTimeInterval(20 * 60)), db: rig.f.db)
            let user = try rig.f.profile()
            let refused = ProviderPass.apnsToken()
            rig.apns.script(refused, .error(403, "ExpiredProviderToken"))
            try rig.f.token(user, refused, provider: "apns")
            for _ in 0..<3 { try rig.f.token(user, ProviderPass.apnsToken(), provider: "apns") }
            _ = try rig.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-60))

            _ = Self.pass(rig)
            try Self.enqueuePush(rig.f, at: Date())
            let (second, _) = Self.pass(rig)

            #expect(second.sent == 1)
            let stored = try #require(try SharedCredentials.read("apns:\(rig.apns.teamId):\(rig.apns.keyId)", db: rig.f.db))
            #expect(stored.token != stale, "the refused token was not replaced")
            #expect(Set(rig.apns.jwtsSeen).count == 2, "the shared token was replaced more than once")
            #expect(Set(rig.apns.jwtsSeen).contains(stored.token))
        }
    }
}
