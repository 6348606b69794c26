import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// Quiet hours and local-day deferrals held to an independent oracle: `Tests/Oracles/quiet_hours_oracle.py`
/// walks the wall clock minute by minute with Python's `zoneinfo` (the system tzdata) and knows only the
/// definitions. It generates the cases too, from a fixed seed, gathered around the DST transitions of zones
/// of both hemispheres (30-minute and 2-hour shifts, transitions at local midnight, a skipped day).
///
/// Needs `python3` with `zoneinfo` (3.9+) and the system tzdata (`scripts/deps.sh` installs it); without
/// them the suite is reported as skipped.
@Suite(.serialized, .enabled(if: Tools.pythonWithZoneinfo, "needs python3 with zoneinfo and the system tzdata (scripts/deps.sh installs them)"))
struct OracleTests {
    struct QuietCase: Decodable, Sendable, CustomStringConvertible {
        var zone: String, start: String, end: String, t: Int, local: String, offset: Int
        var quiet: Bool
        /// The first instant ≥ t that is not quiet; nil when there is none within three days (00:00–24:00).
        var until: Int?

        var description: String {
            "\(zone) \(start)–\(end) at \(t) (\(local), offset \(offset)): quiet \(quiet), until \(until.map(String.init) ?? "never")"
        }
    }
    struct DayCase: Decodable, Sendable, CustomStringConvertible {
        var zone: String, t: Int, local: String, offset: Int
        var day_start: Int, next_day: Int

        var description: String { "\(zone) at \(t) (\(local)): day \(day_start)..<\(next_day)" }
    }
    struct Answers: Decodable, Sendable {
        var seed: Int, tzdata: String
        var quiet: [QuietCase]
        var days: [DayCase]
    }

    static let seed = 20_261_101
    /// One run of the oracle serves both tests.
    static let oracle = Result { try runOracle() }

    static func runOracle() throws -> Answers {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Oracles/quiet_hours_oracle.py")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script.path, "--seed", String(seed)]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw OracleError("the oracle (python3 \(script.path)) exited \(p.terminationStatus): \(errText)")
        }
        return try JSONDecoder().decode(Answers.self, from: data)
    }

    struct OracleError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    static func date(_ t: Int) -> Date { Date(timeIntervalSince1970: Double(t)) }
    static func secs(_ d: Date) -> Int { Int(d.timeIntervalSince1970.rounded(.down)) }

    /// Mismatches, reported with the case; at most `limit` are printed.
    static func report(_ problems: [String], of total: Int, _ what: String, limit: Int = 25) {
        #expect(problems.isEmpty, """
            \(problems.count) of \(total) \(what) disagree with the oracle; the first:
            \(problems.prefix(limit).joined(separator: "\n"))
            """)
    }

    @Test func quietHoursJudgementDeferralAndDecisionAgreeWithTheOracle() throws {
        let answers = try Self.oracle.get()
        #expect(answers.quiet.count >= 3000)
        var data: [String] = [], judged: [String] = [], ends: [String] = [], decided: [String] = []
        let levels: [QuietLevel] = [.none, .criticalOnly, .all]
        let severities: [Severity] = [.watch, .attention, .critical]
        let actions: [QuietAction] = [.defer, .skip]
        for (i, c) in answers.quiet.enumerated() {
            guard let z = Zone.named(c.zone) else { data.append("unknown zone: \(c)"); continue }
            let now = Self.date(c.t)
            // The two tzdata copies must agree before the rules can be compared.
            let local = Zone.local(now, in: z)
            if z.secondsFromGMT(for: now) != c.offset || local.description != c.local {
                data.append("tzdata differs: Foundation says \(local) offset \(z.secondsFromGMT(for: now)): \(c)")
                continue
            }
            let window = QuietWindow(start: t(c.start), end: t(c.end))
            let quiet = window.isQuiet(at: now, in: z)
            if quiet != c.quiet { judged.append("isQuiet \(quiet): \(c)") }
            let end = window.end(after: now, in: z)
            if let until = c.until {
                if Self.secs(end) != until { ends.append("end \(Self.secs(end)) (\(Zone.local(end, in: z))): \(c)") }
            } else if end < now || !window.isQuiet(at: end, in: z) {
                ends.append("a window that never ends gave \(Self.secs(end)): \(c)")
            }

            // The decision: every level, severity and action in turn, no rate limits in the way.
            var s = Scenario()
            s.now = now
            s.prefs.timezone = c.zone
            s.prefs.quietHoursStart = window.start
            s.prefs.quietHoursEnd = window.end
            s.prefs.quietLevel = levels[i % 3]
            s.severity = severities[i / 3 % 3]
            s.prefs.quietAction = actions[i / 9 % 2]
            s.linksAlert = false; s.alert = nil; s.kind = "reminder"
            let held = c.quiet && !(s.prefs.quietLevel == .all || (s.prefs.quietLevel == .criticalOnly && s.severity == .critical))
            let r = s.decide()
            let expected: Decision
            // A critical reminder held back at `skip` is deferred, never dropped.
            let action: QuietAction = s.severity == .critical ? .defer : s.prefs.quietAction
            switch (held, action, c.until) {
            case (false, _, _): expected = .send
            case (true, .skip, _): expected = .skip(.quietHours)
            case (true, .defer, let until?): expected = .deferUntil(Self.date(until), .quietHours)
            case (true, .defer, nil): expected = .deferUntil(end, .quietHours)   // checked above
            }
            if r.decision != expected || r.trail["in_quiet_hours"] != .bool(c.quiet) {
                decided.append("\(r.decision) (\(s.prefs.quietLevel), \(s.severity!), \(s.prefs.quietAction)), expected \(expected): \(c)")
            }
            // A row deferred to the end is sent then, not judged quiet again. (Its age is not the point here:
            // some ends are more than `--max-age` away, and such a row would expire.)
            if case .deferUntil(let until, .quietHours) = r.decision, c.until != nil {
                s.now = until
                s.scheduledAt = until.addingTimeInterval(-60)
                let then = s.decide()
                if then.decision != .send { decided.append("deferred to \(until), then \(then.decision): \(c)") }
            }
        }
        Self.report(data, of: answers.quiet.count, "quiet-hours cases (tzdata \(answers.tzdata))")
        Self.report(judged, of: answers.quiet.count, "quiet judgements")
        Self.report(ends, of: answers.quiet.count, "ends of quiet hours")
        Self.report(decided, of: answers.quiet.count, "decisions")
    }

    @Test func dailyLimitDefersToTheNextLocalDay() throws {
        let answers = try Self.oracle.get()
        #expect(answers.days.count >= 500)
        var problems: [String] = []
        for c in answers.days {
            guard let z = Zone.named(c.zone) else { problems.append("unknown zone: \(c)"); continue }
            let now = Self.date(c.t)
            let local = Zone.local(now, in: z)
            if z.secondsFromGMT(for: now) != c.offset || local.description != c.local {
                problems.append("tzdata differs: Foundation says \(local) offset \(z.secondsFromGMT(for: now)): \(c)")
                continue
            }
            // Ten sends at the first instant of the local day fill it: deferred to the next local day.
            let full = (0..<10).map { SentRecord(recipient: alice, channel: .push, kind: "k\($0)", at: Self.date(c.day_start)) }
            let held = RateLimiter(history: full).check(recipient: alice, channel: .push, kind: "x", now: now, zone: z)
            if held.counters.sentToday != 10 || held.reason != .dailyLimit || held.until.map(Self.secs) != c.next_day {
                problems.append("sentToday \(held.counters.sentToday), until \(held.until.map { "\(Self.secs($0)) (\(Zone.local($0, in: z)))" } ?? "none"): \(c)")
            }
            // One second earlier is the day before: those do not count.
            let before = full.map { SentRecord(recipient: $0.recipient, channel: $0.channel, kind: $0.kind, at: Self.date(c.day_start - 1)) }
            let free = RateLimiter(history: before).check(recipient: alice, channel: .push, kind: "x", now: now, zone: z)
            if !free.isAllowed || free.counters.sentToday != 0 {
                problems.append("sends a second before the day counted (\(free.counters.sentToday)): \(c)")
            }
        }
        Self.report(problems, of: answers.days.count, "local-day cases (tzdata \(answers.tzdata))")
    }
}
