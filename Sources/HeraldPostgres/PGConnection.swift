import CLibPQ
import Foundation

/// One PostgreSQL connection (libpq's `PGconn`). Owns the handle and closes it exactly once, in
/// `close()` or `deinit`. Not for sharing between threads: give each thread its own.
///
///     let conn = try PGConnection("postgresql://herald@db.internal/herald")
///     let due = try conn.query("select id from notification_queue where run_after <= \(Date())")
///     try conn.transaction { conn in
///         try conn.execute("update notification_queue set status = 'sent' where id = \(id)")
///     }
///
/// The session runs with `TimeZone=UTC`, `DateStyle=ISO`, `extra_float_digits=3`,
/// `client_encoding=UTF8`, so `PGValue` can read what the server sends.
public final class PGConnection {
    private var handle: OpaquePointer?
    /// Passwords from the conninfo and environment, scrubbed from every error message.
    private let secrets: [String]
    private var savepointDepth = 0

    /// Seconds libpq waits for a connection unless the conninfo or `PGCONNECT_TIMEOUT` says otherwise.
    public static let defaultConnectTimeout = 10

    /// Connects. `conninfo` is a URI (`postgresql://user:pw@host:5432/db?sslmode=require`) or
    /// key=value conninfo (`host=… dbname=…`); `""` means libpq's `PG*` environment variables and
    /// `~/.pgpass`. Throws `PGError` with `isConnectionFailure` if the server cannot be reached.
    public init(_ conninfo: String, applicationName: String = "herald") throws {
        var secrets: [String] = []
        if let password = ConninfoSecrets.uriPassword(conninfo) { secrets.append(password) }
        if let password = ProcessInfo.processInfo.environment["PGPASSWORD"], !password.isEmpty {
            secrets.append(password)
        }

        var userSet: Set<String> = []
        if !conninfo.isEmpty {
            var errorMessage: UnsafeMutablePointer<CChar>?
            guard let options = PQconninfoParse(conninfo, &errorMessage) else {
                throw Self.parseFailure(conninfo, errorMessage, secrets: secrets)
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
        self.secrets = secrets.filter { !$0.isEmpty }

        // Entries before `dbname` are defaults the conninfo may override; entries after it win.
        var parameters = Self.socketDefaults(userSet: userSet, environment: ProcessInfo.processInfo.environment)
        parameters.append(("fallback_application_name", applicationName))
        parameters.append(("dbname", conninfo))
        parameters.append(("client_encoding", "UTF8"))

        let connection = Self.withCStrings(parameters.map(\.0)) { keywords in
            Self.withCStrings(parameters.map(\.1)) { values in
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let connection else {
            throw PGError(isConnectionFailure: true, message: "out of memory allocating a PostgreSQL connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(connection)) ?? "could not connect"
            PQfinish(connection)
            throw PGError(isConnectionFailure: true, message: Self.scrub(message, self.secrets))
        }
        PQsetNoticeProcessor(connection, { _, _ in }, nil)  // NOTICEs would go to stderr otherwise
        handle = connection
        do {
            // TimeZone and DateStyle are parameters PgBouncer tracks: it replays the client's values on
            // whichever server connection it lends, so these SETs survive transaction pooling. Servers
            // from 12 on print floats exactly by default; older ones need extra_float_digits, which
            // PgBouncer does not track (a pooled old server is not supported).
            var settings = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO'"
            if PQserverVersion(connection) < 120_000 { settings += "; SET extra_float_digits = 3" }
            try executeScript(settings)
        } catch {
            close()
            throw error
        }
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

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

    /// The error for a conninfo libpq could not parse (and frees libpq's message). libpq quotes the
    /// string, or a piece of it, so the message is scrubbed of anything that may be its password.
    private static func parseFailure(_ conninfo: String, _ errorMessage: UnsafeMutablePointer<CChar>?,
                                     secrets: [String]) -> PGError {
        let message = errorMessage.map { String(cString: $0) } ?? "invalid connection string"
        if let errorMessage { PQfreemem(errorMessage) }
        let text = ConninfoSecrets.parseError(message.trimmingCharacters(in: .whitespacesAndNewlines), conninfo: conninfo)
        return PGError(isConnectionFailure: true, message: scrub(text, secrets))
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

    /// Closes the connection. Safe to call more than once; later calls to `query` throw.
    public func close() {
        if let handle {
            PQfinish(handle)
            self.handle = nil
        }
    }

    /// Whether the connection is open and healthy as far as libpq knows.
    public var isOpen: Bool {
        handle.map { PQstatus($0) == CONNECTION_OK } ?? false
    }

    /// Whether a transaction is open (including one aborted by an error and awaiting ROLLBACK).
    public var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    // MARK: Statements

    /// Runs one statement; every interpolated value is a bound parameter (PQexecParams; see ``PGParameter``).
    ///
    ///     let rows = try conn.query("select id from t where kind = \(kind) limit \(limit)")
    @discardableResult
    public func query(_ sql: SQL) throws -> PGResult {
        let connection = try liveHandle()
        // Timeouts live in transactions (see `setTimeouts`): a lone statement gets one of its own.
        if !timeoutSettings.isEmpty, PQtransactionStatus(connection) == PQTRANS_IDLE {
            if Self.opensTransaction(sql.text), sql.parameters.isEmpty {
                // A BEGIN the caller sends itself (a dry run's): the timeouts follow it.
                let result = try consume(PQexecParams(connection, sql.text, 0, nil, nil, nil, nil, 0), connection)
                try executeScript(String(timeoutSettings.dropFirst(2)))
                return result
            }
            return try transaction { try $0.query(sql) }
        }
        let text = sql.text
        let parameters = sql.parameters
        let result: OpaquePointer?
        if parameters.isEmpty {
            result = PQexecParams(connection, text, 0, nil, nil, nil, nil, 0)
        } else {
            result = try Self.withParameters(parameters) { p in
                PQexecParams(connection, text, p.count, p.types, p.values, p.lengths, p.formats, 0)
            }
        }
        return try consume(result, connection)
    }

    /// Runs one statement and returns the number of rows it affected.
    ///
    ///     let n = try conn.execute("delete from t where created_at < \(cutoff)")
    @discardableResult
    public func execute(_ sql: SQL) throws -> Int {
        try query(sql).affectedRows
    }

    /// Runs a script of one or more statements without parameters (PQexec): migrations only.
    /// Without an explicit transaction in the script or around the call, the statements run in one
    /// implicit transaction.
    public func executeScript(_ text: String) throws {
        let connection = try liveHandle()
        _ = try consume(PQexec(connection, text), connection)
    }

    /// Runs `body` between BEGIN and COMMIT; ROLLBACK if it throws. Nested calls use a savepoint.
    /// If the body swallowed an SQL error, the aborted transaction is rolled back and this throws.
    ///
    ///     let claimed = try conn.transaction { conn in try conn.query(claimSQL) }
    @discardableResult
    public func transaction<T>(_ body: (PGConnection) throws -> T) throws -> T {
        let connection = try liveHandle()
        if PQtransactionStatus(connection) != PQTRANS_IDLE {
            return try savepoint(body)
        }
        try executeScript("BEGIN" + timeoutSettings)
        let value: T
        do {
            value = try body(self)
        } catch {
            rollbackQuietly()
            throw error
        }
        if let handle, PQtransactionStatus(handle) == PQTRANS_INERROR {
            rollbackQuietly()
            throw PGError(sqlState: "25P02", message: "the transaction was aborted by an earlier error, and was rolled back")
        }
        let commit = try query("COMMIT")
        if commit.commandStatus == "ROLLBACK" {
            throw PGError(sqlState: "25P02", message: "the transaction was aborted by an earlier error, and was rolled back")
        }
        return value
    }

    /// Runs `body` inside a savepoint when a transaction is open (so its failure rolls back only its
    /// own work), or as it is otherwise.
    ///
    ///     try db.savepointIfInTransaction { try phase.run() }
    public func savepointIfInTransaction<T>(_ body: () throws -> T) throws -> T {
        guard let handle, PQtransactionStatus(handle) != PQTRANS_IDLE else { return try body() }
        return try savepoint { _ in try body() }
    }

    /// True while a transaction is open (or aborted and not yet rolled back).
    public var inTransaction: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) != PQTRANS_IDLE
    }

    /// Rolls back a transaction left open (or aborted) by a failed statement; does nothing when idle.
    public func rollbackIfInTransaction() {
        guard let handle, PQtransactionStatus(handle) == PQTRANS_INTRANS || PQtransactionStatus(handle) == PQTRANS_INERROR
        else { return }
        rollbackQuietly()
    }

    private func savepoint<T>(_ body: (PGConnection) throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "herald_savepoint_\(savepointDepth)"
        try executeScript("SAVEPOINT \(name)")
        do {
            let value = try body(self)
            try executeScript("RELEASE SAVEPOINT \(name)")
            return value
        } catch {
            try? executeScript("ROLLBACK TO SAVEPOINT \(name); RELEASE SAVEPOINT \(name)")
            throw error
        }
    }

    private func rollbackQuietly() {
        guard let handle, PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) != PQTRANS_IDLE else { return }
        try? executeScript("ROLLBACK")
    }

    /// Whether a statement is BEGIN or START TRANSACTION (which must not run inside a transaction of
    /// its own).
    static func opensTransaction(_ text: String) -> Bool {
        let word = text.drop { $0.isWhitespace }.prefix { $0.isLetter }.lowercased()
        return word == "begin" || word == "start"
    }

    /// `; SET LOCAL …` for the timeouts `setTimeouts` asked for, sent with every BEGIN.
    private(set) var timeoutSettings = ""
    private var timeouts: [String: Int] = [:]

    /// Sets `statement_timeout`, `lock_timeout` and `idle_in_transaction_session_timeout`, in
    /// milliseconds (0 disables); `nil` leaves a setting as it is. They are never session state, which a
    /// pooler in transaction mode would leak to other clients: every transaction starts with
    /// `SET LOCAL` of each (in the BEGIN's round trip), and a statement outside a transaction runs in a
    /// transaction of its own.
    ///
    ///     try conn.setTimeouts(statement: 30_000, lock: 5_000, idleInTransaction: 60_000)
    public func setTimeouts(statement: Int?, lock: Int?, idleInTransaction: Int?) throws {
        var next = timeouts
        for (name, value) in [("statement_timeout", statement), ("lock_timeout", lock),
                              ("idle_in_transaction_session_timeout", idleInTransaction)] {
            guard let value else { continue }
            guard value >= 0, value <= Int(Int32.max) else {
                throw PGError(message: "\(name) must be between 0 and \(Int32.max) ms, not \(value)")
            }
            next[name] = value
        }
        timeouts = next
        // Integers formatted here are safe as literals; SET takes no parameters.
        timeoutSettings = timeouts.sorted { $0.key < $1.key }.map { "; SET LOCAL \($0.key) = \($0.value)" }.joined()
    }

    // MARK: Results and errors

    func liveHandle() throws -> OpaquePointer {
        guard let handle else { throw PGError(isConnectionFailure: true, message: "the connection is closed") }
        // libpq would silently read and drop the stream's remaining rows to run another statement.
        guard !isStreaming else {
            throw PGError(message: "a streamed query is still being read on this connection: finish it first")
        }
        return handle
    }

    /// The libpq handle, nil once closed: for a `PGRowStream` to read the query it owns.
    var rawHandle: OpaquePointer? { handle }

    /// Set by a `PGRowStream` while its query is in progress: no other statement may run meanwhile.
    var isStreaming = false

    /// Turns a libpq result into a `PGResult` (which then owns it) or a thrown `PGError` (freeing it).
    func consume(_ result: OpaquePointer?, _ connection: OpaquePointer) throws -> PGResult {
        guard let result else {
            throw PGError(
                message: scrub(Self.trimmed(PQerrorMessage(connection)) ?? "no result from the server"),
                isConnectionFailure: PQstatus(connection) == CONNECTION_BAD)
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            return PGResult(owning: result)  // frees it when its last row is gone
        }
        defer { PQclear(result) }
        switch status {
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            throw PGError(message: "COPY is not supported by PGConnection", isConnectionFailure: false)
        default:
            func field(_ code: Character) -> String? {
                PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
            }
            let sqlState = field("C")
            let message = field("M")
                ?? Self.trimmed(PQresultErrorMessage(result))
                ?? Self.trimmed(PQerrorMessage(connection))
                ?? "unknown error"
            let lost = PQstatus(connection) == CONNECTION_BAD || (sqlState?.hasPrefix("08") ?? false)
            throw PGError(
                sqlState: sqlState, message: scrub(message), detail: field("D").map(scrub), hint: field("H"),
                constraint: field("n"), isConnectionFailure: lost)
        }
    }

    func scrub(_ message: String) -> String {
        Self.scrub(message, secrets)
    }

    /// `message` without `secrets`, nor any URI userinfo password or `password=` value it quotes.
    static func scrub(_ message: String, _ secrets: [String]) -> String {
        var message = message
        for secret in secrets where !secret.isEmpty {
            message = message.replacingOccurrences(of: secret, with: "***")
        }
        return ConninfoSecrets.scrub(message)
    }

    static func trimmed(_ text: UnsafePointer<CChar>?) -> String? {
        guard let text else { return nil }
        let string = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return string.isEmpty ? nil : string
    }

    // MARK: C strings

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// The parameters as libpq takes them, pointing into one buffer that lives as long as the call.
    struct ParameterArrays {
        var count: Int32
        /// nil when there is no parameter.
        var values: UnsafePointer<UnsafePointer<CChar>?>?
        /// nil when every parameter is text: the server then infers each one's type.
        var types: UnsafePointer<Oid>?
        var lengths: UnsafePointer<Int32>?
        var formats: UnsafePointer<Int32>?
    }

    /// Copies of the parameters in one buffer (text NUL-terminated, binary with its length and type),
    /// NULL for `nil`.
    static func withParameters<R>(_ parameters: [PGParameter?], _ body: (ParameterArrays) -> R) throws -> R {
        guard parameters.count <= 65535 else {
            throw PGError(message: "a statement takes at most 65535 parameters, not \(parameters.count)")
        }
        var total = 0, anyBinary = false
        for parameter in parameters {
            switch parameter {
            case .text(let text): total += text.utf8.count + 1
            case .binary(_, let bytes): total += bytes.count; anyBinary = true
            case nil: break
            }
        }
        guard total <= Int(Int32.max) else {
            throw PGError(message: "a statement's parameters take at most 2 GB, not \(total) bytes")
        }
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(total, 1))
        defer { buffer.deallocate() }
        var pointers: [UnsafePointer<CChar>?] = [], types: [Oid] = [], lengths: [Int32] = [], formats: [Int32] = []
        pointers.reserveCapacity(parameters.count)
        if anyBinary {
            types.reserveCapacity(parameters.count)
            lengths.reserveCapacity(parameters.count)
            formats.reserveCapacity(parameters.count)
        }
        var offset = 0
        for (index, parameter) in parameters.enumerated() {
            let start = buffer + offset
            var type: Oid = 0, length: Int32 = 0, format: Int32 = 0
            switch parameter {
            case nil:
                pointers.append(nil)
            case .text(var text):
                let count = text.withUTF8 { bytes -> Int in
                    if !bytes.isEmpty { start.update(from: bytes.baseAddress!, count: bytes.count) }
                    return bytes.count
                }
                if memchr(start, 0, count) != nil {
                    throw PGError(message: "parameter $\(index + 1) contains a NUL character, which PostgreSQL text cannot hold")
                }
                start[count] = 0
                pointers.append(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self))
                offset += count + 1
            case .binary(let pgType, let bytes):
                bytes.withUnsafeBufferPointer { if !$0.isEmpty { start.update(from: $0.baseAddress!, count: $0.count) } }
                pointers.append(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self))
                offset += bytes.count
                (type, length, format) = (pgType.rawValue, Int32(bytes.count), 1)
            }
            if anyBinary {
                types.append(type)
                lengths.append(length)
                formats.append(format)
            }
        }
        return pointers.withUnsafeBufferPointer { values in
            types.withUnsafeBufferPointer { types in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(ParameterArrays(count: Int32(parameters.count), values: parameters.isEmpty ? nil : values.baseAddress,
                                             types: anyBinary ? types.baseAddress : nil,
                                             lengths: anyBinary ? lengths.baseAddress : nil,
                                             formats: anyBinary ? formats.baseAddress : nil))
                    }
                }
            }
        }
    }
}
