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
///
/// This file holds the connection's state and life; the rest is beside it: connecting and its
/// options (`PGConnection+Connecting`), statements (`+Statements`), transactions (`+Transactions`),
/// results and errors (`+Results`), bound parameters (`+Parameters`).
public final class PGConnection {
    /// The libpq handle; nil once closed.
    private(set) var handle: OpaquePointer?
    /// Passwords from the conninfo and environment, scrubbed from every error message.
    let secrets: [String]
    /// How many savepoints `savepoint` has open: the next one is named after it.
    var savepointDepth = 0
    /// `; SET LOCAL …` for the timeouts `setTimeouts` asked for, sent with every BEGIN.
    private(set) var timeoutSettings = ""
    private var timeouts: [String: Int] = [:]
    /// Set by a `PGRowStream` while its query is in progress: no other statement may run meanwhile.
    var isStreaming = false
    /// What `reopen()` connects with again: the conninfo as given, and the application name.
    private let conninfo: String
    private let applicationName: String
    private let userSet: Set<String>

    /// Connects. `conninfo` is a URI (`postgresql://user:pw@host:5432/db?sslmode=require`) or
    /// key=value conninfo (`host=… dbname=…`); `""` means libpq's `PG*` environment variables and
    /// `~/.pgpass`. Throws `PGError` with `isConnectionFailure` if the server cannot be reached.
    public init(_ conninfo: String, applicationName: String = "herald") throws {
        let given = try Self.readConninfo(conninfo)
        secrets = given.secrets
        self.conninfo = conninfo
        self.applicationName = applicationName
        userSet = given.keywords
        try open()
    }

    /// Connects and runs the session's settings; closes again when they fail.
    private func open() throws {
        let connection = try Self.connect(conninfo, applicationName: applicationName, userSet: userSet, secrets: secrets)
        handle = connection
        do {
            try executeScript(Self.sessionSettings(serverVersion: PQserverVersion(connection)))
        } catch {
            close()
            throw error
        }
    }

    /// Closes the connection (whatever its state) and connects again with the same conninfo: with several
    /// hosts (`host=a,b`, `postgresql://a,b/db`), each is tried again in order, and
    /// `target_session_attrs=read-write` finds the one that is primary now. The timeouts `setTimeouts` asked
    /// for go on applying; session state (a `LISTEN`, an open transaction) is gone. Throws as `init` does.
    ///
    ///     catch let error as PGError where error.isConnectionFailure { try db.reopen() }
    public func reopen() throws {
        close()
        savepointDepth = 0
        isStreaming = false
        try open()
    }

    deinit {
        if let handle { PQfinish(handle) }
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

    /// The libpq handle, nil once closed: for a `PGRowStream` to read the query it owns.
    var rawHandle: OpaquePointer? { handle }

    /// The handle for a new statement; throws when the connection is closed or a stream is being read.
    func liveHandle() throws -> OpaquePointer {
        guard let handle else { throw PGError(isConnectionFailure: true, message: "the connection is closed") }
        // libpq would silently read and drop the stream's remaining rows to run another statement.
        guard !isStreaming else {
            throw PGError(message: "a streamed query is still being read on this connection: finish it first")
        }
        return handle
    }

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
}
