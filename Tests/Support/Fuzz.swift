import Foundation

/// Deterministic random inputs for the fuzz tests of every parser of outside input: provider answers,
/// headers, JSON bodies, timestamps, database cells. A fixed seed gives the same inputs on every run, so
/// a failure reproduces; each test runs a bounded number of iterations.
///
///     var fuzz = Fuzz(seed: 1)
///     for _ in 0..<Fuzz.iterations {
///         let header = fuzz.retryAfterText()      // "120", "-1", "99999999999999999999", an HTTP-date, …
///         #expect(Backoff.parseRetryAfter(header, now: now).map { (0...86_400).contains($0) } ?? true)
///     }
public struct Fuzz: RandomNumberGenerator {
    /// Iterations per fuzz test: a few thousand, well under a second each.
    public static let iterations = 3_000
    /// Iterations of the tests that decode a JSON body each time (every classifier, JSONValue.parse):
    /// decoding hostile JSON is the slow part, so fewer, to stay near a second each in a debug build.
    public static let bodyIterations = 1_000

    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    /// SplitMix64.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 0..<bound.
    public mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(UInt64(bound).multipliedFullWidth(by: next()).high)
    }

    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    public mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }
    public mutating func pick<T>(_ xs: [T]) -> T { xs[below(xs.count)] }

    // MARK: Bytes and text

    /// Random bytes: anything at all, NULs and invalid UTF-8 included.
    public mutating func bytes(maxCount: Int = 64) -> [UInt8] {
        (0..<int(0...maxCount)).map { _ in UInt8(truncatingIfNeeded: next()) }
    }

    /// Byte sequences that are not valid UTF-8 or that are hostile once decoded.
    public static let badUTF8: [[UInt8]] = [
        [0x00], [0xFF], [0xFE], [0xC0, 0x80], [0xC3], [0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
        [0xE2, 0x82], [0xF0, 0x9F, 0x98], Array("\u{202E}".utf8), Array("\u{1B}[31m".utf8), [0x7F], [0x0D],
        Array("\u{85}".utf8), Array("\u{2028}".utf8), Array("\u{FEFF}".utf8), [0x5C, 0x75, 0x30, 0x30, 0x30, 0x30],
    ]

    /// Text with hostile characters mixed in: NULs, controls, invalid UTF-8 (repaired), escapes.
    public mutating func hostileText(maxPieces: Int = 12) -> String {
        var out: [UInt8] = []
        for _ in 0..<int(0...maxPieces) {
            switch below(6) {
            case 0: out += Fuzz.badUTF8[below(Fuzz.badUTF8.count)]
            case 1: out += bytes(maxCount: 8)
            case 2: out += Array(pick(["error", "Unregistered", "reason", " ", "\n", "\t", "é", "تحديث", "👨‍👩‍👧", "\"", "\\"]).utf8)
            default: out += Array(pick(["a", "b", "0", "9", "-", ".", ":", ","]).utf8)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Number text of every kind a parser meets: small, negative, fractional, huge, exponent, special.
    public mutating func numberText() -> String {
        switch below(12) {
        case 0: return String(int(-5...5))
        case 1: return String(int(0...100_000))
        case 2: return String(Int.random(in: Int.min...Int.max, using: &self))
        case 3: return String(repeating: "9", count: int(19...40))
        case 4: return pick(["9223372036854775807", "9223372036854775808", "-9223372036854775808",
                             "-9223372036854775809", "18446744073709551616"])
        case 5: return pick(["1e300", "-1e300", "1e308", "1.7976931348623157e308", "1e309", "1e-400", "4.9e-324", "1e30"])
        case 6: return pick(["inf", "-inf", "Infinity", "-Infinity", "nan", "NaN", "-nan", "+inf"])
        case 7: return pick(["0.5", "-0", "-0.0", "1.5", "120.9", ".5", "5.", "0x10", "1_000", "+7", " 7 ", "07"])
        case 8: return String(Double(bitPattern: next()))
        case 9: return "\(int(-999...999))e\(int(-400...400))"
        case 10: return "1" + String(repeating: "0", count: int(0...400))
        default: return pick(["", "-", "e5", "1e", "1..2", "--1", "١٢", "12abc", "\u{0}1"])
        }
    }

    // MARK: HTTP

    /// A `Retry-After` (or `X-RateLimit-Reset`) value: numbers of every kind, HTTP-dates of every form
    /// with any year, and garbage.
    public mutating func retryAfterText() -> String {
        switch below(5) {
        case 0, 1: return numberText()
        case 2: return httpDateText()
        case 3: return mutate(httpDateText())
        default: return hostileText()
        }
    }

    public static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Monday", "Sunday", "Xyz", ""]
    public static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
                                "jan", "DEC", "Foo", ""]

    /// An HTTP-date in one of RFC 9110's three forms, with fields that may be absurd.
    public mutating func httpDateText() -> String {
        let wd = pick(Fuzz.weekdays)
        let day = chance(0.8) ? String(int(1...31)) : numberText()
        let month = pick(Fuzz.months)
        let year = chance(0.5) ? String(int(1900...2100)) : pick([numberText(), "99999999999", "9223372036854775807",
                                                                   "-9223372036854775808", "0", "-1", "10000", "292277026596"])
        let clock = chance(0.8)
            ? String(format: "%02d:%02d:%02d", int(0...23), int(0...59), int(0...59))
            : pick(["24:00:00", "99:99:99", "00:00", "23:59:60", "-1:00:00", numberText()])
        switch below(3) {
        case 0: return "\(wd), \(day) \(month) \(year) \(clock) GMT"
        case 1: return "\(wd), \(day)-\(month)-\(year) \(clock) GMT"
        default: return "\(wd) \(month) \(day) \(clock) \(year)"
        }
    }

    /// `s` with a few random edits: a character dropped, doubled, swapped for another, or inserted.
    public mutating func mutate(_ s: String) -> String {
        var chars = Array(s)
        for _ in 0..<int(1...3) {
            let i = chars.isEmpty ? 0 : below(chars.count)
            switch below(4) {
            case 0 where !chars.isEmpty: chars.remove(at: i)
            case 1 where !chars.isEmpty: chars.insert(chars[i], at: i)
            case 2 where !chars.isEmpty: chars[i] = pick(Array("0123456789 ,:-+GMTZ\u{0}é"))
            default: chars.insert(pick(Array("0123456789 ,:-.eE+\u{0}\u{FFFD}")), at: i)
            }
        }
        return String(chars)
    }

    /// An HTTP status: usually a real one, sometimes anything.
    public mutating func status() -> Int {
        switch below(6) {
        case 0: return int(0...999)
        case 1: return pick([Int.min, -1, 1000, 99_999, Int.max])
        default: return pick([200, 201, 202, 204, 301, 400, 401, 403, 404, 408, 410, 413, 429, 451, 500, 502, 503, 504])
        }
    }

    /// Response headers, with the ones classifiers read often present and often absurd.
    public mutating func headers() -> [(String, String)] {
        var h: [(String, String)] = []
        for _ in 0..<int(0...4) {
            let name = pick(["retry-after", "x-ratelimit-reset", "apns-id", "x-message-id", "message-id",
                             "content-type", "smtp-reply", "x-" + hostileText(maxPieces: 2)])
            let value: String
            switch below(4) {
            case 0: value = retryAfterText()
            case 1: value = hostileText()
            case 2: value = UUID().uuidString.lowercased()
            default: value = numberText()
            }
            h.append((name, value))
        }
        return h
    }

    // MARK: JSON

    /// JSON text: usually well-formed (with huge numbers, escapes such as \u0000, deep nesting, the
    /// provider keys classifiers look for), sometimes truncated or mutated.
    public mutating func jsonText(depth: Int = 0) -> String {
        let text = jsonValueText(depth: depth)
        switch below(8) {
        case 0: return String(text.prefix(below(text.count + 1)))      // truncated
        case 1: return mutate(text)
        default: return text
        }
    }

    public static let providerKeys = [
        "reason", "timestamp", "error", "errors", "code", "message", "status", "details", "errorCode", "@type",
        "data", "id", "name", "sid", "messages", "error_data", "field", "expires_in", "access_token", "level",
        "deviation_percent", "metric_type", "pattern_type", "date", "title", "body",
    ]

    public mutating func jsonValueText(depth: Int = 0) -> String {
        let deep = depth > 5
        switch deep ? below(4) : below(8) {
        case 0: return pick(["null", "true", "false"])
        case 1: return jsonNumberText()
        case 2, 3: return jsonStringText()
        case 4:
            if chance(0.01) {      // deep nesting (JSONDecoder's cost grows with depth², so kept modest)
                let n = int(50...600)
                return String(repeating: "[", count: n) + String(repeating: "]", count: n)
            }
            return "[" + (0..<int(0...4)).map { _ in jsonValueText(depth: depth + 1) }.joined(separator: ",") + "]"
        default:
            return "{" + (0..<int(0...5)).map { _ in
                let key = chance(0.7) ? "\"\(pick(Fuzz.providerKeys))\"" : jsonStringText()
                return key + ":" + jsonValueText(depth: depth + 1)
            }.joined(separator: ",") + "}"
        }
    }

    public mutating func jsonNumberText() -> String {
        switch below(5) {
        case 0: return String(int(-1000...1000))
        case 1: return pick(["1e300", "-1e300", "1e308", "1e309", "-1e400", "1e-400", "123456789012345678901234567890",
                             "9223372036854775807", "9223372036854775808", "-9223372036854775809", "0.5", "-0",
                             "1E2", "2.5e-3", "18446744073709551615"])
        case 2: return String(Int.random(in: Int.min...Int.max, using: &self))
        case 3:
            let d = Double(bitPattern: next())
            return d.isFinite ? String(d) : "0"
        default: return "1" + String(repeating: "0", count: int(0...330))
        }
    }

    public mutating func jsonStringText() -> String {
        var s = "\""
        for _ in 0..<int(0...10) {
            switch below(7) {
            case 0: s += pick(["\\u0000", "\\u0001", "\\u001f", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\uFFFF",
                               "\\n", "\\t", "\\r", "\\\"", "\\\\", "\\/", "\\b", "\\f"])
            case 1: s += pick(["Unregistered", "BadDeviceToken", "UNREGISTERED", "DeviceNotRegistered", "TooManyRequests",
                               "google.firebase.fcm.v1.FcmError", "ok", "error", "QUOTA_EXCEEDED", "131026", "21610"])
            case 2: s += pick(["é", "تحديث", "👨‍👩‍👧", "\u{202E}", "\u{7F}"])
            case 3: s += numberText().replacingOccurrences(of: "\"", with: "").replacingOccurrences(of: "\\", with: "")
                        .replacingOccurrences(of: "\u{0}", with: "")
            default: s += pick(["a", "b", " ", "-", "x"])
            }
        }
        return s + "\""
    }

    /// A provider body: JSON (well-formed or not), random bytes, NULs, invalid UTF-8, HTML, or nothing.
    public mutating func body() -> [UInt8] {
        switch below(8) {
        case 0: return []
        case 1: return bytes(maxCount: 200)
        case 2:
            var b = Array(jsonText().utf8)
            for _ in 0..<int(1...3) {
                b.insert(contentsOf: Fuzz.badUTF8[below(Fuzz.badUTF8.count)], at: below(b.count + 1))
            }
            return b
        case 3: return Array("<html><body>\u{0}Bad Gateway\r\n\u{1B}[0m</body></html>".utf8) + bytes(maxCount: 8)
        case 4: return Array(String(repeating: "x\u{0}\u{7}é", count: int(100...1_000)).utf8)
        default: return Array(jsonText().utf8)
        }
    }

    // MARK: Timestamps and cells

    /// Timestamp-like text: ISO 8601 / PostgreSQL forms with absurd fields, mutated, or garbage.
    public mutating func timestampText() -> String {
        let year: String = chance(0.6) ? String(format: "%04d", int(0...9999))
            : pick(["99999", "294276", "294277", "999999999", "9999999999", "99999999999", "9223372036854775807",
                    "5874897", "5874898", "0000", numberText()])
        let month = chance(0.9) ? String(format: "%02d", int(0...13)) : numberText()
        let day = chance(0.9) ? String(format: "%02d", int(0...32)) : numberText()
        let clock = String(format: "%02d:%02d:%02d", int(0...25), int(0...61), int(0...61))
        let fraction = chance(0.3) ? "." + String(repeating: "9", count: int(0...30)) : ""
        let zone = pick(["", "Z", "z", "+00", "-05:00", "+14:00", "+99:99", "+05:30:15", " BC", "+00 BC", "+0530"])
        let sep = pick(["T", " ", "t", "_"])
        var text: String
        switch below(5) {
        case 0: text = "\(year)-\(month)-\(day)"
        case 1: text = pick(["infinity", "-infinity", "", "now", "epoch"])
        default: text = "\(year)-\(month)-\(day)\(sep)\(clock)\(fraction)\(zone)"
        }
        if chance(0.3) { text = mutate(text) }
        if chance(0.05) { text = hostileText() }
        return text
    }

    /// Dates of every size: ordinary, far past and future, huge, infinite, NaN.
    public mutating func date() -> Date {
        switch below(4) {
        case 0: return Date(timeIntervalSince1970: Double(int(-4_000_000_000...16_000_000_000)) + Double(below(1_000_000)) / 1e6)
        case 1: return Date(timeIntervalSince1970: pick([1e300, -1e300, .infinity, -.infinity, .nan, 9.3e18, -9.3e18,
                                                          Double(Int.max), Double(Int.min), 1e15, -1e15, 2.5e11]))
        case 2: return pick([Date.distantFuture, Date.distantPast, Date(timeIntervalSince1970: 0)])
        default: return Date(timeIntervalSince1970: Double(bitPattern: next()))
        }
    }
}
