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
        guard utf8.contains(0) else { return self }
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
    public var pgText: String { PGArrayLiteral.text(lazy.map { Optional($0.pgText) }, count: count) }
}

/// An array whose elements may be missing, bound as a PostgreSQL array literal with `NULL` for each `nil`:
/// the column-per-array shape of a batch write.
///
///     try conn.execute("""
///         update t set error = x.error
///           from unnest(\(ids)::uuid[], \(PGNullableArray(errors))::text[]) as x(id, error) where t.id = x.id
///         """)
public struct PGNullableArray<Element: PGArrayElement>: PGBindable {
    public var elements: [Element?]

    public init(_ elements: [Element?]) { self.elements = elements }

    public var pgText: String { PGArrayLiteral.text(elements.lazy.map { $0?.pgText }, count: elements.count) }
}

/// Writes array literals: each element double-quoted (backslash before `"` and `\`), `NULL` for `nil`.
enum PGArrayLiteral {
    static func text<S: Sequence>(_ elements: S, count: Int) -> String where S.Element == String? {
        var text = "{"
        text.reserveCapacity(count * 40 + 2)
        var first = true
        for element in elements {
            if !first { text += "," }
            first = false
            guard let value = element else {
                text += "NULL"
                continue
            }
            text += "\""
            if value.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                for scalar in value.unicodeScalars {
                    if scalar == "\"" || scalar == "\\" { text.unicodeScalars.append("\\") }
                    text.unicodeScalars.append(scalar)
                }
            } else {
                text += value
            }
            text += "\""
        }
        text += "}"
        return text
    }
}
