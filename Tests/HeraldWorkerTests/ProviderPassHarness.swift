import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// The harness of the provider pass suites: end-to-end passes against a real PostgreSQL and the fake
/// providers over real TLS: APNs (HTTP/2, ES256 provider tokens), FCM (OAuth token exchange), Expo
/// (tickets and receipts), Twilio, SendGrid and SMTP (STARTTLS and AUTH).
enum ProviderPass {

    /// The certificates and temporary files of one test; `cleanup()` removes them.
    final class Lab: @unchecked Sendable {
        let certificates: TestCertificates
        private var files: [String] = []
        private let lock = NSLock()

        init() throws { certificates = try TestCertificates.make() }

        /// Writes `text` to a new temporary file (mode 0600) and returns its path.
        func file(_ text: String, name: String = "secret") throws -> String {
            let path = FileManager.default.temporaryDirectory
                .appendingPathComponent("herald-provtests-\(name)-\(UUID().uuidString)").path
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                                 attributes: [.posixPermissions: 0o600]) else {
                throw ConfigError("could not write \(path)")
            }
            lock.withLock { files.append(path) }
            return path
        }

        func cleanup() {
            for f in lock.withLock({ files }) { try? FileManager.default.removeItem(atPath: f) }
            certificates.remove()
        }

        var base: [String: String] { ["HERALD_CA_FILE": certificates.caFile] }

        func apns(_ fake: FakeAPNs) throws -> [String: String] {
            ["APNS_KEY_FILE": try file(fake.keyPEM, name: "apns.p8"), "APNS_KEY_ID": fake.keyId,
             "APNS_TEAM_ID": fake.teamId, "APNS_TOPIC": fake.topic, "APNS_URL": fake.baseURL]
        }

        func fcm(_ fake: FakeFCM) throws -> [String: String] {
            ["FCM_SERVICE_ACCOUNT_FILE": try file(fake.serviceAccountJSON, name: "fcm.json"), "FCM_URL": fake.baseURL]
        }

        func expo(_ fake: FakeExpo, accessToken: String? = nil) -> [String: String] {
            var s = ["HERALD_EXPO": "on", "EXPO_URL": fake.baseURL]
            if let accessToken { s["EXPO_ACCESS_TOKEN"] = accessToken }
            return s
        }
    }

    /// One pass in-process, as `herald run` would do it, with the rate limits out of the way (these tests
    /// count sends, not pacing) and no weather fetches.
    static func pass(_ url: String, _ settings: [String: String], now: Date, batchSize: Int = 50,
                     drain: Bool = false, phases: [Phase] = Phase.allCases,
                     logger: Logger? = nil) -> (Summary, ExitCode) {
        var options = PassOptions()
        options.now = now
        options.batchSize = batchSize
        options.maxBatches = drain ? nil : 1
        options.drain = drain
        options.phases = phases
        options.weatherURL = nil
        do {
            let db = try PGConnection(url, applicationName: "herald-tests")
            defer { db.close() }
            try db.execute("update notification_types set daily_cap = 1000, min_spacing_seconds = null, per_minute_cap = 1000")
        } catch {
            Issue.record("could not lift the rate limits: \(error)")
        }
        var s = settings
        s["DATABASE_URL"] = url
        var log = logger ?? Logger(label: "herald-provider-test")
        if logger == nil { log.logLevel = .critical }
        return Runner(settings: Settings(s), options: options, logger: log).run()
    }

    /// Now, to the second: the fakes check provider tokens against the real clock.
    static func now() -> Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }

    /// An APNs-style device token: 64 hex digits.
    static func apnsToken() -> String {
        (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
    }

    static func deliveries(_ db: PGConnection, _ id: UUID) throws -> [PGRow] {
        Array(try db.query("""
            select provider, destination, device_token_id, outcome, http_status, provider_error_code,
                   provider_message_id, error, attempt
              from notification_deliveries where queue_id = \(id) order by id
            """))
    }

    static func token(_ db: PGConnection, _ id: UUID) throws -> PGRow {
        try db.query("select is_active, deactivated_reason, deactivated_at from device_tokens where id = \(id)").first!
    }

    static func paths(_ requests: [FakeRequest], prefix: String = "/3/device/") -> [String] {
        requests.map(\.path).filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }
}

/// A provider pass suite reaches the harness as its own (`Lab()`, `Self.pass(…)`), so its tests read the
/// same whichever suite holds them; other suites call `ProviderPass` directly.
protocol ProviderPassSuite {}

extension ProviderPassSuite {
    typealias Lab = ProviderPass.Lab

    static func pass(_ url: String, _ settings: [String: String], now: Date, batchSize: Int = 50,
                     drain: Bool = false, phases: [Phase] = Phase.allCases,
                     logger: Logger? = nil) -> (Summary, ExitCode) {
        ProviderPass.pass(url, settings, now: now, batchSize: batchSize, drain: drain, phases: phases, logger: logger)
    }

    static func now() -> Date { ProviderPass.now() }

    static func apnsToken() -> String { ProviderPass.apnsToken() }

    static func deliveries(_ db: PGConnection, _ id: UUID) throws -> [PGRow] { try ProviderPass.deliveries(db, id) }

    static func token(_ db: PGConnection, _ id: UUID) throws -> PGRow { try ProviderPass.token(db, id) }

    static func paths(_ requests: [FakeRequest], prefix: String = "/3/device/") -> [String] {
        ProviderPass.paths(requests, prefix: prefix)
    }
}
