import Foundation
import HeraldCore
import Testing

/// The JSON writer every batch record and webhook body goes through.
@Suite struct JSONValueTests {
    @Test func escapesWhatJSONRequiresAndNothingElse() {
        let v: JSONValue = ["s": .string("a\"b\\c\nd\re\tf\u{01}g/h")]
        #expect(v.jsonText == #"{"s":"a\"b\\c\nd\re\tf\u0001g/h"}"#)
    }

    /// jsonb keeps numbers beyond Double's range (1e400) and writes them out in full: such a number reads
    /// as null, and the rest of the document is read (it used to fail the whole payload).
    @Test func aNumberBeyondDoubleReadsAsNull() throws {
        let v = try JSONValue.parse(#"{"title":"Hi","recent_value":1e400,"low":-1e400,"tiny":1e-400,"n":2}"#)
        #expect(v["title"] == "Hi")
        #expect(v["recent_value"] == .null)
        #expect(v["low"] == .null)
        #expect(v["tiny"] == .number(0))
        #expect(v["n"] == .number(2))
    }

    @Test func roundTripsUnicodeAndNesting() throws {
        let tricky = ["", "plain", "تحديث صحي", "👨‍👩‍👧‍👦 family", "🇸🇦", "e\u{301}", "\u{2028}line", "quote\"and\\slash", "\u{7f}del"]
        for s in tricky {
            let v: JSONValue = ["text": .string(s), "list": [.string(s), 1, 2.5, true, nil], "nested": ["k": .string(s)]]
            #expect(try JSONValue.parse(v.jsonText) == v, "round trip of \(s.debugDescription)")
        }
    }

    @Test func keysAreSortedSoEqualValuesWriteEqualBytes() {
        let a: JSONValue = ["b": 1, "a": 2, "c": ["z": 1, "y": 2]]
        let b: JSONValue = ["c": ["y": 2, "z": 1], "a": 2, "b": 1]
        #expect(a.jsonText == b.jsonText)
        #expect(a.jsonText == #"{"a":2,"b":1,"c":{"y":2,"z":1}}"#)
    }

    @Test func numbers() {
        #expect(JSONValue.number(42).jsonText == "42")
        #expect(JSONValue.number(-0.5).jsonText == "-0.5")
        #expect(JSONValue.number(.infinity).jsonText == "null")
    }

    @Test func parsesStrictJSONAndRefusesHostileText() throws {
        #expect(try JSONValue.parse(#" {"a": [1, -2.5e2, true, false, null], "b": "x\u00e9\ud83d\ude00\n\/"} "#)
            == ["a": [1, -250, true, false, nil], "b": .string("xé😀\n/")])
        #expect(try JSONValue.parse(#"{"k": 1, "k": 2}"#) == ["k": 2])
        #expect(try JSONValue.parse("0") == 0)
        let bad = ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "1e", "\"\\ud800\"", "\"\\udc00x\"",
                   "\"a\u{01}b\"", "\"\\x\"", "tru", "nul", "{} x", "[1] [2]", "\"unterminated",
                   String(repeating: "[", count: 600) + String(repeating: "]", count: 600)]
        for text in bad {
            #expect(throws: (any Error).self, "\(text.prefix(20).debugDescription)") { try JSONValue.parse(text) }
        }
        #expect(throws: (any Error).self) { try JSONValue.parse(Data([0x22, 0xFF, 0x22])) }  // invalid UTF-8
    }
}
