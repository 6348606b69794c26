import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Bad rows fail alone with a readable last_error; bad configuration stops the run before any row is
/// touched; an unreachable database is exit code 2.
@Suite struct BadInputTests {
    @Test func badRowsFailAloneAndThePassGoesOn() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            // PostgreSQL accepts the POSIX zone 'UTC+3', which is not an IANA zone herald can apply.
            // A zone written before migration 031, which now refuses it: the row is there, and must not stop the pass.
            try f.db.execute("alter table user_profiles disable trigger user_profiles_timezone_check")
            let oddZone = try f.profile(timezone: "UTC+3")
            try f.db.execute("alter table user_profiles enable trigger user_profiles_timezone_check")
            let good = try f.profile()
            let badZone = try f.enqueue(to: oddZone, at: seedInstant)
            let badPayload = try f.enqueue(to: good, payload: #"["not", "an", "object"]"#, at: seedInstant)
            let badChannel = try f.enqueue(to: good, channel: "pigeon", at: seedInstant)
            let noProfile = try f.enqueue(to: UUID(), at: seedInstant)
            let fine = try f.enqueue(to: good, kind: "reminder", at: seedInstant)

            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .ok)
            #expect(try f.row(fine)["status"].string == "sent")
            for (id, words) in [(badZone, "UTC+3"), (badPayload, "payload"), (noProfile, "profile"), (badChannel, "pigeon")] {
                let row = try f.row(id)
                #expect(row["status"].string == "failed", "\(words)")
                #expect(row["permanent"].bool == true, "\(words)")
                #expect((row["last_error"].string ?? "").contains(words), "last_error should mention \(words): \(row["last_error"].string ?? "nil")")
            }
            #expect(summary.unroutable.isEmpty)
            #expect(summary.failed == 4)
            #expect(summary.sent == 1)
        }
    }

    @Test func knownChannelWithoutAdapterStaysPendingAndIsReported() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(sms: true), channel: "sms", at: seedInstant)
            let (s, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .ok)
            #expect(s.unroutable["sms"] == 1)
            let row = try f.row(id)
            #expect(row["status"].string == "pending")
            #expect(row["attempts"].int == 0)
        }
    }

    @Test func missingSecretStopsBeforeAnyRowIsTouched() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let (summary, code) = Worker(url: tdb.url, settings: ["WEBHOOK_URL": "https://hooks.example.com/x"]).run(now: seedInstant)
            #expect(code == .configuration)
            #expect((summary.error ?? "").contains("WEBHOOK_SECRET"))
            let row = try f.row(id)
            #expect(row["status"].string == "pending")
            #expect(row["attempts"].int == 0)
            #expect(try f.count("select count(*)::int from herald_passes") == 0)
        }
    }

    @Test func badSettingsNameTheVariable() throws {
        try withTestDatabase { (tdb) throws in
            let cases: [([String: String], String)] = [
                (["WEBHOOK_URL": "ftp://x", "WEBHOOK_SECRET": WebhookDeliveryTests.secret], "WEBHOOK_URL"),
                (["WEBHOOK_URL": "https://x.example", "WEBHOOK_SECRET": "whsec_!!!"], "WEBHOOK_SECRET"),
                (["WEBHOOK_URL": "https://x.example", "WEBHOOK_SECRET_FILE": "/nonexistent/secret"], "WEBHOOK_SECRET_FILE"),
                (["HERALD_CA_FILE": "/nonexistent/ca.pem"], "HERALD_CA_FILE"),
                (["HERALD_CHANNEL_PUSH": "carrier-pigeon"], "HERALD_CHANNEL_PUSH"),
                (["HERALD_CONNECTIONS_PER_HOST": "0"], "HERALD_CONNECTIONS_PER_HOST"),
                (["HERALD_CONNECTIONS_PER_HOST": "many"], "HERALD_CONNECTIONS_PER_HOST"),
                (["HERALD_RETENTION_DAYS": "0"], "HERALD_RETENTION_DAYS"),
                (["HERALD_AUDIT_RETENTION_DAYS": "36501"], "HERALD_AUDIT_RETENTION_DAYS"),
            ]
            for (settings, variable) in cases {
                let (summary, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant)
                #expect(code == .configuration, "\(variable)")
                #expect((summary.error ?? "").contains(variable), "error should name \(variable): \(summary.error ?? "nil")")
            }
        }
    }

    /// A webhook timeout of 0 (which libcurl would take as 1 ms), or of more than five minutes, is
    /// refused naming the variable.
    @Test(arguments: ["0", "-3", "301", "100000000000000000"])
    func aWebhookTimeoutOutsideItsRangeIsAConfigurationError(_ seconds: String) throws {
        try withTestDatabase { (tdb) throws in
            let (summary, code) = Worker(url: tdb.url, settings: [
                "WEBHOOK_URL": "https://x.example", "WEBHOOK_SECRET": WebhookDeliveryTests.secret,
                "WEBHOOK_TIMEOUT_SECONDS": seconds,
            ]).run(now: seedInstant)
            #expect(code == .configuration)
            #expect(summary.error?.contains("WEBHOOK_TIMEOUT_SECONDS must be between 1 and 300") == true, "\(summary.error ?? "")")
        }
    }

    /// Another driver's URL is a configuration slip: exit 1 before connecting, from a pass and from
    /// any other command, with the URL's shape but not its password in the summary and on stderr.
    @Test(arguments: ["postgresql+psycopg2://herald:s3cret-pw@127.0.0.1:1/herald",
                      "jdbc:postgresql://herald:s3cret-pw@127.0.0.1:1/herald",
                      "host=127.0.0.1 port=1 password=s3cret pw"])
    func aDatabaseURLLibpqCannotReadIsAConfigurationError(_ url: String) throws {
        let (summary, code) = Worker(url: url).run()
        #expect(code == .configuration)
        let message = summary.error ?? ""
        #expect(message.contains("DATABASE_URL"), "\(message)")
        for secret in ["s3cret", "pw@"] { #expect(!message.contains(secret), "\(message)") }
        #expect(!summary.json.jsonText.contains("s3cret"))

        let err = Pipe()
        let p = try HeraldBinary.start(["status"], env: ["DATABASE_URL": url], stderr: err)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 1, "\(stderr)")
        #expect(stderr.contains("DATABASE_URL"), "\(stderr)")
        #expect(!stderr.contains("s3cret"), "\(stderr)")
    }

    @Test func unreachableDatabaseIsExitCodeTwo() throws {
        let (summary, code) = Worker(url: "postgresql://herald:s3cret-pw@127.0.0.1:1/none?connect_timeout=2").run()
        #expect(code == .database)
        let message = summary.error ?? ""
        #expect(message.contains("database"))
        #expect(!message.contains("s3cret-pw"), "the password leaked into the message")
    }

    @Test func cliRefusesBadFlagsWithExitCodeOne() throws {
        for args in [["run", "--batch-size", "0"], ["run", "--now", "yesterday"], ["run", "--only", "gossip"],
                     ["run", "--frobnicate"]] {
            let p = Process()
            p.executableURL = HeraldBinary.url
            p.arguments = args
            p.environment = ["DATABASE_URL": "postgresql://127.0.0.1:1/none"]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(p.terminationStatus == 1, "\(args): \(text)")
            #expect(!text.isEmpty)
        }
    }
}
