import Foundation

/// A Swift value that can be bound as a query parameter, in PostgreSQL's text format.
///
///     extension Severity: PGBindable { public var pgText: String { rawValue } }
///     try conn.execute("update t set severity = \(severity) where id = \(id)")
public protocol PGBindable {
    /// The value as PostgreSQL's text input format reads it.
    var pgText: String { get }
}

/// A value that can be an element of a bound array (`[String]`, `[UUID]`, `[Int]`, …), bound as a
/// PostgreSQL array literal: `= any(\(ids)::uuid[])`.
public protocol PGArrayElement: PGBindable {}

extension String: PGArrayElement {
    /// The text itself, except that each NUL becomes U+FFFD: PostgreSQL text cannot hold NUL, and libpq
    /// would silently cut the parameter at the first one. Text from outside (a provider's answer) may
    /// carry NULs; it is stored readable instead of truncated or refused.
    public var pgText: String {
        guard utf8.withContiguousStorageIfAvailable({ $0.contains(0) }) ?? utf8.contains(0) else { return self }
        return String(String.UnicodeScalarView(unicodeScalars.lazy.map { $0 == "\u{0}" ? "\u{FFFD}" : $0 }))
    }
}

extension Substring: PGArrayElement {
    public var pgText: String { String(self).pgText }
}

extension Int: PGArrayElement {
    public var pgText: String { String(self) }
}

extension Int64: PGArrayElement {
    public var pgText: String { String(self) }
}

extension Int32: PGArrayElement {
    public var pgText: String { String(self) }
}

extension Double: PGArrayElement {
    /// Shortest text that reads back to the same Double; `Infinity`, `-Infinity`, `NaN` as PostgreSQL spells them.
    public var pgText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return description
    }
}

extension Bool: PGArrayElement {
    public var pgText: String { self ? "t" : "f" }
}

extension UUID: PGArrayElement {
    /// Lowercase `8-4-4-4-12` hex, written directly: Foundation's `uuidString` goes through `snprintf`,
    /// which showed as a tenth of a pass's CPU when every batch binds thousands of ids.
    public var pgText: String {
        let hex: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                hex.withUTF8Buffer { digits in
                    var i = 0
                    for (index, byte) in bytes.enumerated() {
                        if index == 4 || index == 6 || index == 8 || index == 10 {
                            out[i] = UInt8(ascii: "-")
                            i += 1
                        }
                        out[i] = digits[Int(byte >> 4)]
                        out[i + 1] = digits[Int(byte & 0x0F)]
                        i += 2
                    }
                    return i
                }
            }
        }
    }
}

extension Date: PGArrayElement {
    /// ISO-8601 in UTC with microseconds: `2026-01-25T03:00:00.123456Z`.
    public var pgText: String { PGTimestamp.format(self) }
}

extension Array: PGBindable where Element: PGArrayElement {
    /// A PostgreSQL array literal with every element double-quoted: `{"a","b\"c","d\\e"}`.
    @inlinable public var pgText: String { PGArrayLiteral.text(map { Optional($0.pgText) }) }
}

/// An array whose elements may be missing, bound as a PostgreSQL array literal with `NULL` for each `nil`:
/// the column-per-array shape of a batch write. Each element is kept as its text.
///
///     var errors = PGNullableArray()
///     for row in rows { errors.append(row.error) }
///     try conn.execute("""
///         update t set error = x.error
///           from unnest(\(ids)::uuid[], \(errors)::text[]) as x(id, error) where t.id = x.id
///         """)
public struct PGNullableArray: PGBindable {
    public private(set) var texts: [String?] = []

    public init() {}

    @inlinable public init<Element: PGArrayElement>(_ elements: [Element?]) {
        self.init()
        for element in elements { append(element) }
    }

    @inlinable public mutating func append<Element: PGArrayElement>(_ element: Element?) {
        appendText(element?.pgText)
    }

    @usableFromInline mutating func appendText(_ text: String?) { texts.append(text) }

    public var pgText: String { PGArrayLiteral.text(texts) }
}

/// Writes array literals: each element double-quoted (backslash before `"` and `\`), `NULL` for `nil`.
/// Byte by byte: a batch binds arrays of thousands of JSON texts, full of quotes to escape.
@usableFromInline enum PGArrayLiteral {
    /// Not generic over the sequence: unspecialised, each element went through generic metadata lookups.
    @usableFromInline static func text(_ elements: [String?]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(elements.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        var first = true
        for element in elements {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            guard var value = element else {
                out.append(contentsOf: "NULL".utf8)
                continue
            }
            out.append(UInt8(ascii: "\""))
            value.withUTF8 { bytes in
                // Runs without a quote or a backslash are copied whole.
                var start = 0
                for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                    out.append(UInt8(ascii: "\\"))
                    start = index
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
