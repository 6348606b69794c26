import Foundation
import HeraldCore
import HeraldWorker
import Testing

/// Settings: flags over environment over the config file; secrets from files.
@Suite struct SettingsTests {
    func temp(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "herald-\(UUID().uuidString)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func environmentWinsOverTheConfigFile() throws {
        let file = try temp("""
            # herald settings
            DATABASE_URL=postgresql://file/db
            export WEBHOOK_URL="https://hooks.example.com/a"
            HERALD_LOG_LEVEL='debug'
            """)
        defer { unlink(file) }
        let s = try Settings.load(environment: ["HERALD_CONFIG": file, "DATABASE_URL": "postgresql://env/db"])
        #expect(s["DATABASE_URL"] == "postgresql://env/db")
        #expect(s["WEBHOOK_URL"] == "https://hooks.example.com/a")
        #expect(s["HERALD_LOG_LEVEL"] == "debug")
    }

    @Test func theDatabaseURLMayComeFromAFile() throws {
        let file = try temp("postgresql://secret-host/db\n")
        defer { unlink(file) }
        #expect(try Settings(["DATABASE_URL_FILE": file]).databaseURL() == "postgresql://secret-host/db")
        #expect(try Settings([:]).databaseURL() == nil)
    }

    @Test func settingAValueAndItsFileIsAnErrorNamingBoth() throws {
        let file = try temp("x")
        defer { unlink(file) }
        for key in ["DATABASE_URL", "WEBHOOK_SECRET"] {
            let s = Settings([key: "inline", key + "_FILE": file])
            #expect {
                _ = try s.secret(key)
            } throws: { error in
                "\(error)".contains(key) && "\(error)".contains(key + "_FILE")
            }
        }
    }

    @Test func badConfigFileIsAClearError() throws {
        let file = try temp("NOT A SETTING\n")
        defer { unlink(file) }
        #expect(throws: ConfigError.self) { try Settings.load(environment: ["HERALD_CONFIG": file]) }
        #expect(throws: ConfigError.self) { try Settings.load(environment: ["HERALD_CONFIG": "/nonexistent/herald.env"]) }
    }

    @Test func secretsComeFromFiles() throws {
        let file = try temp("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0\n")
        defer { unlink(file) }
        let s = Settings(["WEBHOOK_SECRET_FILE": file])
        #expect(try s.secret("WEBHOOK_SECRET") == "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0")
        #expect(try Settings(["WEBHOOK_SECRET": "direct"]).secret("WEBHOOK_SECRET") == "direct")
        #expect(try Settings([:]).secret("WEBHOOK_SECRET") == nil)
        let empty = try temp("\n")
        defer { unlink(empty) }
        #expect(throws: ConfigError.self) { try Settings(["WEBHOOK_SECRET_FILE": empty]).secret("WEBHOOK_SECRET") }
    }

    @Test func routesFollowTheSettings() throws {
        let routes = try ChannelRoutes.load(Settings([
            "HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_IN_APP": "off",
            "WEBHOOK_URL": "https://hooks.example.com/x", "WEBHOOK_SECRET": "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=",
        ]))
        #expect(Set(routes.routable) == [.push, .webhook])
        #expect(routes[.push]?.provider == .log)
        #expect(routes[.webhook]?.provider == .webhook)
        #expect(throws: ConfigError.self) { try ChannelRoutes.load(Settings(["WEBHOOK_SECRET": "whsec_c2VjcmV0"])) }
    }

    @Test func metricsKeepTheLastSuccessOverAFailedPass() throws {
        let path = NSTemporaryDirectory() + "herald-\(UUID().uuidString).prom"
        defer { unlink(path) }
        var ok = Summary(passId: "a")
        ok.sent = 3
        try Metrics.write(ok, to: path, now: Date(timeIntervalSince1970: 1_000))
        var failed = Summary(passId: "b")
        failed.ok = false
        try Metrics.write(failed, to: path, now: Date(timeIntervalSince1970: 2_000))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("herald_last_success_timestamp_seconds 1000"))
        #expect(text.contains("herald_last_run_timestamp_seconds 2000"))
        #expect(text.contains("herald_pass_success 0"))
    }
}
