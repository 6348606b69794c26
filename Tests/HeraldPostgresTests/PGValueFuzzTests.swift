import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldPostgres

/// Database cells are written by the apps: every accessor is fed random text and must answer or refuse,
/// never trap, and what it answers must be what the text says.
@Suite struct PGValueFuzzTests {
    @Test func cellAccessorsAnswerOrRefuse() {
        var fuzz = Fuzz(seed: 21)
        for _ in 0..<Fuzz.iterations {
            let text: String
            switch fuzz.below(5) {
            case 0: text = fuzz.numberText()
            case 1: text = fuzz.timestampText()
            case 2: text = fuzz.chance(0.5) ? UUID().uuidString : fuzz.mutate(UUID().uuidString.lowercased())
            case 3: text = "{" + (0..<fuzz.int(0...4)).map { _ in fuzz.pick(["a", "\"b c\"", "NULL", "\\\"", "\"", "{x}", fuzz.hostileText(maxPieces: 3)]) }
                .joined(separator: ",") + (fuzz.chance(0.8) ? "}" : "")
            default: text = fuzz.hostileText()
            }
            let cell = PGValue(text)
            // A whole number reads as the same number in both accessors.
            if let n = cell.int { #expect(cell.double == Double(n), "\(text.debugDescription)") }
            if let d = cell.date { #expect(!d.timeIntervalSince1970.isNaN, "\(text)") }
            #expect((cell.bool != nil) == ["t", "true", "f", "false"].contains(text), "\(text.debugDescription)")
            // A uuid is read only from its canonical text, any case.
            if let id = cell.uuid { #expect(id.uuidString.lowercased() == text.lowercased(), "\(text.debugDescription)") }
            // An array literal is braced, and holds no more elements than its commas allow.
            if let elements = cell.array {
                #expect(text.unicodeScalars.last == "}" && (text.hasPrefix("{") || text.hasPrefix("[")), "\(text.debugDescription)")
                #expect(elements.count <= text.unicodeScalars.filter { $0 == "," }.count + 1, "\(text.debugDescription)")
            }
            #expect(cell.description == text)
        }
    }

    @Test func timestampsParseOrRefuseAndEveryDateFormats() {
        var fuzz = Fuzz(seed: 22)
        for _ in 0..<Fuzz.iterations * 2 {
            let text = fuzz.timestampText()
            if let date = PGTimestamp.parse(text) {
                #expect(date.timeIntervalSince1970.isFinite, "\(text)")
                let formatted = PGTimestamp.format(date)
                #expect(!formatted.isEmpty && !formatted.utf8.contains(0), "\(text) → \(formatted)")
            }
            let date = fuzz.date()
            let formatted = PGTimestamp.format(date)
            #expect(!formatted.isEmpty && !formatted.utf8.contains(0))
            #expect(!date.pgText.isEmpty && !date.pgText.utf8.contains(0))
        }
    }

    @Test func boundTextNeverCarriesANul() {
        var fuzz = Fuzz(seed: 23)
        for _ in 0..<Fuzz.iterations {
            let s = fuzz.hostileText()
            #expect(!s.pgText.utf8.contains(0), "\(s.debugDescription)")
            #expect(![s, fuzz.hostileText()].pgText.utf8.contains(0))
        }
    }

    /// The positional accessors that parse in place (libpq's bytes, no String) on the same kinds of
    /// text, read back from a real server, answer as `PGValue` does.
    @Test func positionalAccessorsAgreeWithPGValue() throws {
        let db = try PGConnection(TestDatabase.serverURL())
        var fuzz = Fuzz(seed: 24)
        let texts: [String] = (0..<Fuzz.iterations).map { _ in
            switch fuzz.below(4) {
            case 0: return fuzz.numberText()
            case 1: return fuzz.timestampText()
            case 2: return fuzz.mutate(UUID().uuidString)
            default: return fuzz.hostileText()
            }
        }
        let rows = try db.query("select t from unnest(\(texts)::text[]) with ordinality as x(t, n) order by n")
        #expect(rows.count == texts.count)
        for row in rows {
            let cell = row[0]
            #expect(row.int(at: 0) == cell.int, "\(cell)")
            #expect(row.uuid(at: 0) == cell.uuid, "\(cell)")
            // strtod reads more forms than Double(String); what both read, they read alike.
            if let d = cell.double {
                let positional = row.double(at: 0)
                #expect(positional == d || (positional?.isNaN == true && d.isNaN), "\(cell)")
            }
            if let d = cell.date { #expect(d.timeIntervalSince1970.isFinite, "\(cell)") }
        }
    }

    /// The fast path for plain decimals gives strtod's Double bit for bit, or leaves the text to
    /// strtod: numeric cells as the server writes them (any scale, up to 20 digits), signs, stray
    /// points, exponents and junk.
    @Test func plainDecimalsReadAsStrtodReadsThem() {
        var fuzz = Fuzz(seed: 31)
        var texts = ["0", "-0", "0.00", "-0.0", ".5", "5.", ".", "-", "", "-.", "450", "292.50", "999999999999999",
                     "9999999999999999", "0.000000000000001", "123456789012345", "1.23456789012345", "-9007199254740993",
                     "1e5", "NaN", "Infinity", " 1", "1 ", "+1", "1.2.3", "0x10", "00000000000000012"]
        for _ in 0..<(Fuzz.iterations * 10) {
            var t = fuzz.chance(0.2) ? "-" : ""
            let whole = fuzz.int(0...12), frac = fuzz.int(0...8)
            for _ in 0..<whole { t += String(fuzz.below(10)) }
            if frac > 0 || fuzz.chance(0.3) { t += "." }
            for _ in 0..<frac { t += String(fuzz.below(10)) }
            texts.append(fuzz.chance(0.05) ? fuzz.mutate(t) : t)
        }
        texts += (0..<Fuzz.iterations).map { _ in fuzz.numberText() }
        var fast = 0
        for text in texts {
            let viaStrtod: Double? = text.withCString { start in
                var end: UnsafeMutablePointer<CChar>?
                let v = strtod(start, &end)
                return text.utf8.count > 0 && end == UnsafeMutablePointer(mutating: start) + text.utf8.count ? v : nil
            }
            let bytes = Array(text.utf8)
            guard let value = bytes.withUnsafeBufferPointer({ PGRow.plainDecimal($0) }) else { continue }
            fast += 1
            #expect(value.bitPattern == viaStrtod?.bitPattern, "\(text)")
        }
        #expect(fast > Fuzz.iterations * 8)  // most plain decimals take the fast path
    }
}
