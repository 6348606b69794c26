import Foundation

/// A Swift value that can be bound as a query parameter: in PostgreSQL's text format, or (arrays of
/// some types, see ``PGArrayElement``) in its binary format.
///
///     extension Severity: PGBindable { public var pgText: String { rawValue } }
///     try conn.execute("update t set severity = \(severity) where id = \(id)")
public protocol PGBindable {
    /// The value as PostgreSQL's text input format reads it.
    var pgText: String { get }
    /// The value as it travels: its text (the default), or binary with its type named.
    var pgParameter: PGParameter { get }
}

extension PGBindable {
    public var pgParameter: PGParameter { .text(pgText) }
}

/// A value that can be an element of a bound array (`[String]`, `[UUID]`, `[Int]`, …):
/// `= any(\(ids)::uuid[])`. Arrays of the types below travel in PostgreSQL's binary array format,
/// which the server reads without parsing text (a batch binds tens of thousands of elements); the
/// others as an array literal.
public protocol PGArrayElement: PGBindable {
    /// The binary form of an array of these, or nil when they travel as text.
    static func pgBinaryArray(_ elements: [Self?]) -> PGParameter?
    /// The same of an array without NULLs. Each binary type implements it where its type is known, so
    /// the elements are copied by specialised code: through `[Element]`'s generic `pgParameter`, a
    /// batch's arrays cost a generic copy of every element.
    static func pgBinaryArray(all elements: [Self]) -> PGParameter?
}

extension PGArrayElement {
    public static func pgBinaryArray(_ elements: [Self?]) -> PGParameter? { nil }
    public static func pgBinaryArray(all elements: [Self]) -> PGParameter? { pgBinaryArray(elements.map(Optional.some)) }
}

extension String: PGArrayElement {
    public static func pgBinaryArray(all elements: [String]) -> PGParameter? { pgBinaryArray(elements.map(Optional.some)) }

    /// The text itself, except that each NUL becomes U+FFFD: PostgreSQL text cannot hold NUL, and libpq
    /// would silently cut the parameter at the first one. Text from outside (a provider's answer) may
    /// carry NULs; it is stored readable instead of truncated or refused.
    public var pgText: String {
        guard utf8.withContiguousStorageIfAvailable({ $0.contains(0) }) ?? utf8.contains(0) else { return self }
        return String(String.UnicodeScalarView(unicodeScalars.lazy.map { $0 == "\u{0}" ? "\u{FFFD}" : $0 }))
    }

    /// `text[]`: each element's UTF-8, NUL written as U+FFFD as in `pgText`.
    public static func pgBinaryArray(_ elements: [String?]) -> PGParameter? {
        PGBinaryArray.make(elements, type: .text) { element, out in
            var text = element.pgText
            text.withUTF8 { out.append(contentsOf: $0) }
        }
    }
}

extension Substring: PGArrayElement {
    public var pgText: String { String(self).pgText }
}

extension Int: PGArrayElement {
    public static func pgBinaryArray(all elements: [Int]) -> PGParameter? { pgBinaryArray(elements.map(Optional.some)) }

    public var pgText: String { String(self) }

    /// `bigint[]` (a statement's `::int[]` narrows it, refusing what does not fit, as for text).
    public static func pgBinaryArray(_ elements: [Int?]) -> PGParameter? {
        PGBinaryArray.make(elements, type: .int8) { element, out in PGBinaryArray.appendBigEndian(Int64(element), to: &out) }
    }
}

extension Int64: PGArrayElement {
    public static func pgBinaryArray(all elements: [Int64]) -> PGParameter? { pgBinaryArray(elements.map(Optional.some)) }

    public var pgText: String { String(self) }

    /// `bigint[]`.
    public static func pgBinaryArray(_ elements: [Int64?]) -> PGParameter? {
        PGBinaryArray.make(elements, type: .int8) { element, out in PGBinaryArray.appendBigEndian(element, to: &out) }
    }
}

extension Int32: PGArrayElement {
    public static func pgBinaryArray(all elements: [Int32]) -> PGParameter? { pgBinaryArray(elements.map(Optional.some)) }

    public var pgText: String { String(self) }

    /// `integer[]`.
    public static func pgBinaryArray(_ elements: [Int32?]) -> PGParameter? {
        PGBinaryArray.make(elements, type: .int4) { element, out in PGBinaryArray.appendBigEndian(element, to: &out) }
    }
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
    public static func pgBinaryArray(all elements: [Bool]) -> PGParameter? { pgBinaryArray(elements.map(Optional.some)) }

    public var pgText: String { self ? "t" : "f" }

    /// `boolean[]`.
    public static func pgBinaryArray(_ elements: [Bool?]) -> PGParameter? {
        PGBinaryArray.make(elements, type: .bool) { element, out in out.append(element ? 1 : 0) }
    }
}

extension UUID: PGArrayElement {
    public static func pgBinaryArray(all elements: [UUID]) -> PGParameter? { pgBinaryArray(elements.map(Optional.some)) }

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

    /// `uuid[]`: sixteen bytes each.
    public static func pgBinaryArray(_ elements: [UUID?]) -> PGParameter? {
        PGBinaryArray.make(elements, type: .uuid) { element, out in
            withUnsafeBytes(of: element.uuid) { out.append(contentsOf: $0) }
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

    /// Binary when the elements have a binary form, else the literal.
    public var pgParameter: PGParameter { Element.pgBinaryArray(all: self) ?? .text(pgText) }
}

/// An array whose elements may be missing, bound with NULL for each `nil`: the column-per-array shape
/// of a batch write. Binary or a literal, as `[Element]` is.
///
///     var errors = PGNullableArray<String>()
///     for row in rows { errors.append(row.error) }
///     try conn.execute("""
///         update t set error = x.error
///           from unnest(\(ids)::uuid[], \(errors)::text[]) as x(id, error) where t.id = x.id
///         """)
public struct PGNullableArray<Element: PGArrayElement>: PGBindable {
    public private(set) var elements: [Element?] = []

    public init() {}

    public init(_ elements: [Element?]) { self.elements = elements }

    public mutating func append(_ element: Element?) { elements.append(element) }

    public var pgText: String { PGArrayLiteral.text(elements.map { $0?.pgText }) }

    public var pgParameter: PGParameter { Element.pgBinaryArray(elements) ?? .text(pgText) }
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
