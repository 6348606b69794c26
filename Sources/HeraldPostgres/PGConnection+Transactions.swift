import CLibPQ
import Foundation

/// Transactions: BEGIN … COMMIT around a body, savepoints when nested, and rollbacks.
extension PGConnection {
    /// Runs `body` between BEGIN and COMMIT; ROLLBACK if it throws. Nested calls use a savepoint.
    /// If the body swallowed an SQL error, the aborted transaction is rolled back and this throws.
    /// `setLocal` are settings of this transaction alone (`SET LOCAL`, sent with the BEGIN: no round
    /// trip of their own), names and values written by the code, never data.
    ///
    ///     let claimed = try conn.transaction { conn in try conn.query(claimSQL) }
    ///     try conn.transaction(setLocal: ["random_page_cost": "1.1"]) { conn in … }
    @discardableResult
    public func transaction<T>(setLocal: KeyValuePairs<String, String> = [:], _ body: (PGConnection) throws -> T) throws -> T {
        let connection = try liveHandle()
        if PQtransactionStatus(connection) != PQTRANS_IDLE {
            return try savepoint { conn in
                for (name, value) in setLocal { try conn.executeScript("SET LOCAL \(name) = \(value)") }
                return try body(conn)
            }
        }
        try executeScript("BEGIN" + timeoutSettings + setLocal.map { "; SET LOCAL \($0.key) = \($0.value)" }.joined())
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

    /// Runs `body` in a savepoint of the open transaction: released when it returns, rolled back to
    /// when it throws (the transaction goes on).
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

    /// Rolls back the open transaction, if the connection is still there; a failure is ignored.
    private func rollbackQuietly() {
        guard let handle, PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) != PQTRANS_IDLE else { return }
        try? executeScript("ROLLBACK")
    }
}
