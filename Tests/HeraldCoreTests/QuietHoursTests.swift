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

    // MARK: Leaving a window by a jump of the clocks

    @Test func chicagoFallBackWindowStartingInTheRepeatedHourEndsAtTheSecondOneOClock() {
        // 2026-11-01: 02:00 CDT → 01:00 CST at 07:00Z, so 01:00–01:59 happens twice. The window 01:30–01:00
        // is quiet all day but 01:00–01:29; entered at the first 01:30, it is left when the clocks go back
        // to 01:00, not a day later.
        let chicago = zone("America/Chicago")
        let w = QuietWindow(start: t("01:30"), end: t("01:00"))
        #expect(w.isQuiet(at: utc(2026, 11, 1, 5, 30), in: chicago))                        // 00:30 CDT
        #expect(w.end(after: utc(2026, 11, 1, 5, 30), in: chicago) == utc(2026, 11, 1, 6))  // first 01:00
        #expect(!w.isQuiet(at: utc(2026, 11, 1, 6), in: chicago))                           // 01:00 CDT
        #expect(!w.isQuiet(at: utc(2026, 11, 1, 6, 29, 59), in: chicago))
        #expect(w.end(after: utc(2026, 11, 1, 6, 10), in: chicago) == utc(2026, 11, 1, 6, 10))
        for now in [utc(2026, 11, 1, 6, 30), utc(2026, 11, 1, 6, 45), utc(2026, 11, 1, 6, 59, 59)] {
            #expect(w.isQuiet(at: now, in: chicago))                                        // 01:30–01:59 CDT
            #expect(w.end(after: now, in: chicago) == utc(2026, 11, 1, 7))                  // 01:00 CST
        }
        #expect(w.end(after: utc(2026, 11, 1, 6, 59, 59).addingTimeInterval(0.5), in: chicago) == utc(2026, 11, 1, 7))
        #expect(!w.isQuiet(at: utc(2026, 11, 1, 7), in: chicago))                           // 01:00 CST
        #expect(!w.isQuiet(at: utc(2026, 11, 1, 7, 29, 59), in: chicago))
        #expect(w.end(after: utc(2026, 11, 1, 7, 15), in: chicago) == utc(2026, 11, 1, 7, 15))
        // The second 01:30 enters the window again: it ends at 01:00 CST the next night.
        #expect(w.isQuiet(at: utc(2026, 11, 1, 7, 30), in: chicago))
        #expect(w.end(after: utc(2026, 11, 1, 7, 30), in: chicago) == utc(2026, 11, 2, 7))
        #expect(w.end(after: utc(2026, 11, 1, 20), in: chicago) == utc(2026, 11, 2, 7))      // 14:00 CST
    }

    @Test func fallBackLeavesASameDayWindowAtTheJump() {
        // 01:30–03:00 in Chicago on 2026-11-01: at 01:45 CDT the clocks are about to go back to 01:00,
        // which is outside; the window is entered again at the second 01:30 and ends at 03:00 CST.
        let chicago = zone("America/Chicago")
        let w = QuietWindow(start: t("01:30"), end: t("03:00"))
        #expect(w.end(after: utc(2026, 11, 1, 6, 45), in: chicago) == utc(2026, 11, 1, 7))
        #expect(!w.isQuiet(at: utc(2026, 11, 1, 7), in: chicago))
        #expect(w.end(after: utc(2026, 11, 1, 7, 30), in: chicago) == utc(2026, 11, 1, 9))
    }

    @Test func springForwardOverTheWholeOpenPartKeepsTheWindowShut() {
        // 2026-03-08 in Chicago: 02:00 CST → 03:00 CDT at 08:00Z. A 02:30–02:00 window is open only
        // 02:00–02:29, which does not happen that night: at 03:00 CDT it is still quiet, until 02:00 CDT
        // the next night.
        let chicago = zone("America/Chicago")
        let w = QuietWindow(start: t("02:30"), end: t("02:00"))
        #expect(w.isQuiet(at: utc(2026, 3, 8, 7, 30), in: chicago))                           // 01:30 CST
        #expect(w.isQuiet(at: utc(2026, 3, 8, 8), in: chicago))                               // 03:00 CDT
        #expect(w.end(after: utc(2026, 3, 8, 7, 30), in: chicago) == utc(2026, 3, 9, 7))
        // A window whose end falls in the gap ends at the jump, and one that starts there begins at it.
        #expect(QuietWindow(start: t("22:00"), end: t("02:30")).end(after: utc(2026, 3, 8, 7, 30), in: chicago)
                == utc(2026, 3, 8, 8))
        let morning = QuietWindow(start: t("02:30"), end: t("06:00"))
        #expect(!morning.isQuiet(at: utc(2026, 3, 8, 7, 59, 59), in: chicago))
        #expect(morning.isQuiet(at: utc(2026, 3, 8, 8), in: chicago))
        #expect(morning.end(after: utc(2026, 3, 8, 8), in: chicago) == utc(2026, 3, 8, 11))   // 06:00 CDT
    }

    @Test func sydneyBothTransitions() {
        let sydney = zone("Australia/Sydney")
        let w = QuietWindow(start: t("02:30"), end: t("02:00"))
        // 2026-04-05: 03:00 AEDT → 02:00 AEST at 16:00Z on the 4th. Entered at the first 02:30, the window
        // is left when the clocks go back to 02:00.
        #expect(w.isQuiet(at: utc(2026, 4, 4, 15, 30), in: sydney))                           // 02:30 AEDT
        #expect(w.end(after: utc(2026, 4, 4, 15, 30), in: sydney) == utc(2026, 4, 4, 16))
        #expect(!w.isQuiet(at: utc(2026, 4, 4, 16), in: sydney))                              // 02:00 AEST
        #expect(w.end(after: utc(2026, 4, 4, 16, 30), in: sydney) == utc(2026, 4, 5, 16))     // next night, AEST
        // 2026-10-04: 02:00 AEST → 03:00 AEDT at 16:00Z on the 3rd: 02:00–02:29 does not happen.
        #expect(w.isQuiet(at: utc(2026, 10, 3, 15, 30), in: sydney))                          // 01:30 AEST
        #expect(w.isQuiet(at: utc(2026, 10, 3, 16), in: sydney))                              // 03:00 AEDT
        #expect(w.end(after: utc(2026, 10, 3, 15, 30), in: sydney) == utc(2026, 10, 4, 15))   // 02:00 AEDT on the 5th
        // An ordinary overnight window across both.
        #expect(overnight.end(after: utc(2026, 4, 4, 15, 30), in: sydney) == utc(2026, 4, 4, 21))   // 07:00 AEST
        #expect(overnight.end(after: utc(2026, 10, 3, 15, 30), in: sydney) == utc(2026, 10, 3, 20)) // 07:00 AEDT
    }

    @Test func wholeDayWindowIsDeferredADayAtATime() {
        // 00:00–24:00 is always quiet: there is no end; a deferral goes to the next local midnight.
        let w = QuietWindow(start: t("00:00"), end: t("24:00"))
        let london = zone("Europe/London")
        #expect(w.isQuiet(at: utc(2026, 1, 25, 12), in: london))
        #expect(w.end(after: utc(2026, 1, 25, 12), in: london) == utc(2026, 1, 26))
        // 22:00–24:00 ends at midnight.
        #expect(QuietWindow(start: t("22:00"), end: t("24:00")).end(after: utc(2026, 1, 25, 23), in: london)
                == utc(2026, 1, 26))
    }
}
