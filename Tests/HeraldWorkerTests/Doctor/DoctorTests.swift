import Foundation
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// `herald doctor` against a real deployment: a real PostgreSQL and the fake providers on loopback TLS.
/// A good setup passes every check; each kind of fault fails the check that names it, exits 1, and
/// prints no secret.
@Suite struct DoctorTests {
    static var online: DoctorOptions {
        var options = DoctorOptions()
        options.online = true
        return options
    }

    /// Every check of a good deployment passes, with each setting's source and no secret in sight.
    @Test func aGoodSetupPassesEveryCheck() throws {
        let lab = try DoctorLab()
        defer { lab.cleanup() }
        let report = Doctor.run(environment: try lab.environment(), options: Self.online)
        #expect(report.exitCode == .ok, "\(report.text)")
        #expect(report.checks.allSatisfy { $0.status == .ok }, "\(report.text)")
        let detail = { (name: String) in report.checks.first { $0.name == name }?.detail ?? "(no \(name))" }
        #expect(detail("settings.DATABASE_URL").hasPrefix("set (from file "), "\(report.text)")
        #expect(detail("settings.TWILIO_AUTH_TOKEN").hasPrefix("set (from file "))
        #expect(detail("settings.SENDGRID_API_KEY") == "set (from environment)")
        #expect(detail("settings.APNS_ENV").hasPrefix("sandbox (from config file "))
        #expect(detail("database.schema") == "migration \(SchemaVersion.required) of \(SchemaVersion.required)")
        for name in ["settings.pass", "tls.ca_file", "database.connect", "database.grants", "database.search_path",
                     "database.listen", "clock.skew",
                     "provider.apns", "provider.fcm", "provider.twilio", "provider.twilio.online", "provider.sendgrid",
                     "provider.sendgrid.online", "provider.whatsapp", "provider.whatsapp.online"] {
            #expect(report.checks.contains { $0.name == name }, "\(name) is missing from:\n\(report.text)")
        }
        #expect(lab.fcm.tokenExchanges == 1, "FCM's token endpoint mints the doctor's token")
        #expect(lab.twilio.accepted.isEmpty && lab.sendgrid.sent.isEmpty && lab.whatsapp.sent.isEmpty, "nothing was sent")
        Self.expectNoSecret(lab, in: report)
    }

    /// One fault of a deployment: what it changes, and the check that must fail naming it.
    struct Fault: Sendable, CustomStringConvertible {
        var description: String
        /// The check that fails, and words its detail holds.
        var check: String
        var words: String
        /// Settings to change (nil removes one); may script a fake or prepare a database.
        var change: @Sendable (DoctorLab) throws -> [String: String?]
    }

    static let faults: [Fault] = [
        Fault(description: "a missing .p8", check: "provider.apns", words: "APNS_KEY_FILE") { _ in
            ["APNS_KEY_FILE": "/nonexistent/AuthKey_ABC123DEFG.p8"]
        },
        Fault(description: "an unparseable .p8", check: "provider.apns", words: "not a valid EC P-256 private key") { lab in
            ["APNS_KEY_FILE": try lab.file(TestKeys.truncatedAPNsKeyPEM(), name: "bad.p8")]
        },
        Fault(description: "an FCM service account whose token endpoint refuses", check: "provider.fcm", words: "invalid_grant") { lab in
            lab.fcm.scriptTokenEndpoint(.json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#))
            return [:]
        },
        Fault(description: "a malformed Twilio account SID", check: "provider.twilio", words: "TWILIO_ACCOUNT_SID is not AC") { _ in
            ["TWILIO_ACCOUNT_SID": "AC123"]
        },
        Fault(description: "a Twilio auth token Twilio refuses", check: "provider.twilio.online", words: "401") { _ in
            ["TWILIO_AUTH_TOKEN_FILE": nil, "TWILIO_AUTH_TOKEN": DoctorLab.hex(32)]
        },
        Fault(description: "a SendGrid key without SG.", check: "provider.sendgrid", words: "does not start with SG.") { _ in
            ["SENDGRID_API_KEY": "xk-" + DoctorLab.base64URL(40)]
        },
        Fault(description: "a database that cannot be reached", check: "database.connect", words: "cannot reach the database") { lab in
            ["DATABASE_URL_FILE": try lab.file("postgresql://postgres:\(DoctorLab.databasePassword)@127.0.0.1:\(RefusingPort.port)/herald",
                                                name: "unreachable-url")]
        },
        Fault(description: "a schema behind the release", check: "database.schema", words: "herald migrate") { lab in
            ["DATABASE_URL_FILE": try lab.file(DoctorLab.withPassword(try lab.databaseBehind().url), name: "behind-url")]
        },
        Fault(description: "a role lacking a grant", check: "database.grants", words: "update on notification_queue") { lab in
            let role = try lab.role("bypassrls", revoking: "update on notification_queue")
            return ["DATABASE_URL_FILE": try lab.file(DoctorLab.withPassword(lab.database.url, user: role), name: "role-url")]
        },
        Fault(description: "a role that row-level security filters", check: "database.grants", words: "BYPASSRLS") { lab in
            let role = try lab.role("nobypassrls", revoking: nil)
            return ["DATABASE_URL_FILE": try lab.file(DoctorLab.withPassword(lab.database.url, user: role), name: "rls-url")]
        },
        Fault(description: "a missing CA file", check: "tls.ca_file", words: "no such file") { _ in
            ["HERALD_CA_FILE": "/nonexistent/herald-ca.pem"]
        },
        Fault(description: "a setting with both X and X_FILE", check: "settings.TWILIO_AUTH_TOKEN",
              words: "both TWILIO_AUTH_TOKEN and TWILIO_AUTH_TOKEN_FILE") { _ in
            ["TWILIO_AUTH_TOKEN": DoctorLab.twilioToken]
        },
    ]

    /// Each fault fails its check and the doctor (exit 1), the verdict names the first failure, and no
    /// secret is printed. One lab serves every fault, each checked from the good setup.
    @Test func eachFaultFailsTheCheckThatNamesItWithoutPrintingASecret() throws {
        let lab = try DoctorLab()
        defer { lab.cleanup() }
        let good = try lab.environment()
        for fault in Self.faults {
            var environment = good
            for (key, value) in try fault.change(lab) { environment[key] = value }
            let report = Doctor.run(environment: environment, options: Self.online)
            lab.fcm.scriptTokenEndpoint(nil)
            #expect(report.exitCode == .configuration, "\(fault): \(report.text)")
            let failed = report.checks.first { $0.name == fault.check }
            #expect(failed?.status == .fail, "\(fault): \(fault.check) should fail:\n\(report.text)")
            #expect(failed?.detail.contains(fault.words) == true, "\(fault): \(failed?.detail ?? "")")
            let first = try #require(report.firstFailure, "\(fault)")
            #expect(report.verdict.contains("the first: \(first.name): "), "\(fault): \(report.verdict)")
            Self.expectNoSecret(lab, in: report)
        }
    }

    /// A database herald never migrated (no `schema_migrations`, none of its tables) fails the doctor:
    /// `database.schema` names `herald migrate`, and `database.grants` reports the tables a pass touches
    /// as missing rather than as granted.
    @Test func aDatabaseHeraldNeverMigratedFailsNamingMigrate() throws {
        let lab = try DoctorLab()
        defer { lab.cleanup() }
        let bare = try TestDatabase.create(migrationsDirectory: URL(fileURLWithPath: "/nonexistent/herald-no-migrations"))
        lab.adopt(bare)
        let db = try bare.connect()
        try db.execute("drop table schema_migrations")
        db.close()
        var environment = try lab.environment()
        environment["DATABASE_URL_FILE"] = try lab.file(DoctorLab.withPassword(bare.url), name: "bare-url")
        let report = Doctor.run(environment: environment, options: DoctorOptions())
        #expect(report.exitCode == .configuration, "\(report.text)")
        let schema = try #require(report.checks.first { $0.name == "database.schema" }, "\(report.text)")
        #expect(schema.status == .fail && schema.detail.contains("herald migrate"), "\(schema)")
        let grants = try #require(report.checks.first { $0.name == "database.grants" }, "\(report.text)")
        #expect(grants.status == .fail, "\(grants)")
        #expect(grants.detail.contains("finds no table notification_queue") && !grants.detail.contains("may read and write"), "\(grants)")
        #expect(report.firstFailure?.name == "database.schema", "\(report.verdict)")
    }

    /// Behind a transaction pooler a notification never reaches the listener: a warning, not a failure.
    @Test(.enabled(if: PgBouncer.binary != nil, "needs pgbouncer (scripts/deps.sh installs it)"))
    func listenThroughATransactionPoolerIsAWarning() throws {
        try withTestDatabase { tdb in
            let bouncer = try PgBouncer(database: try TestDatabase.serverURL(), poolSize: 2)
            defer { bouncer.stop() }
            var options = DoctorOptions()
            options.listenWait = 1
            let report = Doctor.run(environment: ["DATABASE_URL": bouncer.url(tdb.url)], options: options)
            let listen = report.checks.first { $0.name == "database.listen" }
            #expect(listen?.status == .warn, "\(report.text)")
            #expect(listen?.detail.contains("LISTEN is not possible") == true)
            #expect(report.exitCode == .ok, "a warning does not fail the doctor:\n\(report.text)")
        }
    }

    /// A role other than the owner that may create in public, where herald's functions live and which
    /// their bodies name, is a warning naming the role and the schema; without that grant, none.
    @Test func aRoleThatMayCreateWhereHeraldsFunctionsLookIsAWarning() throws {
        try SecurityTests.supabase { tdb, db in
            var options = DoctorOptions()
            options.listenWait = 1
            let check = { () -> DoctorCheck? in
                Doctor.run(environment: ["DATABASE_URL": tdb.url], options: options).checks.first { $0.name == "database.search_path" }
            }
            let before = check()
            #expect(before?.status == .ok, "\(before?.detail ?? "no database.search_path check")")
            #expect(before?.detail.contains("pg_catalog") == true && before?.detail.contains("public") == true)
            try db.execute("grant create on schema public to authenticated")
            let after = check()
            #expect(after?.status == .warn, "\(after?.detail ?? "no database.search_path check")")
            #expect(after?.detail.contains("authenticated may create in schema public") == true, "\(after?.detail ?? "")")
            #expect(after?.detail.contains("anon") == false && after?.detail.contains("service_role") == false)
        }
    }

    static func expectNoSecret(_ lab: DoctorLab, in report: DoctorReport) {
        for secret in lab.secrets {
            for (what, text) in [("text", report.text), ("json", report.jsonText), ("verdict", report.verdict)] {
                #expect(!text.contains(secret), "a secret is in the \(what):\n\(text)")
            }
        }
    }
}

extension DoctorLab {
    /// A database migrated with every migration but the newest.
    func databaseBehind() throws -> TestDB {
        let behind = try SchemaVersionTests.databaseBehind()
        adopt(behind)
        return behind
    }

    /// A login role granted everything a pass touches in the lab's database (`options`: `bypassrls` or
    /// not), less `revoking`; dropped with the lab.
    func role(_ options: String, revoking: String?) throws -> String {
        let name = "herald_doctor_" + DoctorLab.hex(10)
        let db = try database.connect()
        defer { db.close() }
        try db.executeScript("""
            create role \(name) login \(options);
            grant select, insert, update, delete on all tables in schema public to \(name);
            grant execute on all functions in schema public to \(name);
            """ + (revoking.map { "revoke \($0) from \(name);" } ?? ""))
        adopt(role: name)
        return name
    }
}
