import Foundation
@testable import HeraldPostgres
import HeraldTestSupport
import Testing

/// TCP keepalives and `tcp_user_timeout`, so a database host that vanishes is noticed well inside a
/// row's lease; the user's own settings win.
@Suite struct ConnectionOptionsTests {
    static func withQuery(_ url: String, _ query: String) -> String {
        url + (url.contains("?") ? "&" : "?") + query
    }

    @Test func keepalivesAndUserTimeoutAreOnByDefault() throws {
        let conn = try serverConnection()
        let options = conn.options
        #expect(options["keepalives"] == "1")
        #expect(options["keepalives_idle"] == "30")
        #expect(options["keepalives_interval"] == "10")
        #expect(options["keepalives_count"] == "3")
        #expect(options["tcp_user_timeout"] == "60000")
        if ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"] == nil {
            #expect(options["connect_timeout"] == "10")
        }
        #expect(options["password"] == nil)
        #expect(try conn.query("select 1 as one")[0]["one"].int == 1)
    }

    @Test func theUsersSettingsWin() throws {
        let url = Self.withQuery(try TestDatabase.serverURL(), "keepalives_idle=5&tcp_user_timeout=0&connect_timeout=4")
        let conn = try PGConnection(url)
        let options = conn.options
        #expect(options["keepalives_idle"] == "5")
        #expect(options["tcp_user_timeout"] == "0")
        #expect(options["connect_timeout"] == "4")
        #expect(options["keepalives_interval"] == "10")   // what the user did not set keeps herald's default
        #expect(options["keepalives"] == "1")
        #expect(try conn.query("select 1 as one")[0]["one"].int == 1)

        let off = try PGConnection(Self.withQuery(try TestDatabase.serverURL(), "keepalives=0"))
        #expect(off.options["keepalives"] == "0")
    }

    @Test func defaultsLeaveOutWhatTheConninfoOrEnvironmentSets() {
        let all = PGConnection.socketDefaults(userSet: [], environment: [:]).map(\.0)
        #expect(all == ["connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout"])
        let some = PGConnection.socketDefaults(userSet: ["keepalives_idle", "host", "dbname"], environment: [:])
        #expect(!some.contains { $0.0 == "keepalives_idle" })
        #expect(some.contains { $0 == ("keepalives_interval", "10") })
        // libpq reads connect_timeout from PGCONNECT_TIMEOUT: an explicit default would override it.
        let env = PGConnection.socketDefaults(userSet: [], environment: ["PGCONNECT_TIMEOUT": "3"])
        #expect(!env.contains { $0.0 == "connect_timeout" })
        // A service file may set them: only connect_timeout, as before.
        #expect(PGConnection.socketDefaults(userSet: ["service"], environment: [:]).map(\.0) == ["connect_timeout"])
        #expect(PGConnection.socketDefaults(userSet: [], environment: ["PGSERVICE": "herald"]).map(\.0) == ["connect_timeout"])
    }
}
