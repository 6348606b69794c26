import Foundation
import Testing
@testable import HeraldCore

@Suite struct PromptScheduleTests {
    let london = zone("Europe/London")
    let date = day("2026-01-25")

    /// Checks every prompt against segment bounds computed here from UTC instants, not from the code under test.
    func expectInSegments(_ prompts: [Date], from start: Date, to end: Date, sourceLocation: SourceLocation = #_sourceLocation) {
        let n = prompts.count
        let segment = (end.timeIntervalSince1970 - start.timeIntervalSince1970) / Double(n)
        for (i, p) in prompts.enumerated() {
            let centre = start.timeIntervalSince1970 + segment * (Double(i) + 0.5)
            let offset = p.timeIntervalSince1970 - centre
            #expect(abs(offset) <= 0.3 * segment, "prompt \(i) is \(offset) s from its centre", sourceLocation: sourceLocation)
            #expect(p >= start && p < end, sourceLocation: sourceLocation)
        }
        #expect(prompts == prompts.sorted(), sourceLocation: sourceLocation)
    }

    @Test func seed002FourPromptsSevenToTen() {
        let p = PromptSchedule.instants(user: alice, date: date, count: 4, wakingStartHour: 7, wakingEndHour: 22, zone: london)
        #expect(p.count == 4)
        // London is on GMT in January: 07:00–22:00 local is 07:00–22:00 UTC; segments of 3.75 h.
        expectInSegments(p, from: utc(2026, 1, 25, 7), to: utc(2026, 1, 25, 22))
        #expect(p[0] >= utc(2026, 1, 25, 7, 45) && p[0] <= utc(2026, 1, 25, 9, 52, 30))
    }

    @Test func onePrompt() {
        let p = PromptSchedule.instants(user: alice, date: date, count: 1, wakingStartHour: 8, wakingEndHour: 18,
                                        zone: zone("Asia/Tokyo"))
        #expect(p.count == 1)
        // 08:00–18:00 JST is 23:00–09:00 UTC; the centre is 13:00 JST ± 3 h.
        expectInSegments(p, from: utc(2026, 1, 24, 23), to: utc(2026, 1, 25, 9))
    }

    @Test func hundredPromptsAndClamping() {
        let p = PromptSchedule.instants(user: bob, date: date, count: 100, wakingStartHour: 9, wakingEndHour: 10, zone: london)
        #expect(p.count == 100)
        #expect(Set(p).count == 100)
        expectInSegments(p, from: utc(2026, 1, 25, 9), to: utc(2026, 1, 25, 10))
        #expect(PromptSchedule.instants(user: bob, date: date, count: 500, wakingStartHour: 9, wakingEndHour: 10, zone: london).count == 100)
        #expect(PromptSchedule.instants(user: bob, date: date, count: 0, wakingStartHour: 9, wakingEndHour: 10, zone: london).isEmpty)
        #expect(PromptSchedule.instants(user: bob, date: date, count: 3, wakingStartHour: 24, wakingEndHour: 10, zone: london).isEmpty)
    }

    @Test func windowAcrossMidnight() {
        let ny = zone("America/New_York")
        let p = PromptSchedule.instants(user: alice, date: date, count: 6, wakingStartHour: 22, wakingEndHour: 2, zone: ny)
        // 22:00 EST on the 25th to 02:00 EST on the 26th: 03:00–07:00 UTC on the 26th.
        expectInSegments(p, from: utc(2026, 1, 26, 3), to: utc(2026, 1, 26, 7))
    }

    @Test func equalHoursMeanTwentyFourHours() {
        let p = PromptSchedule.instants(user: alice, date: date, count: 8, wakingStartHour: 6, wakingEndHour: 6, zone: london)
        expectInSegments(p, from: utc(2026, 1, 25, 6), to: utc(2026, 1, 26, 6))
    }

    @Test func reproducibleForAUserAndDate() {
        let a = PromptSchedule.instants(user: alice, date: date, count: 10, wakingStartHour: 7, wakingEndHour: 22, zone: london)
        let again = PromptSchedule.instants(user: alice, date: date, count: 10, wakingStartHour: 7, wakingEndHour: 22, zone: london)
        #expect(a == again)
        // Whole seconds, so a stored run_after round-trips.
        #expect(a.allSatisfy { $0.timeIntervalSince1970 == $0.timeIntervalSince1970.rounded() })
        // The generator is the published SplitMix64, so the numbers do not depend on the process.
        var r1 = SplitMix64(seed: 0)
        #expect(r1.next() == 0xE220_A839_7B1D_CDAF)   // SplitMix64's published first output for seed 0
    }

    @Test func differentUsersAndDatesDiffer() {
        let a = PromptSchedule.instants(user: alice, date: date, count: 10, wakingStartHour: 7, wakingEndHour: 22, zone: london)
        let b = PromptSchedule.instants(user: bob, date: date, count: 10, wakingStartHour: 7, wakingEndHour: 22, zone: london)
        let next = PromptSchedule.instants(user: alice, date: date.adding(days: 1), count: 10, wakingStartHour: 7,
                                           wakingEndHour: 22, zone: london)
        #expect(a != b)
        // Same wall-clock offsets the next day would mean the date is not in the seed.
        #expect(a.map { $0.addingTimeInterval(86_400) } != next)
    }

    @Test func newYorkSpringForwardStaysInsideTheWindow() {
        let ny = zone("America/New_York")
        // 2026-03-08: 02:00 EST jumps to 03:00 EDT. A 00:00–06:00 window is 05:00–10:00 UTC: 5 real hours.
        let p = PromptSchedule.instants(user: alice, date: day("2026-03-08"), count: 5, wakingStartHour: 0,
                                        wakingEndHour: 6, zone: ny)
        expectInSegments(p, from: utc(2026, 3, 8, 5), to: utc(2026, 3, 8, 10))
        // A window starting inside the gap starts at the jump (07:00 UTC).
        let gap = PromptSchedule.instants(user: alice, date: day("2026-03-08"), count: 3, wakingStartHour: 2,
                                          wakingEndHour: 8, zone: ny)
        expectInSegments(gap, from: utc(2026, 3, 8, 7), to: utc(2026, 3, 8, 12))
        for prompt in gap {
            let local = Zone.local(prompt, in: ny)
            #expect(local.date == day("2026-03-08") && local.time >= t("03:00") && local.time < t("08:00"))
        }
    }

    @Test func newYorkFallBack() {
        let ny = zone("America/New_York")
        // 2026-11-01: 02:00 EDT becomes 01:00 EST. 00:00 EDT (04:00 UTC) to 06:00 EST (11:00 UTC): 7 real hours.
        let p = PromptSchedule.instants(user: bob, date: day("2026-11-01"), count: 7, wakingStartHour: 0,
                                        wakingEndHour: 6, zone: ny)
        expectInSegments(p, from: utc(2026, 11, 1, 4), to: utc(2026, 11, 1, 11))
    }
}
