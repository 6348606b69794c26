import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldPostgres

/// Database cells are written by the apps: every accessor is fed random text and must answer or refuse,
/// never trap.
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
            _ = cell.int
            if let d = cell.date { #expect(!d.timeIntervalSince1970.isNaN, "\(text)") }
            _ = cell.double
            _ = cell.bool
            _ = cell.uuid
            _ = cell.array
            _ = cell.description
        }
    }

    @Test func timestampsParseOrRefuseAndEveryDateFormats() {
        var fuzz = Fuzz(seed: 22)
        for _ in 0..<Fuzz.iterations * 2 {
            let text = fuzz.timestampText()
            if let date = PGTimestamp.parse(text) {
                #expect(date.timeIntervalSince1970.isFinite, "\(text)")
                _ = PGTimestamp.format(date)
            }
            let date = fuzz.date()
            let formatted = PGTimestamp.format(date)
            #expect(!formatted.isEmpty && !formatted.utf8.contains(0))
            _ = date.pgText
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
            _ = row.double(at: 0)      // strtod: reads more forms than Double(String), so not compared
            _ = cell.date
        }
    }
}
