/// An error from PostgreSQL or libpq.
///
///     do { try conn.execute("insert into t (id) values (\(id))") }
///     catch let error as PGError where error.sqlState == PGError.uniqueViolation { … }
///     catch let error as PGError where error.isConnectionFailure { /* reconnect or give up */ }
public struct PGError: Error, CustomStringConvertible, Sendable {
    /// The SQLSTATE, e.g. `23505`; nil for errors raised by libpq itself (connection errors).
    public var sqlState: String?
    /// The primary message. Never includes the password from the conninfo.
    public var message: String
    public var detail: String?
    public var hint: String?
    /// The constraint a violation names, if any.
    public var constraint: String?
    /// Could not connect, or the connection was lost: the connection is no longer usable.
    public var isConnectionFailure: Bool

    public init(
        sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, isConnectionFailure: Bool = false
    ) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.isConnectionFailure = isConnectionFailure
    }

    /// `PGError(isConnectionFailure: true, message: "…")`, the order the connection code uses.
    public init(isConnectionFailure: Bool, message: String) {
        self.init(message: message, isConnectionFailure: isConnectionFailure)
    }

    public var description: String {
        var text = sqlState.map { "PostgreSQL error \($0): " } ?? (isConnectionFailure ? "PostgreSQL connection error: " : "PostgreSQL error: ")
        text += message
        if let detail { text += " (\(detail))" }
        if let hint { text += " hint: \(hint)" }
        return text
    }

    /// A transaction lost to other sessions: a deadlock, a serialization failure, a lock wait past
    /// `lock_timeout` (such as a migration holding a table). It was rolled back whole, so nothing of it
    /// was written, and the same transaction may simply be run again.
    public var isContention: Bool {
        [Self.deadlockDetected, Self.serializationFailure, Self.lockNotAvailable].contains(sqlState ?? "")
    }

    /// An error the same statement may well not meet again: contention (`isContention`), a statement
    /// timeout, a lost connection. What failed for such a reason is tried again later, not given up on.
    public var isPassing: Bool {
        isConnectionFailure || isContention || sqlState == Self.queryCanceled
    }

    // Common SQLSTATEs.
    public static let uniqueViolation = "23505"
    public static let foreignKeyViolation = "23503"
    public static let checkViolation = "23514"
    public static let notNullViolation = "23502"
    public static let serializationFailure = "40001"
    public static let deadlockDetected = "40P01"
    public static let queryCanceled = "57014"   // statement_timeout, or cancelled
    public static let lockNotAvailable = "55P03" // lock_timeout, NOWAIT
    public static let undefinedTable = "42P01"
    public static let insufficientPrivilege = "42501"
}
