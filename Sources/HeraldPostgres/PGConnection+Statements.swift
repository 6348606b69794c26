import CLibPQ
import Foundation

/// Statements: one with bound parameters (`query`, `execute`), or a script without (`executeScript`).
extension PGConnection {
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

    /// Whether a statement is BEGIN or START TRANSACTION (which must not run inside a transaction of
    /// its own).
    static func opensTransaction(_ text: String) -> Bool {
        let word = text.drop { $0.isWhitespace }.prefix { $0.isLetter }.lowercased()
        return word == "begin" || word == "start"
    }
}
