import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// Every parser of outside input, fed a few thousand deterministic random inputs each. The property is
/// first that nothing traps (a trap would end the test process), then that the answers are well formed.
@Suite struct CoreFuzzTests {
    let now = utc(2026, 1, 25, 3)

    @Test func retryAfterIsNilOrWithinTheCap() {
        var fuzz = Fuzz(seed: 1)
        for _ in 0..<Fuzz.iterations * 3 {
            let header = fuzz.retryAfterText()
            if let seconds = Backoff.parseRetryAfter(header, now: now) {
                #expect(seconds.isFinite && seconds >= 0 && seconds <= Backoff.retryAfterCap, "\(header.debugDescription) → \(seconds)")
            }
        }
    }

    @Test func httpDatesAreNilOrFinite() {
        var fuzz = Fuzz(seed: 2)
        for _ in 0..<Fuzz.iterations * 3 {
            let text = fuzz.chance(0.5) ? fuzz.httpDateText() : fuzz.mutate(fuzz.httpDateText())
            if let date = Backoff.httpDate(text) {
                #expect(date.timeIntervalSince1970.isFinite, "\(text.debugDescription)")
            }
        }
    }

    @Test func backoffDelayIsFiniteForAnyInput() {
        var fuzz = Fuzz(seed: 3)
        let specials: [Double?] = [nil, .nan, .infinity, -.infinity, 1e300, -1e300, 0, -0.0, 5, 1e15]
        for _ in 0..<Fuzz.iterations {
            let attempt = fuzz.chance(0.5) ? fuzz.int(-5...50) : fuzz.pick([Int.min, Int.max, 0, -1])
            let after = fuzz.chance(0.5) ? fuzz.pick(specials) : Double(bitPattern: fuzz.next())
            let random = fuzz.chance(0.5) ? Double(fuzz.below(1000)) / 1000 : Double(bitPattern: fuzz.next())
            let d = Backoff.delay(attempt: attempt, retryAfter: after, random: random)
            #expect(d.isFinite && d >= 0 && d <= max(Backoff.retryAfterCap, Backoff.cap * 1.2), "\(attempt) \(String(describing: after)) \(random) → \(d)")
        }
    }

    @Test func jsonParseAndEveryAccessor() {
        var fuzz = Fuzz(seed: 4)
        for _ in 0..<Fuzz.bodyIterations {
            let text = fuzz.chance(0.8) ? fuzz.jsonText() : String(decoding: fuzz.body(), as: UTF8.self)
            guard let value = try? JSONValue.parse(text) else { continue }
            visit(value, depth: 0)
        }
    }

    /// Reads every accessor of every value in the tree, and checks that the writer's text reads back.
    private func visit(_ value: JSONValue, depth: Int) {
        _ = value.stringValue
        _ = value.intValue
        _ = value.doubleValue
        _ = value.boolValue
        _ = value.objectValue
        for key in Fuzz.providerKeys { _ = value[key] }
        if depth == 0 {
            let text = value.jsonText
            #expect((try? JSONValue.parse(text)) == value, "round trip of \(text.prefix(200))")
            let pg = value.pgJSONText
            #expect(!pg.contains("\\u0000") && !pg.utf8.contains(0), "\(pg.prefix(200))")
            #expect((try? JSONValue.parse(pg)) != nil)
        }
        switch value {
        case .array(let a): for v in a { visit(v, depth: depth + 1) }
        case .object(let o): for v in o.values { visit(v, depth: depth + 1) }
        default: break
        }
    }

    @Test func iso8601ParsesOrRefusesAndWritesAnyDate() {
        var fuzz = Fuzz(seed: 5)
        for _ in 0..<Fuzz.iterations {
            let text = fuzz.timestampText()
            if let date = ISO8601.parse(text) {
                #expect(date.timeIntervalSince1970.isFinite)
                // An offset may carry a date just past the four-digit years (and year 0000 is written as
                // 0001-01-01, which PostgreSQL reads); within them, it reads back.
                if ISO8601.isWritable(date) {
                    #expect(ISO8601.parse(ISO8601.string(date)).map { abs($0.timeIntervalSince(date)) < 1e-3 } == true, "\(text)")
                }
            }
            let date = fuzz.date()
            let written = ISO8601.string(date)
            #expect(!written.isEmpty)
        }
    }

    /// A date read is a real month and a day of at most 31 that writes back as itself; its day count
    /// converts both ways, and the next day is one later. A time read is within the day.
    @Test func localTimesAndDatesParseOrRefuse() {
        var fuzz = Fuzz(seed: 6)
        for _ in 0..<Fuzz.iterations {
            let text = fuzz.chance(0.5) ? fuzz.timestampText() : fuzz.pick([fuzz.numberText(), fuzz.hostileText()])
            if let d = LocalDate(text) {
                #expect((0...LocalDate.maxYear).contains(d.year) && (1...12).contains(d.month) && (1...31).contains(d.day),
                        "\(text.debugDescription) → \(d)")
                #expect(LocalDate(d.description) == d, "\(text.debugDescription) → \(d)")
                let days = d.daysSinceEpoch
                #expect(LocalDate(daysSinceEpoch: days).daysSinceEpoch == days, "\(d)")
                #expect(d.adding(days: 1).daysSinceEpoch == days + 1, "\(d)")
                #expect(d < d.adding(days: 1), "\(d)")
            }
            let clock = fuzz.chance(0.5) ? String(text.suffix(8)) : "\(fuzz.numberText()):\(fuzz.numberText())"
            if let t = LocalTime(clock) {
                #expect((0...86_400).contains(t.secondsSinceMidnight), "\(clock)")
            }
        }
    }

    @Test func patternEvaluatorNeverTrapsOnPoisonValues() {
        var fuzz = Fuzz(seed: 7)
        let poison: [Double] = [.nan, .infinity, -.infinity, 1e308, -1e308, .greatestFiniteMagnitude, 0, -0.0,
                                .leastNonzeroMagnitude, 1e-300]
        let latest = LocalDate(year: 2026, month: 3, day: 10)
        for i in 0..<300 {
            let base = Double(fuzz.int(1...20_000))
            var window = (0..<PatternEvaluator.windowDays).map { _ in
                fuzz.chance(0.1) ? Double.nan : base * (0.5 + Double(fuzz.below(100)) / 100)
            }
            for _ in 0..<fuzz.int(0...8) { window[fuzz.below(window.count)] = fuzz.pick(poison) }
            if i % 10 == 0 { window = window.map { _ in fuzz.pick(poison) } }
            let threshold = fuzz.pick(PatternThreshold.defaults)
            if let e = PatternEvaluator.evaluate(window: window, latest: latest, threshold: threshold) {
                #expect([3, 7, 14, 21].contains(e.level))
                #expect(e.duration >= 3 && e.duration <= PatternEvaluator.windowDays)
            }
            // The day-by-day walk: every day from the first with a usable value to L, in order, with only
            // finite values; a deviating day has its numbers; its run of deviating days ending at L is the
            // episode's duration.
            let pairs = window.enumerated().map { (latest.adding(days: $0.offset - window.count + 1), $0.element) }
            let days = PatternEvaluator.days(pairs, latest: latest, threshold: threshold)
            #expect(days.isEmpty == !window.contains { $0.isFinite })
            #expect(days.count <= PatternEvaluator.windowDays)
            #expect(days.last.map { $0.date == latest } ?? true)
            #expect(zip(days, days.dropFirst()).allSatisfy { $0.date.adding(days: 1) == $1.date })
            #expect(days.allSatisfy { $0.value?.isFinite ?? true })
            #expect(days.allSatisfy { !$0.deviates || ($0.baseline != nil && $0.recent != nil && $0.deviationPercent != nil) })
            let run = days.reversed().prefix { $0.deviates }.count
            let episode = PatternEvaluator.evaluate(window: window, latest: latest, threshold: threshold)
            #expect(episode?.duration == (run >= 3 ? run : nil), "a run of \(run) deviating days ending at L")
        }
    }

    @Test func rendererNeverTrapsOnPayloadNumbers() {
        var fuzz = Fuzz(seed: 8)
        let renderer = Renderer(options: RenderOptions(detailedLockScreen: true))
        let prefs = Preferences(userId: alice)
        for _ in 0..<Fuzz.iterations {
            var payload: [String: String] = [:]
            payload["metric_type"] = "\"steps\""
            payload["deviation_percent"] = fuzz.chance(0.5) ? fuzz.jsonNumberText() : "\"\(fuzz.numberText())\""
            payload["level"] = fuzz.chance(0.5) ? "7" : fuzz.chance(0.5) ? fuzz.jsonNumberText() : "\"\(fuzz.numberText())\""
            if fuzz.chance(0.3) { payload["pattern_type"] = fuzz.jsonStringText() }
            let text = "{" + payload.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
            let row = item("push", kind: fuzz.pick(["pattern_alert", "daily_forecast", "reminder", "system"]),
                           payload: text, scheduledAt: now)
            let n = renderer.render(row, preferences: prefs, unreadInApp: fuzz.pick([0, 1, -5, Int.max - 1]))
            #expect(!n.title.isEmpty)
        }
    }

    /// A row fails as a malformed payload exactly when its payload is not a JSON object, an alert's level
    /// is there but not a whole number of days within 0…`Decider.maxLevel`, or a forecast's date is there
    /// but not a YYYY-MM-DD string. The message, bound for `last_error`, has no control character.
    @Test func deciderNeverTrapsOnPayloadNumbers() {
        var fuzz = Fuzz(seed: 9)
        for _ in 0..<Fuzz.iterations {
            var s = Scenario()
            let level = fuzz.chance(0.5) ? fuzz.jsonNumberText() : "\"\(fuzz.numberText().replacingOccurrences(of: "\u{0}", with: ""))\""
            s.payload = fuzz.chance(0.9) ? "{\"level\":\(level)}" : fuzz.jsonText()
            s.kind = fuzz.pick(["pattern_alert", "daily_forecast"])
            if s.kind == "daily_forecast" { s.payload = "{\"date\":\(fuzz.chance(0.5) ? fuzz.jsonStringText() : fuzz.jsonNumberText())}" }
            let malformed: Bool
            if case .object(let payload)? = try? JSONValue.parse(s.payload) {
                if s.kind == "pattern_alert", let raw = payload["level"], raw != .null {
                    malformed = !(raw.intValue.map { (0...Decider.maxLevel).contains($0) } ?? false)
                } else if s.kind == "daily_forecast", let raw = payload["date"] {
                    malformed = raw.stringValue.flatMap { LocalDate($0) } == nil
                } else {
                    malformed = false
                }
            } else {
                malformed = true
            }
            let r = s.decide()
            #expect((r.trail["rule"] == "malformed_payload") == malformed, "\(s.kind) \(s.payload.debugDescription) → \(r.decision)")
            if case .fail(let message) = r.decision {
                #expect(malformed, "\(s.kind) \(s.payload.debugDescription) → \(message)")
                #expect(!message.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(message.debugDescription)")
            }
        }
    }

    /// The weather API's answer (the forecasts phase): shaped like Open-Meteo's, with times and numbers
    /// of any kind. Half the answers are well formed and span more than a day, so that a 24-hour change
    /// can be read from them.
    @Test func hourlyWeatherParsesOrRefuses() {
        var fuzz = Fuzz(seed: 10)
        for _ in 0..<Fuzz.bodyIterations {
            let wellFormed = fuzz.chance(0.5)
            let n = wellFormed ? fuzz.int(36...48) : fuzz.int(0...30)
            let times = (0..<n).map { i -> String in
                wellFormed || fuzz.chance(0.9) ? "\"2026-01-\(String(format: "%02d", 24 + i / 24))T\(String(format: "%02d", i % 24)):00\""
                    : fuzz.chance(0.5) ? "\"\(fuzz.timestampText())\"" : fuzz.jsonValueText(depth: 5)
            }
            let pressure = (0..<(wellFormed || fuzz.chance(0.9) ? n : fuzz.int(0...30))).map { _ in
                fuzz.chance(0.8) ? fuzz.jsonNumberText() : fuzz.pick(wellFormed ? ["null"] : ["null", "\"x\"", "[]"])
            }
            let text = #"{"hourly":{"time":[\#(times.joined(separator: ","))],"pressure_msl":[\#(pressure.joined(separator: ","))]}}"#
            guard let json = try? JSONValue.parse(wellFormed || fuzz.chance(0.9) ? text : fuzz.mutate(text)),
                  let weather = try? HourlyWeather(json: json) else { continue }
            // One pressure per time; a change is the difference of two of them; its risk is the rule's:
            // a drop of 10 hPa or more is HIGH, of 5 or more MODERATE, anything else LOW.
            #expect(weather.pressure.count == weather.times.count)
            let day = LocalDate(year: 2026, month: 1, day: wellFormed && fuzz.chance(0.8) ? 24 : fuzz.int(20...28))
            if let change = weather.pressureChange(from: day, at: LocalTime(hour: fuzz.int(0...23), minute: 0)) {
                let readings = weather.pressure.compactMap { $0 }
                #expect(readings.contains { p0 in readings.contains { p1 in p1 - p0 == change || (p1 - p0).isNaN && change.isNaN } },
                        "\(change) is not the difference of two readings")
                let risk = FlareForecast.risk(pressureChangeHPa: change, thresholds: .init())
                #expect(risk == (-change >= 10 ? .high : -change >= 5 ? .moderate : .low), "\(change) → \(risk)")
            }
        }
    }
}
