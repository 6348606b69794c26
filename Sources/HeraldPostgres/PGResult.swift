import Foundation
import CLibPQ

/// The rows of a query. It owns libpq's `PGresult` (freed with the last row that refers to it) and
/// reads cells where libpq keeps them: nothing is copied until an accessor asks for a value.
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
    /// The position of the first column called `column`; nil if there is none.
    public func column(_ column: String) -> Int? { storage.indexByName[column] }
    /// The rows affected by an INSERT/UPDATE/DELETE/MERGE/SELECT/COPY…, from `PQcmdTuples`; 0 if none.
    public let affectedRows: Int
    /// The command tag, e.g. `UPDATE 3`.
    public let commandStatus: String

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.rowCount }

    public subscript(position: Int) -> PGRow {
        precondition(position >= 0 && position < storage.rowCount, "PGResult row \(position) out of range")
        return PGRow(storage: storage, row: Int32(position))
    }

    /// Takes ownership of `result`: it is freed when no `PGResult` or `PGRow` refers to it.
    init(owning result: OpaquePointer) {
        storage = Storage(result)
        affectedRows = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        commandStatus = PQcmdStatus(result).map { String(cString: $0) } ?? ""
    }

    /// The `PGresult` and what is read once from it. libpq's result is immutable once made and its
    /// accessors only read it, so rows may be read from any thread. (A `PGRowStream` hands each row
    /// in a storage of its own, or in the previous row's once nothing else refers to that one:
    /// `replace` is only ever called on a storage no row or result shares.)
    final class Storage: @unchecked Sendable {
        private var result: OpaquePointer
        let columns: [String]
        /// Column name → first column of that name.
        let indexByName: [String: Int]
        private(set) var rowCount: Int

        /// Takes `result`, with the given column names when known (a streamed query's rows all have
        /// the first row's columns: they are read once, not once a row).
        init(_ result: OpaquePointer, columns known: (names: [String], indexByName: [String: Int])? = nil) {
            self.result = result
            rowCount = Int(PQntuples(result))
            if let known {
                columns = known.names
                indexByName = known.indexByName
                return
            }
            var columns: [String] = []
            var indexByName: [String: Int] = [:]
            for column in 0..<PQnfields(result) {
                let name = PQfname(result, column).map { String(cString: $0) } ?? "?column?"
                if indexByName[name] == nil { indexByName[name] = columns.count }
                columns.append(name)
            }
            self.columns = columns
            self.indexByName = indexByName
        }

        deinit {
            PQclear(result)
        }

        /// Frees the result held and takes `next`, of the same columns. Only for a storage that
        /// nothing else refers to (`isKnownUniquelyReferenced`).
        func replace(with next: OpaquePointer) {
            PQclear(result)
            result = next
            rowCount = Int(PQntuples(next))
        }

        /// The cell's bytes (without libpq's terminating NUL), or nil for NULL.
        @inline(__always)
        func withCell<T>(_ row: Int32, _ column: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T?) -> T? {
            let column = Int32(column)
            if PQgetisnull(result, row, column) != 0 { return nil }
            let start = UnsafeRawPointer(PQgetvalue(result, row, column)!).assumingMemoryBound(to: UInt8.self)
            return body(UnsafeBufferPointer(start: start, count: Int(PQgetlength(result, row, column))))
        }
    }
}

/// One row of a `PGResult`.
///
///     let row = try conn.query("select count(*) as n from t")[0]
///     row["n"].int      // by name; an unknown name gives a NULL value
///     row[0].int        // by position
///     row.double(at: 2) // by position, parsed in place: for loops over many thousands of cells
public struct PGRow: Sendable {
    private let storage: PGResult.Storage
    private let row: Int32

    init(storage: PGResult.Storage, row: Int32) {
        self.storage = storage
        self.row = row
    }

    /// The column names, in order.
    public var columns: [String] { storage.columns }

    /// The value of the first column called `column`; NULL if there is none.
    public subscript(_ column: String) -> PGValue {
        guard let index = storage.indexByName[column] else { return PGValue(nil) }
        return self[index]
    }

    /// The value at a column position; NULL if out of range.
    public subscript(_ index: Int) -> PGValue {
        guard index >= 0 && index < storage.columns.count else { return PGValue(nil) }
        return PGValue(storage.withCell(row, index) { String(decoding: $0, as: UTF8.self) })
    }

    // The same conversions as `PGValue`'s, read from libpq's bytes without making a String first.

    /// `self[index].double`, parsed in place.
    public func double(at index: Int) -> Double? {
        guard index >= 0 && index < storage.columns.count else { return nil }
        return storage.withCell(row, index) { bytes in
            if let value = Self.plainDecimal(bytes) { return value }
            // libpq ends every value with a NUL, so strtod can read it where it lies.
            var end: UnsafeMutablePointer<CChar>?
            let start = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            let value = strtod(start, &end)
            guard let end, end == UnsafeMutablePointer(mutating: start) + bytes.count, bytes.count > 0 else { return nil }
            return value
        }
    }

    /// A plain decimal of at most 15 digits (`450`, `-292.50`, `.5`), as strtod reads it; nil for
    /// anything else (an exponent, `NaN`, more digits, spaces), which strtod is left to read. The
    /// digits make an integer below 2^53 and the fraction a power of ten below 10^22, both exact as
    /// a Double, so one correctly rounded division is the correctly rounded value (Clinger's fast
    /// path): the same Double strtod gives, without its general machinery. A metric read parses
    /// millions of such cells.
    ///
    ///     PGRow.plainDecimal(Array("292.50".utf8).withUnsafeBufferPointer { $0 })   // 292.5
    static func plainDecimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        var negative = false
        if i < bytes.count && bytes[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
        }
        var mantissa: UInt64 = 0
        var digits = 0
        var fraction = -1  // digits after the point; -1 before one is seen
        while i < bytes.count {
            let byte = bytes[i]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits += 1
                guard digits <= 15 else { return nil }
                mantissa = mantissa * 10 + UInt64(byte - UInt8(ascii: "0"))
                if fraction >= 0 { fraction += 1 }
            } else if byte == UInt8(ascii: "."), fraction < 0 {
                fraction = 0
            } else {
                return nil
            }
            i += 1
        }
        guard digits > 0 else { return nil }
        let value = Double(mantissa) / powersOfTen[max(0, fraction)]
        return negative ? -value : value
    }

    /// 10^0 … 10^15, each exact as a Double.
    static let powersOfTen: [Double] = (0...15).map { (0..<$0).reduce(1.0) { p, _ in p * 10 } }

    /// `self[index].int`, parsed in place.
    public func int(at index: Int) -> Int? {
        guard index >= 0 && index < storage.columns.count else { return nil }
        return storage.withCell(row, index) { bytes in
            var value = 0
            var negative = false
            var digits = 0
            for (i, byte) in bytes.enumerated() {
                if i == 0 && (byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")) {
                    negative = byte == UInt8(ascii: "-")
                    continue
                }
                guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
                // Accumulated with the sign, so Int.min (whose magnitude Int cannot hold) parses too.
                let digit = Int(byte - UInt8(ascii: "0"))
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (next, o2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
                guard !o1 && !o2 else { return nil }
                value = next
                digits += 1
            }
            return digits > 0 ? value : nil
        }
    }

    /// The position of the first column called `column`, to read a batch's rows by position: a
    /// name looked up once per result instead of once per cell (`row["id"]` hashes the name each time).
    ///
    ///     let id = result.column("id")          // nil if there is no such column
    ///     for row in result { row.uuid(at: id!) }
    public func column(_ column: String) -> Int? { storage.indexByName[column] }

    /// True when the cell is NULL (or out of range).
    public func isNull(at index: Int) -> Bool {
        guard index >= 0 && index < storage.columns.count else { return true }
        return storage.withCell(row, index) { _ in true } == nil
    }

    /// `self[index].string`.
    public func string(at index: Int) -> String? {
        guard index >= 0 && index < storage.columns.count else { return nil }
        return storage.withCell(row, index) { String(decoding: $0, as: UTF8.self) }
    }

    /// `self[index].bool`, read in place.
    public func bool(at index: Int) -> Bool? {
        guard index >= 0 && index < storage.columns.count else { return nil }
        return storage.withCell(row, index) { bytes in
            // PostgreSQL prints `t` and `f`; `true` and `false` are read too, as `PGValue.bool` does.
            switch bytes.count == 1 ? bytes[0] : 0 {
            case UInt8(ascii: "t"): return true
            case UInt8(ascii: "f"): return false
            default: return PGValue(String(decoding: bytes, as: UTF8.self)).bool
            }
        }
    }

    /// `self[index].date`, parsed in place.
    public func date(at index: Int) -> Date? {
        guard index >= 0 && index < storage.columns.count else { return nil }
        return storage.withCell(row, index) { PGTimestamp.parse(bytes: $0) }
    }

    /// `self[index].uuid`, parsed in place.
    public func uuid(at index: Int) -> UUID? {
        guard index >= 0 && index < storage.columns.count else { return nil }
        return storage.withCell(row, index) { PGUUID.parse($0) }
    }
}
