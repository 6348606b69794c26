import Foundation
import HeraldChannels
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldWorker

/// The doctor's rules without a database or a provider: how a report reads and exits, how the clock,
/// the schema and the keys' shapes are judged, and how settings are described.
@Suite struct DoctorReportTests {
    /// One line per check, status and name in columns; JSON an array of {check, status, detail}.
    @Test func aReportPrintsOneLinePerCheckAndJSONThatParses() throws {
        let report = DoctorReport([DoctorCheck("database.schema", .ok, "migration 33 of 33"),
                                   DoctorCheck("database.listen", .warn, "LISTEN is not possible")])
        #expect(report.text == "ok   database.schema  migration 33 of 33\nwarn database.listen  LISTEN is not possible")
        let json = try JSONValue.parse(report.jsonText)
        #expect(json == [["check": "database.schema", "status": "ok", "detail": "migration 33 of 33"],
                         ["check": "database.listen", "status": "warn", "detail": "LISTEN is not possible"]])
        #expect(try JSONValue.parse(DoctorReport([]).jsonText) == [])
    }

    /// Warnings do not fail: exit 0. A failure exits 1, and the verdict names the first one.
    @Test func warningsPassAndTheFirstFailureIsNamed() {
        let warned = DoctorReport([DoctorCheck("a", .ok, "x"), DoctorCheck("b", .warn, "y")])
        #expect(warned.exitCode == .ok)
        #expect(warned.verdict == "herald doctor: all 2 checks passed (1 warning)")
        let failed = DoctorReport([DoctorCheck("a", .ok, "x"), DoctorCheck("b", .fail, "first"), DoctorCheck("c", .fail, "second")])
        #expect(failed.exitCode == .configuration)
        #expect(failed.verdict == "herald doctor: 2 of 3 checks failed; the first: b: first")
    }

    /// A secret a library or a provider quoted into a detail is hidden.
    @Test func aSecretInADetailIsHidden() {
        let report = DoctorReport([DoctorCheck("provider.x", .fail, "refused key sk-live-1234 for you")], secrets: ["sk-live-1234", "ab"])
        #expect(report.checks[0].detail == "refused key *** for you")
    }

    /// A detail with line breaks and tabs (a libpq message, a provider's answer) stays on its check's
    /// line: one line per check, whatever the detail.
    @Test func aDetailWithLineBreaksStaysOnItsLine() {
        let report = DoctorReport([
            DoctorCheck("database.reachable", .fail, "connection to server failed\n\tIs the server running?\r\n"),
            DoctorCheck("provider.sendgrid", .warn, "SendGrid answered 503:\n\nmaintenance"),
        ])
        #expect(report.text.split(separator: "\n").count == 2)
        #expect(report.checks[0].detail == "connection to server failed Is the server running?")
        #expect(report.checks[1].detail == "SendGrid answered 503: maintenance")
        #expect(!report.verdict.contains("\n"))
    }
}

@Suite struct DoctorJudgementTests {
    /// Skew within 5 s is fine, within 60 s a warning, beyond that a failure; what the round trip
    /// cannot tell apart is not counted.
    @Test(arguments: [(0.0, 0.0, DoctorCheck.Status.ok), (4.9, 0.0, .ok), (10, 0, .warn), (-10, 0, .warn),
                      (120, 0, .fail), (-120, 0, .fail), (12, 16, .ok), (70, 30, .warn)])
    func clockSkewIsJudgedAgainstItsThresholds(skew: Double, roundTrip: Double, expected: DoctorCheck.Status) {
        let sent = Date(timeIntervalSince1970: 1_800_000_000)
        let received = sent.addingTimeInterval(roundTrip)
        let databaseNow = sent.addingTimeInterval(roundTrip / 2 + skew)
        let check = ClockCheck.check(databaseNow: databaseNow, sentAt: sent, receivedAt: received)
        #expect(check.status == expected, "\(check.detail)")
        #expect(check.detail.contains(skew >= 0 ? "ahead of" : "behind"))
    }

    /// Behind the release fails (a pass would refuse it); ahead of it, or unreadable, warns (a pass runs).
    @Test func theSchemaIsJudgedAgainstTheRelease() {
        #expect(DatabaseCheck.schema(33, required: 33) == DoctorCheck("database.schema", .ok, "migration 33 of 33"))
        #expect(DatabaseCheck.schema(32, required: 33).status == .fail)
        #expect(DatabaseCheck.schema(32, required: 33).detail.contains("herald migrate"))
        #expect(DatabaseCheck.schema(34, required: 33).status == .warn)
        #expect(DatabaseCheck.schema(nil, required: 33).status == .warn)
        // A role that row-level security keeps from schema_migrations' rows sees migration 0.
        #expect(DatabaseCheck.schema(0, required: 33, hidden: true).detail.contains("row-level security hides"))
    }

    /// Anyone but the owner who may create where herald's functions look names up is a warning naming
    /// each role and schema (four, then how many more) and the revoke that ends it; nobody is fine.
    @Test func aRoleThatMayCreateOnTheFunctionsPathIsJudgedAWarning() {
        let none = SearchPathCheck.check([], schemas: ["pg_catalog", "public"])
        #expect(none.status == .ok && none.detail.contains("schemas pg_catalog, public"))
        let one = SearchPathCheck.check([.init(role: "authenticated", schema: "public")], schemas: ["pg_catalog", "public"])
        #expect(one.status == .warn)
        #expect(one.detail.hasPrefix("authenticated may create in schema public, where herald's functions look names up"))
        #expect(one.detail.contains("revoke create on schema public from authenticated"))
        let many = SearchPathCheck.check(["PUBLIC", "anon", "authenticated", "service_role", "app"].map {
            .init(role: $0, schema: "public")
        }, schemas: ["public"])
        #expect(many.detail.contains("service_role may create in schema public and 1 more,"), "\(many.detail)")
    }

    /// Shapes the providers document fail; shapes only seen in practice warn.
    @Test func keysOfTheWrongShapeAreFound() {
        let sid = "AC" + String(repeating: "0123456789abcdef", count: 2), token = String(repeating: "ab", count: 16)
        #expect(ProviderKeyShapes.twilio(accountSid: sid, authToken: token, messagingServiceSid: nil).isEmpty)
        #expect(ProviderKeyShapes.twilio(accountSid: "AC123", authToken: token, messagingServiceSid: nil).map(\.status) == [.fail])
        #expect(ProviderKeyShapes.twilio(accountSid: sid, authToken: token, messagingServiceSid: "MG1").map(\.status) == [.fail])
        #expect(ProviderKeyShapes.twilio(accountSid: sid, authToken: "short", messagingServiceSid: nil).map(\.status) == [.warn])
        #expect(ProviderKeyShapes.sendGrid(apiKey: "SG.abc_DEF.ghi-JKL").isEmpty)
        #expect(ProviderKeyShapes.sendGrid(apiKey: "xk-abc").map(\.status) == [.fail])
        #expect(ProviderKeyShapes.sendGrid(apiKey: "SG.only-one-part").map(\.status) == [.warn])
        #expect(ProviderKeyShapes.whatsApp(token: "EAAGabc").isEmpty)
        #expect(ProviderKeyShapes.whatsApp(token: "EAAG abc").map(\.status) == [.fail])
        #expect(ProviderKeyShapes.whatsApp(token: "abc").map(\.status) == [.warn])
    }
}

@Suite struct DoctorSettingsTests {
    /// Each value's source: the environment over the config file, a flag over both.
    @Test func settingsKnowWhereEachValueCameFrom() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-doctor-\(UUID().uuidString).env").path
        try "APNS_ENV=sandbox\nHERALD_LOG_LEVEL=debug\nHERALD_LEASE_SECONDS=700\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        var settings = try Settings.load(environment: ["HERALD_CONFIG": file, "HERALD_LEASE_SECONDS": "900"])
        settings.setFlag("HERALD_LOG_LEVEL", "warning")
        #expect(settings.source(of: "APNS_ENV") == .configFile)
        #expect(settings.source(of: "HERALD_LEASE_SECONDS") == .environment)
        #expect(settings["HERALD_LEASE_SECONDS"] == "900")
        #expect(settings.source(of: "HERALD_LOG_LEVEL") == .flag)
        #expect(settings["HERALD_LOG_LEVEL"] == "warning")
        #expect(settings.source(of: "WEBHOOK_URL") == nil)
    }

    /// A secret says only where it came from; a plain value is shown; X with X_FILE, an invalid value
    /// and a setting herald does not read are each named.
    @Test func settingsLinesShowSourcesAndNeverASecret() {
        var settings = Settings(["SENDGRID_API_KEY": "SG.secret.value", "EMAIL_FROM": "noreply@example.com",
                                 "WEBHOOK_SECRET": "whsec_c2VjcmV0", "WEBHOOK_SECRET_FILE": "/run/secrets/webhook",
                                 "HERALD_LEASE_SECOND": "700"])
        settings.setFlag("HERALD_LOG_LEVEL", "loud")
        let checks = SettingsCheck(settings: settings).checks()
        let line = { (name: String) in checks.first { $0.name == name } }
        #expect(line("settings.SENDGRID_API_KEY") == DoctorCheck("settings.SENDGRID_API_KEY", .ok, "set (from environment)"))
        #expect(line("settings.EMAIL_FROM")?.detail == "noreply@example.com (from environment)")
        #expect(line("settings.WEBHOOK_SECRET")?.status == .fail)
        #expect(line("settings.WEBHOOK_SECRET")?.detail.contains("both WEBHOOK_SECRET and WEBHOOK_SECRET_FILE") == true)
        #expect(line("settings.HERALD_LOG_LEVEL")?.status == .fail)
        #expect(line("settings.HERALD_LOG_LEVEL")?.detail.hasSuffix("(from a flag)") == true)
        #expect(line("settings.HERALD_LEASE_SECOND")?.status == .warn)
        #expect(line("settings.pass")?.status == .fail)
        #expect(!checks.contains { $0.detail.contains("SG.secret") || $0.detail.contains("whsec_") })
    }

    /// The pass's own check names the variable at fault, and that variable's line fails with it.
    @Test func aValueThePassRefusesFailsItsOwnLine() {
        let checks = SettingsCheck(settings: Settings(["HERALD_LEASE_SECONDS": "0", "APNS_ENV": "production"])).checks()
        #expect(checks.first { $0.name == "settings.HERALD_LEASE_SECONDS" }?.status == .fail)
        #expect(checks.first { $0.name == "settings.APNS_ENV" }?.status == .ok)
        #expect(checks.last?.name == "settings.pass")
        #expect(checks.last?.status == .fail)
    }

    /// Without its config file herald would not start: that line fails, and the rest is still checked.
    @Test func anUnreadableConfigFileFailsAndTheRestIsStillChecked() {
        let report = Doctor.run(environment: [
            "HERALD_CONFIG": "/nonexistent/herald.env", "HERALD_CHANNEL_PUSH": "log",
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:\(RefusingPort.port)/herald",
        ])
        #expect(report.checks.first == DoctorCheck("settings.HERALD_CONFIG", .fail,
                                                   "HERALD_CONFIG names /nonexistent/herald.env, which cannot be read"))
        #expect(report.checks.contains { $0.name == "settings.HERALD_CHANNEL_PUSH" && $0.status == .ok })
        #expect(report.checks.contains { $0.name == "database.connect" && $0.status == .fail })
        #expect(report.exitCode == .configuration)
    }

    /// A setting whose name says it is a credential is one the doctor never prints.
    @Test func everyCredentialSettingIsSecret() {
        let credential = ["TOKEN", "SECRET", "API_KEY", "PASSWORD", "DATABASE_URL", "SMTP_URL"]
        for spec in Settings.registry where credential.contains(where: spec.name.contains) && !spec.name.hasSuffix("_FILE") {
            #expect(spec.secret, "\(spec.name) names a credential but is not marked secret in Settings.registry")
        }
    }
}
