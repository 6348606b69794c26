import Foundation
import HeraldCore
import Testing

/// The JSON writer every batch record and webhook body goes through.
@Suite struct JSONValueTests {
    @Test func escapesWhatJSONRequiresAndNothingElse() {
        let v: JSONValue = ["s": .string("a\"b\\c\nd\re\tf\u{01}g/h")]
        #expect(v.jsonText == #"{"s":"a\"b\\c\nd\re\tf\u0001g/h"}"#)
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
}
