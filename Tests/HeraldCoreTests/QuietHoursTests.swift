import Foundation
import Testing
@testable import HeraldCore

@Suite struct QuietHoursTests {
    let overnight = QuietWindow(start: t("22:00"), end: t("07:00"))

    @Test func spanningMidnight() {
        #expect(overnight.contains(t("22:00")))
        #expect(overnight.contains(t("23:59:59")))
        #expect(overnight.contains(t("00:00")))
        #expect(overnight.contains(t("06:59:59")))
        #expect(!overnight.contains(t("07:00")))
        #expect(!overnight.contains(t("21:59:59")))
        #expect(!overnight.contains(t("12:00")))
    }

    @Test func sameDayWindow() {
        let nap = QuietWindow(start: t("13:00"), end: t("14:30"))
        #expect(!nap.contains(t("12:59:59")))
        #expect(nap.contains(t("13:00")))
        #expect(nap.contains(t("14:29:59")))
        #expect(!nap.contains(t("14:30")))
        #expect(!nap.contains(t("02:00")))
    }

    @Test func noWindowWhenMissingOrEqual() {
        #expect(QuietWindow(start: nil, end: t("07:00")).isNone)
        #expect(QuietWindow(start: t("22:00"), end: nil).isNone)
        #expect(QuietWindow(start: t("22:00"), end: t("22:00")).isNone)
        #expect(!QuietWindow(start: t("22:00"), end: t("22:00")).contains(t("22:00")))
        #expect(QuietWindow(start: t("22:00"), end: t("22:00")).trailText == nil)
        #expect(overnight.trailText == "22:00:00-07:00:00")
    }

    @Test func seed000ThreeZones() {
        let now = utc(2026, 1, 25, 3)
        #expect(!overnight.isQuiet(at: now, in: zone("America/Los_Angeles")))   // 19:00
        #expect(overnight.isQuiet(at: now, in: zone("Europe/London")))          // 03:00
        #expect(!overnight.isQuiet(at: now, in: zone("Asia/Tokyo")))            // 12:00
    }

    @Test func endOfAnOrdinaryNight() {
        let london = zone("Europe/London")
        #expect(overnight.end(after: utc(2026, 1, 25, 3), in: london) == utc(2026, 1, 25, 7))
        #expect(overnight.end(after: utc(2026, 1, 24, 22, 30), in: london) == utc(2026, 1, 25, 7))
        // Not quiet: now.
        #expect(overnight.end(after: utc(2026, 1, 25, 12), in: london) == utc(2026, 1, 25, 12))
        // A same-day window ends the same day.
        let nap = QuietWindow(start: t("13:00"), end: t("14:30"))
        #expect(nap.end(after: utc(2026, 1, 25, 13, 10), in: london) == utc(2026, 1, 25, 14, 30))
        // Tokyo: 23:00 local on the 25th is 14:00Z; the window ends 07:00 local on the 26th = 22:00Z on the 25th.
        #expect(overnight.end(after: utc(2026, 1, 25, 14), in: zone("Asia/Tokyo")) == utc(2026, 1, 25, 22))
    }

    @Test func endInASpringForwardGapIsTheJump() {
        let ny = zone("America/New_York")
        let w = QuietWindow(start: t("22:00"), end: t("02:30"))   // 02:30 does not exist on 2026-03-08
        let now = utc(2026, 3, 8, 6, 30)                           // 01:30 EST
        #expect(w.isQuiet(at: now, in: ny))
        #expect(w.end(after: now, in: ny) == utc(2026, 3, 8, 7))   // 03:00 EDT
        #expect(!w.isQuiet(at: utc(2026, 3, 8, 7), in: ny))
        // The evening before: same answer.
        #expect(w.end(after: utc(2026, 3, 8, 3, 30), in: ny) == utc(2026, 3, 8, 7))
        // Window ending after the gap is an ordinary end, one hour earlier in UTC than the night before.
        #expect(overnight.end(after: now, in: ny) == utc(2026, 3, 8, 11))      // 07:00 EDT
        #expect(overnight.end(after: utc(2026, 3, 7, 6), in: ny) == utc(2026, 3, 7, 12))  // 07:00 EST
    }

    @Test func endInAFallBackOverlapIsTheFirstEndThenTheSecond() {
        let ny = zone("America/New_York")
        let w = QuietWindow(start: t("22:00"), end: t("01:30"))
        // First pass through 01:00 (EDT, 05:00Z): ends at the first 01:30.
        #expect(w.end(after: utc(2026, 11, 1, 5), in: ny) == utc(2026, 11, 1, 5, 30))
        // 01:45 EDT: out of the window.
        #expect(!w.isQuiet(at: utc(2026, 11, 1, 5, 45), in: ny))
        // Clocks go back to 01:00 EST at 06:00Z: quiet again, until the second 01:30.
        #expect(w.isQuiet(at: utc(2026, 11, 1, 6), in: ny))
        #expect(w.end(after: utc(2026, 11, 1, 6, 10), in: ny) == utc(2026, 11, 1, 6, 30))
        // The night after: ordinary again (EST).
        #expect(w.end(after: utc(2026, 11, 2, 4), in: ny) == utc(2026, 11, 2, 6, 30))
    }
}
