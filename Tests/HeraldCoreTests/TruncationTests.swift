import Foundation
import Testing
@testable import HeraldCore

@Suite struct TruncationTests {
    @Test func shortTextIsUntouched() {
        #expect(Truncation.prefix("Hello", maxUTF8Bytes: 5) == "Hello")
        #expect(Truncation.prefix("", maxUTF8Bytes: 0) == "")
    }

    @Test func asciiCutEndsWithEllipsis() {
        #expect(Truncation.prefix("Hello, world", maxUTF8Bytes: 8) == "Hello…")     // 5 + 3 bytes
        #expect(Truncation.prefix("Hello, world", maxUTF8Bytes: 11) == "Hello, w…")
        #expect(Truncation.prefix("Hello, world", maxUTF8Bytes: 3) == "…")
        #expect(Truncation.prefix("Hello, world", maxUTF8Bytes: 2) == "He")           // "…" does not fit
        #expect(Truncation.prefix("Hello, world", maxUTF8Bytes: 0) == "")
    }

    @Test func arabicIsCutBetweenLetters() {
        let s = "مرحبا بالعالم"                                   // letters are 2 bytes each
        for limit in 0...s.utf8.count + 2 {
            let cut = Truncation.prefix(s, maxUTF8Bytes: limit)
            #expect(cut.utf8.count <= limit)
            #expect(s.hasPrefix(cut.hasSuffix("…") ? String(cut.dropLast()) : cut))
        }
        #expect(Truncation.prefix(s, maxUTF8Bytes: 8) == "مر…")             // 2 × 2 + 3 = 7; a third letter would be 9
        #expect(Truncation.prefix(s, maxUTF8Bytes: 9) == "مرح…")
    }

    @Test func emojiGraphemesAreNeverSplit() {
        let family = "👨‍👩‍👧"                                       // 5 scalars, 18 bytes, one Character
        let flag = "🇸🇦"                                          // 2 scalars, 8 bytes
        let s = "Hi " + family + flag + " okay!"
        #expect(Truncation.prefix(s, maxUTF8Bytes: 3 + 17 + 3) == "Hi …")  // the family does not fit whole
        #expect(Truncation.prefix(s, maxUTF8Bytes: 3 + 18 + 3) == "Hi " + family + "…")
        #expect(Truncation.prefix(s, maxUTF8Bytes: 3 + 18 + 7 + 3) == "Hi " + family + "…")
        #expect(Truncation.prefix(s, maxUTF8Bytes: 3 + 18 + 8 + 3) == "Hi " + family + flag + "…")
        // Combining marks stay with their letter: "é" as e + U+0301.
        let e = "e\u{301}"
        #expect(Truncation.prefix(e + e + e, maxUTF8Bytes: 3 + 3) == e + "…")
        #expect(Truncation.prefix(e + e + e, maxUTF8Bytes: 3 + 5) == e + "…")
    }

    @Test func smsLimitIs1600UTF16Units() {
        let long = String(repeating: "a", count: 2000)
        let cut = Truncation.sms(long)
        #expect(cut.utf16.count == 1600)
        #expect(cut.hasSuffix("…"))
        #expect(Truncation.sms(String(repeating: "a", count: 1600)) == String(repeating: "a", count: 1600))
        let emoji = String(repeating: "😀", count: 900)            // 2 UTF-16 units each
        let e = Truncation.sms(emoji)
        #expect(e.utf16.count <= 1600)
        #expect(e.dropLast().allSatisfy { $0 == "😀" })
        #expect(e.count == 800)                                     // 799 faces + "…"
    }

    /// A push body the way an adapter would encode it.
    struct Push: Encodable { var title: String; var body: String; var data = ["deep_link": "herald://inbox"] }
    func encode(_ title: String, _ body: String) throws -> Data {
        let e = JSONEncoder(); e.outputFormatting = .sortedKeys
        return try e.encode(Push(title: title, body: body))
    }

    @Test func fitShortensTheBodyFirst() throws {
        let title = "تنبيه صحي"
        let body = String(repeating: "النوم 😴 ", count: 400)
        let fitted = try #require(try Truncation.fit(title: title, body: body, limitBytes: 4096, encode: encode))
        #expect(fitted.encoded.count <= 4096)
        #expect(fitted.encoded.count > 4096 - 40)                    // as much as fits, give or take a grapheme
        #expect(fitted.title == title)
        #expect(fitted.body.hasSuffix("…"))
        #expect(body.hasPrefix(String(fitted.body.dropLast())))
        #expect(try encode(fitted.title, fitted.body) == fitted.encoded)
    }

    @Test func fitLeavesWhatFitsAlone() throws {
        let fitted = try #require(try Truncation.fit(title: "Hi", body: "there", limitBytes: 4096, encode: encode))
        #expect(fitted.title == "Hi" && fitted.body == "there")
    }

    @Test func fitShortensTheTitleWhenTheBodyIsNotEnough() throws {
        let title = String(repeating: "T", count: 200)
        let overhead = try encode("", "").count
        let fitted = try #require(try Truncation.fit(title: title, body: "body", limitBytes: overhead + 50, encode: encode))
        #expect(fitted.body == "")
        #expect(fitted.title.hasSuffix("…"))
        #expect(fitted.encoded.count <= overhead + 50)
        #expect(fitted.title.utf8.count == 50)                       // 47 × "T" + "…"
        #expect(try Truncation.fit(title: title, body: "body", limitBytes: overhead - 1, encode: encode) == nil)
    }
}
