import Foundation
import HeraldTestSupport
import Testing

/// scripts/smoke.sh, as CI runs it: it migrates the database it is given, enqueues one notification per
/// channel, runs one pass with the built herald, and exits 0 only if the pass exited 0 and every row
/// was sent; otherwise non-zero, saying which row and why.
@Suite(.enabled(if: Tools.psql, "needs psql (scripts/deps.sh installs PostgreSQL)"))
struct SmokeScriptTests {
    static let script = DeployTests.root.appendingPathComponent("scripts/smoke.sh").path
    static let channels = ["push", "sms", "whatsapp", "email", "webhook", "in_app"]

    /// Runs the script on `url` with `env` over the test's environment (less any channel routing of its
    /// own); returns its exit status and everything it printed.
    static func smoke(_ url: String, env: [String: String] = [:]) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [script, url]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_CHANNEL_") }
        environment["HERALD"] = HeraldBinary.url.path
        p.environment = environment.merging(env) { _, new in new }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// On a database with no schema yet: migrated, then one row per channel, all sent by one pass.
    @Test func theSmokeRunMigratesAndSendsOneRowPerChannel() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("herald-no-migrations-\(UUID())")
        try withTestDatabase(migrationsDirectory: empty) { tdb in
            let (status, out) = try Self.smoke(tdb.url)
            #expect(status == 0, "\(out)")
            #expect(out.contains("smoke: ok, 6 rows sent"), "\(out)")
            let db = try tdb.connect()
            defer { db.close() }
            let sent = try db.query("select channel from notification_queue where status = 'sent'").compactMap { $0["channel"].string }
            #expect(sent.sorted() == Self.channels.sorted())
            #expect(try db.query("select count(*)::int as n from schema_migrations").first?["n"].int ?? 0 > 0)
        }
    }

    /// A channel turned off leaves its row pending: the run fails and names it.
    @Test func aRowNotSentFailsTheSmokeRun() throws {
        try withTestDatabase { tdb in
            let (status, out) = try Self.smoke(tdb.url, env: ["HERALD_CHANNEL_SMS": "off"])
            #expect(status != 0)
            #expect(out.contains("the sms row"), "\(out)")
            #expect(out.contains("smoke: FAILED: 1 of 6 rows were not sent"), "\(out)")
        }
    }

    /// A pass that cannot start (here a setting it refuses) fails the run with its exit code.
    @Test func aPassThatExitsNonZeroFailsTheSmokeRun() throws {
        try withTestDatabase { tdb in
            let (status, out) = try Self.smoke(tdb.url, env: ["HERALD_LEASE_SECONDS": "0"])
            #expect(status != 0)
            #expect(out.contains("smoke: FAILED: herald run exited 1"), "\(out)")
        }
    }
}
