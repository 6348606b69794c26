import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// The traps the fuzz tests found, one by one: numbers from providers, payloads and headers that used to
/// end the process.
@Suite struct HostileNumberTests {
    let now = utc(2026, 1, 25, 3)

    @Test func retryAfterOfAbsurdSizeIsCappedOrIgnored() {
        let cap = Backoff.retryAfterCap
        #expect(Backoff.parseRetryAfter("99999999999999999999", now: now) == cap)
        #expect(Backoff.parseRetryAfter(String(repeating: "9", count: 400), now: now) == cap)
        #expect(Backoff.parseRetryAfter("86401", now: now) == cap)
        #expect(Backoff.parseRetryAfter("-1", now: now) == nil)
        #expect(Backoff.parseRetryAfter("1.5", now: now) == nil)
        #expect(Backoff.parseRetryAfter("inf", now: now) == nil)
        #expect(Backoff.parseRetryAfter("nan", now: now) == nil)
        // HTTP-dates with huge years used to overflow the day arithmetic (LocalDate.daysSinceEpoch * 86_400).
        #expect(Backoff.parseRetryAfter("Wed, 21 Oct 99999999999 07:28:00 GMT", now: now) == nil)
        #expect(Backoff.parseRetryAfter("Wed, 21 Oct 9223372036854775807 07:28:00 GMT", now: now) == nil)
        #expect(Backoff.parseRetryAfter("Wed Oct 21 07:28:00 9223372036854775807", now: now) == nil)
        #expect(Backoff.parseRetryAfter("Wednesday, 21-Oct-9223372036854775807 07:28:00 GMT", now: now) == nil)
        #expect(Backoff.parseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == cap)
        #expect(Backoff.parseRetryAfter("Sun, 25 Jan 2026 03:02:00 GMT", now: now) == 120)
    }

    @Test func rateLimitResetIsCappedOrIgnored() {
        let t = now.timeIntervalSince1970
        #expect(Backoff.parseResetTime(String(Int(t) + 60), now: now) == 60)
        #expect(Backoff.parseResetTime(String(Int(t) - 60), now: now) == 0)
        #expect(Backoff.parseResetTime("1e300", now: now) == Backoff.retryAfterCap)
        #expect(Backoff.parseResetTime(String(repeating: "9", count: 400), now: now) == Backoff.retryAfterCap)
        #expect(Backoff.parseResetTime("1e400", now: now) == Backoff.retryAfterCap)
        for garbage in ["inf", "-inf", "nan", "-1", "", "soon", "0x10", "1e-5e5"] {
            #expect(Backoff.parseResetTime(garbage, now: now) == nil, "\(garbage)")
        }
    }

    @Test func clampedWait() {
        #expect(Backoff.clampedWait(120) == 120)
        #expect(Backoff.clampedWait(1e300) == Backoff.retryAfterCap)
        #expect(Backoff.clampedWait(-5) == 0)
        #expect(Backoff.clampedWait(.nan) == nil)
        #expect(Backoff.clampedWait(.infinity) == nil)
        #expect(Backoff.delay(attempt: 1, retryAfter: 30, random: .nan) == 30)
        #expect(Backoff.delay(attempt: 1, retryAfter: nil, random: .nan) == 30)
    }

    @Test func intValueRefusesNumbersAnIntCannotHold() throws {
        #expect(JSONValue.number(1e300).intValue == nil)
        #expect(JSONValue.number(-1e300).intValue == nil)
        #expect(JSONValue.number(9_223_372_036_854_775_808).intValue == nil)   // 2^63
        #expect(JSONValue.number(.infinity).intValue == nil)
        #expect(JSONValue.number(.nan).intValue == nil)
        #expect(JSONValue.number(7.5).intValue == nil)
        #expect(JSONValue.number(7).intValue == 7)
        #expect(JSONValue.number(-9_223_372_036_854_775_808).intValue == Int.min)
        #expect(try JSONValue.parse(#"{"level":1e300}"#)["level"]?.intValue == nil)
    }

    @Test func iso8601WritesAnyDate() {
        #expect(ISO8601.string(Date(timeIntervalSince1970: 1e300)) == "9999-12-31T23:59:59.999999Z")
        // Never year 0000, which PostgreSQL refuses: the earliest text is the first instant of year 1.
        #expect(ISO8601.string(Date(timeIntervalSince1970: -1e300)) == "0001-01-01T00:00:00.000000Z")
        // Date.distantPast (what -infinity is read as) is 0000-12-30 in the proleptic Gregorian calendar.
        #expect(ISO8601.string(Date.distantPast) == "0001-01-01T00:00:00.000000Z")
        #expect(!ISO8601.isWritable(Date.distantPast))
        let yearOne = Date(timeIntervalSince1970: -62_135_596_800)
        #expect(ISO8601.string(yearOne) == "0001-01-01T00:00:00.000000Z")
        #expect(ISO8601.isWritable(yearOne))
        #expect(!ISO8601.isWritable(yearOne.addingTimeInterval(-0.5)))
        #expect(!ISO8601.isWritable(Date(timeIntervalSince1970: 253_402_300_800)))   // 10000-01-01
        #expect(!ISO8601.isWritable(Date(timeIntervalSince1970: .nan)))
        #expect(ISO8601.string(Date(timeIntervalSince1970: .infinity)) == "9999-12-31T23:59:59.999999Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: .nan)) == "1970-01-01T00:00:00.000000Z")
        #expect(ISO8601.string(utc(2026, 1, 25, 3)) == "2026-01-25T03:00:00.000000Z")
    }

    @Test func localDatesBeyondPostgreSQLsRangeAreRefused() {
        #expect(LocalDate("9223372036854775807-01-01") == nil)
        #expect(LocalDate("99999999999-01-01") == nil)
        #expect(LocalDate("5874897-12-31") == LocalDate(year: 5_874_897, month: 12, day: 31))
        #expect(LocalDate("10000-01-01")?.daysSinceEpoch == 2_932_897)
    }

    @Test func detailedAlertWithAbsurdNumbersFallsBackToTheGenericText() {
        let renderer = Renderer(options: RenderOptions(detailedLockScreen: true))
        let prefs = Preferences(userId: alice)
        let generic = Templates.genericAlert(.en)
        for payload in [#"{"metric_type":"steps","deviation_percent":1e30,"level":7}"#,
                        #"{"metric_type":"steps","deviation_percent":-1e300,"level":7}"#,
                        #"{"metric_type":"steps","deviation_percent":"nan","level":7}"#,
                        #"{"metric_type":"steps","deviation_percent":"inf","level":7}"#,
                        #"{"metric_type":"steps","deviation_percent":-25,"level":1e300}"#,
                        #"{"metric_type":"steps","deviation_percent":-25,"level":-3}"#] {
            let n = renderer.render(item(kind: "pattern_alert", payload: payload, scheduledAt: now), preferences: prefs, unreadInApp: 0)
            #expect(n.title == generic.title && n.body == generic.body, "\(payload)")
        }
        let ok = renderer.render(item(kind: "pattern_alert", payload: #"{"metric_type":"steps","deviation_percent":-25.4,"level":7}"#,
                                      scheduledAt: now), preferences: prefs, unreadInApp: 0)
        #expect(ok.body.contains("25%") && ok.body.contains("7 days"))
    }

    @Test func anAlertLevelThatIsNotASmallWholeNumberFailsTheRow() {
        for level in ["1e300", "-1e300", "7.5", "\"seven\"", "-1", "1001", "[7]", "123456789012345678901234567890"] {
            var s = Scenario()
            s.now = utc(2026, 1, 25, 12)
            s.payload = #"{"level":\#(level)}"#
            let r = s.decide()
            guard case .fail(let message) = r.decision else {
                Issue.record("level \(level): \(r.decision)")
                continue
            }
            #expect(message.contains("level"), "\(message)")
            #expect(r.trail["rule"] == "malformed_payload")
        }
        for level in ["7", "\"7\"", "7.0", "null", "21"] {
            var s = Scenario()
            s.now = utc(2026, 1, 25, 12)
            s.payload = #"{"level":\#(level)}"#
            #expect(s.decide().decision == .send, "level \(level)")
        }
        var low = Scenario()
        low.now = utc(2026, 1, 25, 12)
        low.alert?.currentLevel = 14
        low.payload = #"{"level":7}"#
        #expect(low.decide().decision == .skip(.superseded))
    }

    /// `JSONValue.numberText` (what a batch binds to a `numeric[]` column) is the text `pgJSONText`
    /// writes for the same number (what a jsonb document carried before), hostile numbers included.
    @Test func numberTextIsWhatJSONWrites() {
        var values: [Double] = [0, -0.0, 1, -1, 450, 292.5, 0.1, 1e15 - 1, 1e15, -1e15, 1e15 + 0.5, 1e20, -1e20, 1e-7,
                                .pi, .nan, -.nan, .infinity, -.infinity, .greatestFiniteMagnitude,
                                -.greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude,
                                Double(Int.max), Double(Int.min), 9_007_199_254_740_993]
        var fuzz = Fuzz(seed: 11)
        for _ in 0..<Fuzz.iterations {
            let bits = fuzz.next()
            values.append(Double(bitPattern: bits))                      // any bit pattern: NaNs, subnormals, huge
            values.append(Double(Int64(bitPattern: bits) >> 20) / 100)   // a reading with two decimals
        }
        for v in values {
            #expect((JSONValue.numberText(v) ?? "null") == JSONValue.number(v).pgJSONText, "\(v)")
        }
    }

    @Test func pgJSONTextWritesNulAsTheReplacementCharacter() throws {
        let v: JSONValue = ["a\u{0}": .string("x\u{0}y"), "list": [.string("\u{0}")]]
        #expect(v.jsonText == #"{"a\u0000":"x\u0000y","list":["\u0000"]}"#)
        #expect(v.pgJSONText == #"{"a\ufffd":"x\ufffdy","list":["\ufffd"]}"#)
        #expect(try JSONValue.parse(v.pgJSONText) == ["a\u{FFFD}": .string("x\u{FFFD}y"), "list": [.string("\u{FFFD}")]])
        let plain: JSONValue = ["k": .string("no nul \u{1}"), "n": 1.5]
        #expect(plain.pgJSONText == plain.jsonText)
        #expect(try JSONValue.parse(v.pgJSONTextAnyOrder) == JSONValue.parse(v.pgJSONText))
    }

    @Test func unusableMetricValuesAreCountedAndIgnored() {
        #expect(PatternEvaluator.unusableValues(in: [310, .nan, .infinity, -.infinity, 1e308]) == 3)
        let latest = LocalDate(year: 2026, month: 3, day: 10)
        var window = [Double](repeating: 400, count: PatternEvaluator.windowDays)
        let clean = PatternEvaluator.evaluate(window: window, latest: latest, threshold: PatternThreshold.defaults[0])
        window[50] = .infinity
        window[60] = -.infinity
        #expect(PatternEvaluator.evaluate(window: window, latest: latest, threshold: PatternThreshold.defaults[0]) == clean)
    }

    /// A payload or body nested far deeper than any real one parses or is refused; it does not exhaust
    /// the stack.
    @Test func deepNestingParsesOrIsRefused() {
        for depth in [100, 1_000, 10_000, 100_000] {
            let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let objects = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
            for text in [arrays, objects] {
                if let v = try? JSONValue.parse(text) { _ = v.jsonText; _ = v.pgJSONText }
            }
        }
    }
}
