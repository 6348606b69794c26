import Foundation

/// Strict JSON (RFC 8259) to `JSONValue`, straight from UTF-8 bytes: every claimed row's payload goes
/// through here, so it avoids `JSONDecoder`'s Codable round trips (several times faster). Hostile input
/// only throws: nesting deeper than `maxDepth`, numbers out of `Double`'s range, invalid UTF-8, lone
/// surrogates, trailing text. A repeated key keeps its last value.
struct JSONParser {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static let maxDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0

    static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { raw in
            var p = JSONParser(bytes: raw.bindMemory(to: UInt8.self))
            p.skipSpace()
            let v = try p.value(depth: 0)
            p.skipSpace()
            guard p.i == p.bytes.count else { throw p.fail("trailing characters") }
            return v
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private func fail(_ what: String) -> Malformed {
        Malformed(description: "malformed JSON at byte \(i): \(what)")
    }

    private var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

    private mutating func skipSpace() {
        while i < bytes.count {
            let b = bytes[i]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            i += 1
        }
    }

    private mutating func expect(_ word: String) throws {
        for b in word.utf8 {
            guard peek == b else { throw fail("expected \(word)") }
            i += 1
        }
    }

    private mutating func value(depth: Int) throws -> JSONValue {
        guard depth < JSONParser.maxDepth else { throw fail("nested too deeply") }
        switch peek {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case .some(let b) where b == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b):
            // A number beyond Double's range (jsonb keeps 1e400 as numeric) reads as null: valid JSON,
            // so the rest of the document — a row's payload, a provider's answer — is still read.
            return try number().map(JSONValue.number) ?? .null
        default: throw fail("expected a value")
        }
    }

    private mutating func object(depth: Int) throws -> JSONValue {
        i += 1
        var o: [String: JSONValue] = [:]
        skipSpace()
        if peek == UInt8(ascii: "}") { i += 1; return .object(o) }
        while true {
            skipSpace()
            guard peek == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let key = try string()
            skipSpace()
            guard peek == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            o[key] = try value(depth: depth + 1)
            skipSpace()
            switch peek {
            case UInt8(ascii: ","): i += 1
            case UInt8(ascii: "}"): i += 1; return .object(o)
            default: throw fail("expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws -> JSONValue {
        i += 1
        var a: [JSONValue] = []
        skipSpace()
        if peek == UInt8(ascii: "]") { i += 1; return .array(a) }
        while true {
            skipSpace()
            a.append(try value(depth: depth + 1))
            skipSpace()
            switch peek {
            case UInt8(ascii: ","): i += 1
            case UInt8(ascii: "]"): i += 1; return .array(a)
            default: throw fail("expected ',' or ']'")
            }
        }
    }

    private mutating func number() throws -> Double? {
        let start = i
        if peek == UInt8(ascii: "-") { i += 1 }
        func digits() -> Int {
            let from = i
            while let b = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) { i += 1 }
            return i - from
        }
        let intStart = i
        let n = digits()
        guard n > 0, !(n > 1 && bytes[intStart] == UInt8(ascii: "0")) else { throw fail("bad number") }
        if peek == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw fail("bad number") }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            i += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw fail("bad number") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { return nil }
        return d
    }

    private mutating func string() throws -> String {
        i += 1
        var out: [UInt8] = []
        var plainFrom = i
        while true {
            guard let b = peek else { throw fail("unterminated string") }
            if b == UInt8(ascii: "\"") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[plainFrom..<i]))
                i += 1
                break
            }
            if b < 0x20 { throw fail("control character in string") }
            if b != UInt8(ascii: "\\") { i += 1; continue }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[plainFrom..<i]))
            i += 1
            guard let e = peek else { throw fail("unterminated escape") }
            i += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard peek == UInt8(ascii: "\\") else { throw fail("lone surrogate") }
                    i += 1
                    guard peek == UInt8(ascii: "u") else { throw fail("lone surrogate") }
                    i += 1
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("lone surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw fail("lone surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("bad escape") }
                out.append(contentsOf: String(Character(u)).utf8)
            default: throw fail("bad escape")
            }
            plainFrom = i
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
        return s
    }

    private mutating func hex4() throws -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let b = peek else { throw fail("bad \\u escape") }
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }
}
