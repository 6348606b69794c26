import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// The team's insight service's answer is hostile input: `ForecastInsight.parse` takes only an object
/// with the three texts (and optionally `daily_insight`), each within its bounds and free of control
/// and bidirectional-override characters; anything else throws, and herald's own words are used.
@Suite struct ForecastInsightTests {
    static let good = #"{"forecast_summary":"Pressure falls fast today.","why_explanation":"A 12 hPa drop.","comfort_tip":"Rest and keep warm.","daily_insight":{"summary_sentence":"Falls fast.","sign_off":"Be well."}}"#

    @Test func aWellFormedAnswerGivesItsWordsInTheLanguageAskedFor() throws {
        let w = try ForecastInsight.parse(Array(Self.good.utf8), locale: "ar-SA")
        #expect(w.summary == "Pressure falls fast today.")
        #expect(w.why == "A 12 hPa drop.")
        #expect(w.comfortTip == "Rest and keep warm.")
        #expect(w.dailyInsight["sign_off"] == "Be well.")
        #expect(w.locale == "ar")
        // Without daily_insight, herald builds it from the three texts.
        let bare = try ForecastInsight.parse(Array(#"{"forecast_summary":"a","why_explanation":"b","comfort_tip":"c","daily_insight":null}"#.utf8), locale: "en")
        #expect(bare.dailyInsight == ["summary_sentence": "a", "why_line": "b", "comfort_tip": "c"])
    }

    @Test(arguments: [
        ("not JSON", "Service Unavailable"),
        ("an array", #"[{"forecast_summary":"a","why_explanation":"b","comfort_tip":"c"}]"#),
        ("a summary missing", #"{"why_explanation":"b","comfort_tip":"c"}"#),
        ("a number for text", #"{"forecast_summary":5,"why_explanation":"b","comfort_tip":"c"}"#),
        ("an empty summary", #"{"forecast_summary":"  ","why_explanation":"b","comfort_tip":"c"}"#),
        ("a control character", #"{"forecast_summary":"a\u0007","why_explanation":"b","comfort_tip":"c"}"#),
        ("a bidirectional override", #"{"forecast_summary":"a\u202Eb","why_explanation":"b","comfort_tip":"c"}"#),
        ("a line break", #"{"forecast_summary":"a\nb","why_explanation":"b","comfort_tip":"c"}"#),
        ("an insight that is text", #"{"forecast_summary":"a","why_explanation":"b","comfort_tip":"c","daily_insight":"x"}"#),
        ("a summary too long", #"{"forecast_summary":""# + String(repeating: "a", count: 281) + #"","why_explanation":"b","comfort_tip":"c"}"#),
        ("trailing text", #"{"forecast_summary":"a","why_explanation":"b","comfort_tip":"c"} x"#),
    ])
    func garbageIsRefused(what: String, body: String) {
        #expect(throws: ForecastInsight.Invalid.self, "\(what)") { try ForecastInsight.parse(Array(body.utf8), locale: "en") }
    }

    @Test func anAnswerOverItsSizeIsRefusedUnread() {
        let huge = #"{"forecast_summary":"a","why_explanation":"b","comfort_tip":"c","daily_insight":{"x":""#
            + String(repeating: "y", count: ForecastInsight.maxBodyBytes) + #""}}"#
        #expect(throws: ForecastInsight.Invalid.self) { try ForecastInsight.parse(Array(huge.utf8), locale: "en") }
        let bigInsight = #"{"forecast_summary":"a","why_explanation":"b","comfort_tip":"c","daily_insight":{"x":""#
            + String(repeating: "y", count: ForecastInsight.maxInsightBytes) + #""}}"#
        #expect(throws: ForecastInsight.Invalid.self) { try ForecastInsight.parse(Array(bigInsight.utf8), locale: "en") }
    }

    /// Whatever the service answers — random bytes, mutated or truncated JSON, the right keys with
    /// hostile values — parse either throws or gives words that keep every rule: non-empty, within
    /// their bounds, trimmed, free of forbidden characters, and a daily insight object within its size.
    @Test func noAnswerGivesWordsThatBreakTheRules() {
        var fuzz = Fuzz(seed: 41)
        var accepted = 0
        for _ in 0..<Fuzz.bodyIterations {
            let body = Self.hostileAnswer(&fuzz)
            guard let w = try? ForecastInsight.parse(body, locale: fuzz.pick(["en", "ar", "pt-BR", "", "zz"])) else { continue }
            accepted += 1
            for (text, max) in [(w.summary, ForecastInsight.maxSummaryCharacters), (w.why, ForecastInsight.maxTextCharacters),
                                (w.comfortTip, ForecastInsight.maxTextCharacters)] {
                #expect(!text.isEmpty && text.count <= max)
                #expect(text == text.trimmingCharacters(in: .whitespaces))
                #expect(!text.unicodeScalars.contains(where: ForecastInsight.isForbidden))
            }
            #expect(w.dailyInsight.objectValue != nil && w.dailyInsight.jsonText.utf8.count <= ForecastInsight.maxInsightBytes)
            #expect(["en", "ar", "pt-BR"].contains(w.locale))
        }
        #expect(accepted > 50, "the fuzz should also reach answers that are usable (\(accepted))")
    }

    /// An answer with the service's keys and fuzzed values, or a provider-like body of any kind.
    static func hostileAnswer(_ fuzz: inout Fuzz) -> [UInt8] {
        guard fuzz.chance(0.6) else { return fuzz.body() }
        func value(_ fuzz: inout Fuzz) -> String {
            switch fuzz.below(5) {
            case 0: return fuzz.jsonValueText()
            case 1: return fuzz.jsonStringText()
            default: return "\"" + fuzz.pick(["Steady.", "  Falls fast  ", "تحديث", "a\\u2028b", "x"]) + "\""
            }
        }
        var fields = ["forecast_summary", "why_explanation", "comfort_tip"].map { "\"\($0)\":\(value(&fuzz))" }
        if fuzz.chance(0.5) { fields.append("\"daily_insight\":" + (fuzz.chance(0.5) ? fuzz.jsonValueText() : "{\"sign_off\":\"ok\"}")) }
        let text = "{" + fields.joined(separator: ",") + "}"
        return Array((fuzz.chance(0.2) ? fuzz.mutate(text) : text).utf8)
    }
}
