import Foundation

/// One cell of a result, as PostgreSQL's text output; each accessor converts on demand, so unread
/// cells cost nothing. A conversion that does not fit the text gives `nil`, as does NULL.
///
///     let row = try conn.query("select id, attempts, run_after from notification_queue")[0]
///     let id = row["id"].uuid            // UUID?
///     let attempts = row["attempts"].int ?? 0
///     let runAfter = row["run_after"].date
public struct PGValue: Sendable, Hashable, CustomStringConvertible {
    /// The raw text, nil for NULL.
    public var string: String?

    public init(_ string: String?) {
        self.string = string
    }

    public var isNull: Bool { string == nil }

    /// An integer column (`int2`, `int4`, `int8`, or any text that is a whole number).
    public var int: Int? { string.flatMap { Int($0) } }

    /// A `float4`/`float8`/`numeric` column, including `NaN`, `Infinity`, `-Infinity`.
    public var double: Double? { string.flatMap { Double($0) } }

    /// A `bool` column: `t`/`f` (also `true`/`false`).
    public var bool: Bool? {
        switch string {
        case "t", "true": true
        case "f", "false": false
        default: nil
        }
    }

    /// A `uuid` column.
    public var uuid: UUID? { string.flatMap { PGUUID.parse($0) } }

    /// A `timestamptz` column as the session emits it (DateStyle=ISO, TimeZone=UTC):
    /// `2026-01-25 03:00:00+00`, `2026-01-25 03:00:00.123456+00`; also `timestamp` (read as UTC),
    /// `date` (midnight UTC), `infinity`, `-infinity`.
    public var date: Date? { string.flatMap { PGTimestamp.parse($0) } }

    /// A one-dimensional array column (`text[]`, `uuid[]`, …) as its elements' text; NULL elements
    /// are `nil`. Nil if the value is NULL or not an array literal.
    ///
    ///     row["tokens"].array?.compactMap { $0 }   // [String]
    public var array: [String?]? { string.flatMap { PGArrayParser.parse($0) } }

    public var description: String { string ?? "NULL" }
}

/// Reads PostgreSQL's text output of a one-dimensional array: `{a,"b c","d\"e",NULL}`.
enum PGArrayParser {
    static func parse(_ text: String) -> [String?]? {
        var scalars = text.unicodeScalars[...]
        // An explicit lower bound, e.g. "[0:1]={a,b}", precedes the braces.
        if scalars.first == "[" {
            guard let equals = scalars.firstIndex(of: "=") else { return nil }
            scalars = scalars[scalars.index(after: equals)...]
        }
        guard scalars.first == "{", scalars.last == "}" else { return nil }
        scalars = scalars.dropFirst().dropLast()
        var elements: [String?] = []
        if scalars.isEmpty { return elements }
        var iterator = scalars.makeIterator()
        var current = String.UnicodeScalarView()
        var quoted = false
        var wasQuoted = false
        while let scalar = iterator.next() {
            if quoted {
                switch scalar {
                case "\\":
                    guard let next = iterator.next() else { return nil }
                    current.append(next)
                case "\"":
                    quoted = false
                default:
                    current.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"":
                quoted = true
                wasQuoted = true
            case "\\":
                guard let next = iterator.next() else { return nil }
                current.append(next)
            case ",":
                elements.append(finish(current, wasQuoted))
                current = String.UnicodeScalarView()
                wasQuoted = false
            case "{", "}":
                return nil  // multi-dimensional arrays are not supported
            default:
                current.append(scalar)
            }
        }
        if quoted { return nil }
        elements.append(finish(current, wasQuoted))
        return elements
    }

    private static func finish(_ scalars: String.UnicodeScalarView, _ wasQuoted: Bool) -> String? {
        let text = String(scalars)
        if !wasQuoted && text.uppercased() == "NULL" { return nil }
        return text
    }
}

/// Parses the canonical `8-4-4-4-12` hex text PostgreSQL emits for `uuid`, without Foundation's
/// general parser (several times faster, which matters for result sets of thousands of rows).
enum PGUUID {
    static func parse(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard bytes.count == 36, let base = bytes.baseAddress else {
            return UUID(uuidString: String(decoding: bytes, as: UTF8.self))
        }
        guard base[8] == dash, base[13] == dash, base[18] == dash, base[23] == dash else { return nil }
        var out: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        // Any byte that is not a hex digit reads as 0xFF, so one test of the OR of the nibbles finds it.
        var bad: UInt8 = 0
        withUnsafeMutableBytes(of: &out) { raw in
            for index in 0..<16 {
                let i = hexOffsets[index]
                let high = hexValue[Int(base[i])], low = hexValue[Int(base[i + 1])]
                bad |= high | low
                raw[index] = high << 4 | low
            }
        }
        return bad & 0xF0 == 0 ? UUID(uuid: out) : nil
    }

    private static let dash = UInt8(ascii: "-")
    /// Where each of the 16 bytes' two hex digits start in `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    private static let hexOffsets = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]
    /// Each byte's value as a hex digit, 0xFF where it is none.
    private static let hexValue: [UInt8] = (0...255).map { nibble(UInt8($0)) ?? 0xFF }

    @inline(__always) private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
