import CLibPQ
import Foundation

/// Connecting: reading the conninfo, the defaults herald adds to it, the session's settings, and the
/// options in effect.
extension PGConnection {
    /// Seconds libpq waits for a connection unless the conninfo or `PGCONNECT_TIMEOUT` says otherwise.
    public static let defaultConnectTimeout = 10

    /// Checks, without connecting, that libpq can read `conninfo` (a URI or key=value conninfo; `""`
    /// is libpq's `PG*` variables). Throws `PGError` with libpq's reason, its password kept out
    /// whatever the string's shape (see `ConninfoSecrets`).
    ///
    ///     try PGConnection.checkConninfo("postgresql+psycopg2://u:pw@h/db")   // throws: missing "=" after "postgresql+psycopg2://u:***@h/db" …
    public static func checkConninfo(_ conninfo: String) throws {
        guard !conninfo.isEmpty else { return }
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            var secrets: [String] = []
            if let password = ConninfoSecrets.uriPassword(conninfo) { secrets.append(password) }
            throw parseFailure(conninfo, errorMessage, secrets: secrets)
        }
        PQconninfoFree(options)
    }

    /// What `conninfo` sets: the keywords it gives a value (herald's defaults leave those alone), and
    /// the passwords to keep out of every error message (the URI's, `PGPASSWORD`, a `password=`).
    ///
    ///     try PGConnection.readConninfo("host=db password=pw")   // (["host", "password"], ["pw"]) without PGPASSWORD
    static func readConninfo(_ conninfo: String) throws -> (keywords: Set<String>, secrets: [String]) {
        var secrets: [String] = []
        if let password = ConninfoSecrets.uriPassword(conninfo) { secrets.append(password) }
        if let password = ProcessInfo.processInfo.environment["PGPASSWORD"], !password.isEmpty {
            secrets.append(password)
        }
        var userSet: Set<String> = []
        if !conninfo.isEmpty {
            var errorMessage: UnsafeMutablePointer<CChar>?
            guard let options = PQconninfoParse(conninfo, &errorMessage) else {
                throw parseFailure(conninfo, errorMessage, secrets: secrets)
            }
            defer { PQconninfoFree(options) }
            var option = options
            while let keyword = option.pointee.keyword {
                let name = String(cString: keyword)
                if let value = option.pointee.val {
                    if name == "password" { secrets.append(String(cString: value)) }
                    userSet.insert(name)
                }
                option += 1
            }
        }
        return (userSet, secrets.filter { !$0.isEmpty })
    }

    /// The error for a conninfo libpq could not parse (and frees libpq's message). libpq quotes the
    /// string, or a piece of it, so the message is scrubbed of anything that may be its password.
    static func parseFailure(_ conninfo: String, _ errorMessage: UnsafeMutablePointer<CChar>?,
                             secrets: [String]) -> PGError {
        let message = errorMessage.map { String(cString: $0) } ?? "invalid connection string"
        if let errorMessage { PQfreemem(errorMessage) }
        let text = ConninfoSecrets.parseError(message.trimmingCharacters(in: .whitespacesAndNewlines), conninfo: conninfo)
        return PGError(isConnectionFailure: true, message: scrub(text, secrets))
    }

    /// Opens libpq's connection with herald's socket defaults (`socketDefaults`) before the conninfo
    /// and UTF-8 after it. Throws `PGError` with `isConnectionFailure`, scrubbed of `secrets`.
    static func connect(_ conninfo: String, applicationName: String, userSet: Set<String>,
                        secrets: [String]) throws -> OpaquePointer {
        // Entries before `dbname` are defaults the conninfo may override; entries after it win.
        var parameters = socketDefaults(userSet: userSet, environment: ProcessInfo.processInfo.environment)
        parameters.append(("fallback_application_name", applicationName))
        parameters.append(("dbname", conninfo))
        parameters.append(("client_encoding", "UTF8"))

        let connection = withCStrings(parameters.map(\.0)) { keywords in
            withCStrings(parameters.map(\.1)) { values in
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let connection else {
            throw PGError(isConnectionFailure: true, message: "out of memory allocating a PostgreSQL connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = trimmed(PQerrorMessage(connection)) ?? "could not connect"
            PQfinish(connection)
            throw PGError(isConnectionFailure: true, message: scrub(message, secrets))
        }
        PQsetNoticeProcessor(connection, { _, _ in }, nil)  // NOTICEs would go to stderr otherwise
        return connection
    }

    /// The settings a new session runs once: UTC, ISO dates and, before PostgreSQL 12, exact floats.
    /// TimeZone and DateStyle are parameters PgBouncer tracks: it replays the client's values on
    /// whichever server connection it lends, so these SETs survive transaction pooling. Servers from
    /// 12 on print floats exactly by default; older ones need extra_float_digits, which PgBouncer does
    /// not track (a pooled old server is not supported).
    ///
    ///     PGConnection.sessionSettings(serverVersion: 160_000)   // "SET TimeZone = 'UTC'; SET DateStyle = 'ISO'"
    static func sessionSettings(serverVersion: Int32) -> String {
        var settings = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO'"
        if serverVersion < 120_000 { settings += "; SET extra_float_digits = 3" }
        return settings
    }

    /// Socket settings herald adds where the user set nothing (conninfo, `PG*` variable or service), so
    /// that a database host that vanishes (no RST, no FIN) is noticed within about a minute, well inside
    /// a row's lease, instead of after the kernel's two hours: TCP keepalives after 30 s idle, every
    /// 10 s, 3 missed → dead; and data unacknowledged for 60 s → dead (`tcp_user_timeout`, Linux).
    /// They are client-side socket options: fine through PgBouncer, ignored for Unix sockets.
    public static let tcpDefaults: [(String, String)] = [
        ("keepalives", "1"),
        ("keepalives_idle", "30"),
        ("keepalives_interval", "10"),
        ("keepalives_count", "3"),
        ("tcp_user_timeout", "60000"),
    ]

    /// The defaults to pass before the conninfo: `connect_timeout` and `tcpDefaults`, less those the
    /// conninfo sets (`userSet`), those whose libpq environment variable is set, and those this libpq
    /// does not know. With a service (`service=` or `PGSERVICE`), whose file may set them, only
    /// `connect_timeout` is added as before.
    static func socketDefaults(userSet: Set<String>, environment: [String: String]) -> [(String, String)] {
        var known: [String: String?] = [:]   // keyword → its environment variable
        if let defaults = PQconndefaults() {
            defer { PQconninfoFree(defaults) }
            var option = defaults
            while let keyword = option.pointee.keyword {
                known.updateValue(option.pointee.envvar.map { String(cString: $0) }, forKey: String(cString: keyword))
                option += 1
            }
        }
        let usesService = userSet.contains("service") || !(environment["PGSERVICE"] ?? "").isEmpty
        let candidates = [("connect_timeout", String(defaultConnectTimeout))] + (usesService ? [] : tcpDefaults)
        return candidates.filter { name, _ in
            guard let envvar = known[name], !userSet.contains(name) else { return false }
            if let envvar, environment[envvar] != nil { return false }
            return true
        }
    }

    /// The connection options in effect (`PQconninfo`), as keyword → value, without the password.
    ///
    ///     conn.options["keepalives_idle"]   // "30"
    public var options: [String: String] {
        guard let handle, let info = PQconninfo(handle) else { return [:] }
        defer { PQconninfoFree(info) }
        var result: [String: String] = [:]
        var option = info
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            if name != "password", let value = option.pointee.val { result[name] = String(cString: value) }
            option += 1
        }
        return result
    }

    /// Runs `body` with `strings` as a NULL-terminated array of C strings, as libpq takes keywords and
    /// values.
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
