import Foundation

/// One SQL statement with its parameters: interpolated values become `$1`, `$2`, … and travel
/// separately from the text, in PostgreSQL's text format (arrays of uuids, texts, integers and
/// booleans in its binary format, see ``PGArrayElement``). Nothing a caller interpolates is ever
/// spliced into the SQL.
///
///     let sql: SQL = "select name from users where id = \(id) and created_at < \(cutoff)"
///     // sql.text     == "select name from users where id = $1 and created_at < $2"
///     // sql.bindings == ["3f2c…", "2026-01-25T03:00:00.000000Z"]
///
///     let ids: [UUID] = …
///     try conn.query("select * from notification_queue where id = any(\(ids)::uuid[])")
///
/// Fixed fragments chosen by code (never values) go in with `\(unescaped:)`, identifiers with
/// `\(identifier:)`. Queries can be built in pieces; placeholders are renumbered:
///
///     var sql: SQL = "update t set status = \(status)"
///     if let error { sql += ", last_error = \(error)" }
///     sql += " where id = \(id)"          // text: "… status = $1, last_error = $2 where id = $3"
public struct SQL: ExpressibleByStringInterpolation, Sendable, Hashable, CustomStringConvertible {
    /// The literal text between placeholders: `segments.count == bindings.count + 1`, and
    /// `text == segments[0] + "$1" + segments[1] + … + "$n" + segments[n]`. Kept so that
    /// appending renumbers placeholders without scanning (and misreading) SQL text.
    private var segments: [String]

    /// The parameter values, `parameters[0]` for `$1`; `nil` is NULL.
    public private(set) var parameters: [PGParameter?]

    /// The parameters as a reader would write them (see ``PGParameter/readable``); `nil` is NULL.
    public var bindings: [String?] { parameters.map { $0?.readable } }

    /// The statement text with `$n` placeholders.
    public var text: String {
        if parameters.isEmpty { return segments[0] }
        var text = segments[0]
        for index in 1..<segments.count {
            text += "$"
            text += String(index)
            text += segments[index]
        }
        return text
    }

    private init(segments: [String], parameters: [PGParameter?]) {
        precondition(segments.count == parameters.count + 1)
        self.segments = segments
        self.parameters = parameters
    }

    /// SQL text without parameters, as written.
    public init(stringLiteral value: String) {
        self.init(segments: [value], parameters: [])
    }

    /// Raw SQL text with no parameters. Only for text chosen by code, never for values.
    ///
    ///     let order = SQL(unescaped: descending ? "desc" : "asc")
    public init(unescaped text: String) {
        self.init(segments: [text], parameters: [])
    }

    /// One bound parameter on its own: `$1`.
    ///
    ///     let list = ids.map { SQL(binding: $0) }.joined(separator: ", ")
    public init<Value: PGBindable>(binding value: Value?) {
        self.init(segments: ["", ""], parameters: [value?.pgParameter])
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(segments: stringInterpolation.segments, parameters: stringInterpolation.parameters)
    }

    public var description: String {
        parameters.isEmpty ? text : "\(text) \(bindings.map { $0 ?? "NULL" })"
    }

    // MARK: Building in pieces

    /// Appends `other`, renumbering its placeholders after this one's.
    ///
    ///     var sql: SQL = "select * from t where true"
    ///     if let kind { sql.append(" and kind = \(kind)") }
    public mutating func append(_ other: SQL) {
        segments[segments.count - 1] += other.segments[0]
        segments.append(contentsOf: other.segments.dropFirst())
        parameters.append(contentsOf: other.parameters)
    }

    /// `lhs` followed by `rhs`, with `rhs`'s placeholders renumbered after `lhs`'s.
    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var result = lhs
        result.append(rhs)
        return result
    }

    public static func += (lhs: inout SQL, rhs: SQL) {
        lhs.append(rhs)
    }

    /// `"name"`, with embedded double quotes doubled: a safe SQL identifier.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Interpolation

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        fileprivate var segments: [String]
        fileprivate var parameters: [PGParameter?]

        public init(literalCapacity: Int, interpolationCount: Int) {
            segments = [""]
            segments.reserveCapacity(interpolationCount + 1)
            segments[0].reserveCapacity(literalCapacity)
            parameters = []
            parameters.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            segments[segments.count - 1] += literal
        }

        private mutating func bind(_ parameter: PGParameter?) {
            parameters.append(parameter)
            segments.append("")
        }

        /// `\(value)` binds the value as the next parameter.
        public mutating func appendInterpolation<Value: PGBindable>(_ value: Value) {
            bind(value.pgParameter)
        }

        /// `\(optional)` binds the value, or NULL for `nil`.
        public mutating func appendInterpolation<Value: PGBindable>(_ value: Value?) {
            bind(value?.pgParameter)
        }

        /// `\(fragment)` splices another `SQL` in, renumbering its placeholders.
        public mutating func appendInterpolation(_ fragment: SQL) {
            segments[segments.count - 1] += fragment.segments[0]
            segments.append(contentsOf: fragment.segments.dropFirst())
            parameters.append(contentsOf: fragment.parameters)
        }

        /// `\(unescaped: "desc")` appends raw SQL text: only for fixed fragments chosen by code.
        public mutating func appendInterpolation(unescaped text: String) {
            segments[segments.count - 1] += text
        }

        /// `\(identifier: "table")` appends a double-quoted identifier.
        public mutating func appendInterpolation(identifier name: String) {
            segments[segments.count - 1] += SQL.quoteIdentifier(name)
        }
    }
}

extension Sequence where Element == SQL {
    /// The fragments one after another, `separator` between them, placeholders renumbered.
    ///
    ///     let values = rows.map { "(\($0.id), \($0.name))" as SQL }.joined(separator: ", ")
    public func joined(separator: SQL = "") -> SQL {
        var result: SQL = ""
        var first = true
        for fragment in self {
            if !first { result.append(separator) }
            result.append(fragment)
            first = false
        }
        return result
    }
}
