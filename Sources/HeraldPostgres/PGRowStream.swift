import CLibPQ
import Foundation

/// A query whose rows arrive one at a time, as the server sends them (libpq's single-row mode): a
/// reader of a million rows holds one row at a time instead of one result holding them all, and works
/// on each row while the server produces the next. It owns the query in progress: until the query
/// ends, its connection runs nothing else (another statement throws instead of dropping rows).
///
///     var steps = 0.0
///     let rows = try conn.stream("select steps from wearable_daily_metrics where user_id = any(\(users)::uuid[])") { row in
///         steps += row.double(at: 0) ?? 0
///     }
///
/// `PGConnection.stream` is the way to use it: one statement, bound parameters, and the connection's
/// timeouts in a transaction of its own as `query` does, so it works through a transaction-mode pooler
/// and `statement_timeout` still ends a query that runs too long. A closure that throws ends the query
/// early: the server is asked to cancel it, what it had sent already is read and dropped, and the
/// connection is ready for the next statement. The same happens to a stream dropped before its end.
/// Rows may be kept: each `PGRow` keeps its own one-row result.
public final class PGRowStream {
    private let connection: PGConnection
    private let handle: OpaquePointer
    /// The column names, read from the first row.
    private var columns: (names: [String], indexByName: [String: Int])?
    /// The last row's storage: the next row reuses it when the caller kept no reference to it.
    private var current: PGResult.Storage?
    private var finished = false
    /// The rows read so far.
    public private(set) var count = 0

    /// Sends `sql` and switches to single-row mode. The caller reads it to its end (`next` until nil)
    /// or `cancel`s it.
    public init(_ connection: PGConnection, _ sql: SQL) throws {
        let handle = try connection.liveHandle()
        let sent = try PGConnection.withParameters(sql.parameters) { p in
            PQsendQueryParams(handle, sql.text, p.count, p.types, p.values, p.lengths, p.formats, 0)
        }
        guard sent == 1 else {
            throw PGError(message: connection.scrub(PGConnection.trimmed(PQerrorMessage(handle)) ?? "could not send the query"),
                          isConnectionFailure: PQstatus(handle) == CONNECTION_BAD)
        }
        self.connection = connection
        self.handle = handle
        connection.isStreaming = true
        if PQsetSingleRowMode(handle) != 1 {
            // Only refused right after a send that failed; read what there is so the connection is idle.
            finish()
            throw PGError(message: "libpq refused single-row mode for this query")
        }
    }

    deinit {
        cancel()
    }

    /// The next row, or nil once the query has ended. A failed query throws its error (a statement
    /// timeout: SQLSTATE 57014); it has ended then too, and the connection is ready again.
    public func next() throws -> PGRow? {
        guard !finished else { return nil }
        guard connection.rawHandle == handle else {
            finished = true
            throw PGError(isConnectionFailure: true, message: "the connection was closed during a streamed query")
        }
        guard let result = PQgetResult(handle) else {
            finish()
            return nil
        }
        let status = PQresultStatus(result)
        if status == PGRES_SINGLE_TUPLE {
            // libpq makes a result for every row; the Swift side reuses one storage for them all
            // unless the caller keeps rows (a reader of a million rows allocates nothing per row).
            if current != nil, isKnownUniquelyReferenced(&current) {
                current!.replace(with: result)
            } else {
                let storage = PGResult.Storage(result, columns: columns)
                if columns == nil { columns = (storage.columns, storage.indexByName) }
                current = storage
            }
            count += 1
            return PGRow(storage: current!, row: 0)
        }
        if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY {
            // The end: a result with no rows, then nil.
            PQclear(result)
            finish()
            return nil
        }
        // An error: the rest is read first (so a session the server ended is seen as lost), then
        // `consume` makes it a PGError and frees the result.
        finish()
        var failure: any Error = PGError(message: "the streamed query failed")
        do { _ = try connection.consume(result, handle) } catch { failure = error }
        throw failure
    }

    /// Ends the query early: asks the server to cancel it (`PQcancel`, which a pooler passes on), then
    /// reads and drops whatever it sent until it says it is done. Afterwards the connection is ready
    /// for the next statement; an explicit transaction around the query is aborted by the cancel and
    /// must be rolled back (`PGConnection.transaction` does). Does nothing once the query has ended.
    public func cancel() {
        guard !finished else { return }
        guard connection.rawHandle == handle else {
            finished = true
            connection.isStreaming = false
            return
        }
        if let cancel = PQgetCancel(handle) {
            var message = [CChar](repeating: 0, count: 256)
            _ = PQcancel(cancel, &message, Int32(message.count))  // if it cannot be sent, the drain reads it all
            PQfreeCancel(cancel)
        }
        finish()
    }

    /// Reads and drops the remaining results until libpq says the query is over.
    private func finish() {
        if connection.rawHandle == handle {
            while let result = PQgetResult(handle) { PQclear(result) }
        }
        finished = true
        current = nil
        connection.isStreaming = false
    }
}

extension PGConnection {
    /// Runs one statement and hands each row to `body` as it arrives (`PGRowStream`); returns the
    /// number of rows. Every interpolated value is a bound parameter. With timeouts set
    /// (`setTimeouts`), a statement outside a transaction runs in one of its own, as `query` does.
    /// If `body` throws, the query is cancelled and drained, and the error is rethrown.
    ///
    ///     let n = try conn.stream("select id, steps from wearable_daily_metrics") { row in
    ///         window.add(row.uuid(at: 0), row.double(at: 1))
    ///     }
    @discardableResult
    public func stream(_ sql: SQL, _ body: (PGRow) throws -> Void) throws -> Int {
        let connection = try liveHandle()
        if !timeoutSettings.isEmpty, PQtransactionStatus(connection) == PQTRANS_IDLE {
            return try transaction { try $0.stream(sql, body) }
        }
        let stream = try PGRowStream(self, sql)
        do {
            while let row = try stream.next() { try body(row) }
        } catch {
            stream.cancel()
            throw error
        }
        return stream.count
    }
}
