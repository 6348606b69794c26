import Foundation

/// A JSON value: payloads, provider bodies and the decision trail are built from it.
///
///     let v: JSONValue = ["kind": "prompt", "level": 7]
///     v["level"]?.intValue    // 7
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        case .number(let n): return n == n.rounded() && abs(n) < 1e15 ? String(Int(n)) : String(n)
        case .bool(let b): return b ? "true" : "false"
        default: return nil
        }
    }

    /// A whole number that fits an `Int` (a number or numeric text); nil for fractions, for numbers too
    /// large for an `Int` (`1e300`) and for anything else.
    public var intValue: Int? {
        switch self {
        case .number(let n): return Int(exactly: n)
        case .string(let s): return Int(s)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .number(let n): return n
        case .string(let s): return Double(s)
        default: return nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// Parses JSON text. Throws on malformed input.
    public static func parse(_ text: String) throws -> JSONValue {
        try parse(Data(text.utf8))
    }

    public static func parse(_ data: Data) throws -> JSONValue {
        try JSONParser.parse(data)
    }

    /// Compact JSON text with sorted keys, so equal values serialise identically (signatures, tests).
    public var jsonText: String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The same JSON text for a `jsonb` parameter: PostgreSQL refuses `\u0000` in `jsonb` (and `text`
    /// cannot hold NUL), so each NUL character is written as U+FFFD instead. Use it wherever JSON is
    /// bound into SQL: provider answers can carry NULs.
    ///
    ///     JSONValue.string("a\u{0}b").pgJSONText    // "\"a\\ufffdb\""
    public var pgJSONText: String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out, nul: JSONValue.replacementEscape)
        return String(decoding: out, as: UTF8.self)
    }

    /// `pgJSONText` with each object's keys in no particular order: for batch records bound as `jsonb`
    /// (which keeps no key order), where sorting every row's keys is pure cost.
    public var pgJSONTextAnyOrder: String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out, nul: JSONValue.replacementEscape, sorted: false)
        return String(decoding: out, as: UTF8.self)
    }

    private static let nulEscape: [UInt8] = Array("\\u0000".utf8)
    private static let replacementEscape: [UInt8] = Array("\\ufffd".utf8)

    /// A number as `pgJSONText` writes it (the same rule as `write`, tested to agree): a whole number
    /// below 1e15 without a fraction, another finite one in Swift's shortest form, nil for NaN and
    /// ±infinity (which JSON writes as null). A batch that binds numbers as a `numeric[]` column
    /// instead of jsonb stores the same values.
    ///
    ///     JSONValue.numberText(450)        // "450"
    ///     JSONValue.numberText(292.5)      // "292.5"
    ///     JSONValue.numberText(.nan)       // nil
    public static func numberText(_ n: Double) -> String? {
        guard n.isFinite else { return nil }
        return n == n.rounded() && abs(n) < 1e15 ? String(Int(n)) : String(n)
    }

    /// Written as UTF-8 bytes: the hot path of every batch record, so no per-character String work.
    /// `nul` is what a NUL character in a string becomes.
    private func write(to out: inout [UInt8], nul: [UInt8] = JSONValue.nulEscape, sorted: Bool = true) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n):
            if n.isFinite && n == n.rounded() && abs(n) < 1e15 { out.append(contentsOf: String(Int(n)).utf8) }
            else if n.isFinite { out.append(contentsOf: String(n).utf8) }
            else { out.append(contentsOf: "null".utf8) }
        case .string(let s): JSONValue.writeString(s, to: &out, nul: nul)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out, nul: nul, sorted: sorted)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            if sorted {
                for (i, k) in o.keys.sorted().enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    JSONValue.writeString(k, to: &out, nul: nul)
                    out.append(UInt8(ascii: ":"))
                    o[k]!.write(to: &out, nul: nul)
                }
            } else {
                for (i, (k, v)) in o.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    JSONValue.writeString(k, to: &out, nul: nul)
                    out.append(UInt8(ascii: ":"))
                    v.write(to: &out, nul: nul, sorted: false)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string: `"` and `\` escaped, control characters as \n, \r, \t or \u00XX; every other
    /// byte (multi-byte UTF-8 included) copied as it is. The bytes between two that need escaping are
    /// copied as one run, not one by one: most strings (keys, reasons, zones) have none.
    private static func writeString(_ s: String, to out: inout [UInt8], nul: [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            var run = 0, i = 0
            while i < bytes.count {
                let b = base[i]
                if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") {
                    i += 1
                    continue
                }
                if run < i { out.append(contentsOf: UnsafeBufferPointer(start: base + run, count: i - run)) }
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(b)
                case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
                case 0: out.append(contentsOf: nul)
                default:
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(hex[Int(b >> 4)])
                    out.append(hex[Int(b & 0xF)])
                }
                i += 1
                run = i
            }
            if run < bytes.count { out.append(contentsOf: UnsafeBufferPointer(start: base + run, count: bytes.count - run)) }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue: Codable {
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral v: String) { self = .string(v) }
    public init(integerLiteral v: Int) { self = .number(Double(v)) }
    public init(floatLiteral v: Double) { self = .number(v) }
    public init(booleanLiteral v: Bool) { self = .bool(v) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, b in b }))
    }
    public init(nilLiteral: ()) { self = .null }
}
