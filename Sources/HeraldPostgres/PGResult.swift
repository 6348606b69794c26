import CLibPQ

/// The rows of a query, read eagerly into Swift memory (the `PGresult` is freed at once).
/// Column names are held once; cells are text, converted only when a `PGValue` accessor is read.
///
///     let result = try conn.query("select id, status from notification_queue limit \(100)")
///     for row in result {
///         print(row["id"].uuid!, row["status"].string!)
///     }
///     result.affectedRows   // for insert/update/delete … returning
public struct PGResult: Sendable, RandomAccessCollection {
    private let storage: Storage

    /// The column names, in order.
    public var columns: [String] { storage.columns }
    /// The rows affected by an INSERT/UPDATE/DELETE/MERGE/SELECT/COPY…, from `PQcmdTuples`; 0 if none.
    public let affectedRows: Int
    /// The command tag, e.g. `UPDATE 3`.
    public let commandStatus: String

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.rowCount }

    public subscript(position: Int) -> PGRow {
        precondition(position >= 0 && position < storage.rowCount, "PGResult row \(position) out of range")
        return PGRow(storage: storage, row: position)
    }

    /// Copies a result out of libpq (the caller still owns and frees `result`).
    init(_ result: OpaquePointer) {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [String] = []
        columns.reserveCapacity(columnCount)
        for column in 0..<columnCount {
            columns.append(PQfname(result, Int32(column)).map { String(cString: $0) } ?? "?column?")
        }
        var cells: [String?] = []
        cells.reserveCapacity(rowCount * columnCount)
        for row in 0..<Int32(rowCount) {
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) != 0 {
                    cells.append(nil)
                } else {
                    let length = Int(PQgetlength(result, row, column))
                    let bytes = UnsafeRawPointer(PQgetvalue(result, row, column)!).assumingMemoryBound(to: UInt8.self)
                    cells.append(String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self))
                }
            }
        }
        storage = Storage(columns: columns, cells: cells, rowCount: rowCount)
        affectedRows = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        commandStatus = PQcmdStatus(result).map { String(cString: $0) } ?? ""
    }

    /// Immutable, shared by the rows.
    final class Storage: Sendable {
        let columns: [String]
        /// Column name → first column of that name.
        let indexByName: [String: Int]
        /// Row-major: cell (row, column) is `cells[row * columns.count + column]`.
        let cells: [String?]
        let rowCount: Int

        init(columns: [String], cells: [String?], rowCount: Int) {
            self.columns = columns
            var indexByName: [String: Int] = [:]
            for (index, name) in columns.enumerated() where indexByName[name] == nil {
                indexByName[name] = index
            }
            self.indexByName = indexByName
            self.cells = cells
            self.rowCount = rowCount
        }
    }
}

/// One row of a `PGResult`.
///
///     let row = try conn.query("select count(*) as n from t")[0]
///     row["n"].int      // by name; an unknown name gives a NULL value
///     row[0].int        // by position
public struct PGRow: Sendable {
    private let storage: PGResult.Storage
    private let row: Int

    init(storage: PGResult.Storage, row: Int) {
        self.storage = storage
        self.row = row
    }

    /// The column names, in order.
    public var columns: [String] { storage.columns }

    /// The value of the first column called `column`; NULL if there is none.
    public subscript(_ column: String) -> PGValue {
        guard let index = storage.indexByName[column] else { return PGValue(nil) }
        return PGValue(storage.cells[row * storage.columns.count + index])
    }

    /// The value at a column position; NULL if out of range.
    public subscript(_ index: Int) -> PGValue {
        guard index >= 0 && index < storage.columns.count else { return PGValue(nil) }
        return PGValue(storage.cells[row * storage.columns.count + index])
    }

    /// Whether the result has a column called `column`.
    public func has(_ column: String) -> Bool {
        storage.indexByName[column] != nil
    }
}
