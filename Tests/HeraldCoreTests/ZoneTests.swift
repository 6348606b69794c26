import Foundation
import Testing
@testable import HeraldCore

@Suite struct ZoneTests {
    @Test func namedAcceptsIANAIdentifiersOnly() {
        #expect(Zone.named("America/New_York")?.identifier == "America/New_York")
        #expect(Zone.named("UTC") != nil)
        #expect(Zone.named("Mars/Olympus") == nil)
        #expect(Zone.named("") == nil)
        #expect(Zone.named("GMT+5") == nil)           // Foundation accepts it; it is not an IANA zone
        #expect(Zone.named("GMT+0500") == nil)
        #expect(Zone.named("Asia/Kolkata") != nil)    // current name, missing from ICU's canonical list
        #expect(Zone.named("Etc/UTC") != nil)
        #expect(Zone.named("america/new_york") == nil)
        // Cached answers are the same answers.
        #expect(Zone.named("Mars/Olympus") == nil)
        #expect(Zone.named("America/New_York") == Zone.named("America/New_York"))
    }

    @Test func seed000ThreeZonesAtOneInstant() {
        let now = utc(2026, 1, 25, 3)
        #expect(Zone.local(now, in: zone("America/Los_Angeles")) == wall("2026-01-24", "19:00"))
        #expect(Zone.local(now, in: zone("Europe/London")) == wall("2026-01-25", "03:00"))
        #expect(Zone.local(now, in: zone("Asia/Tokyo")) == wall("2026-01-25", "12:00"))
    }

    @Test func localFloorsFractionalSeconds() {
        let now = utc(2026, 1, 25, 3).addingTimeInterval(59.9)
        #expect(Zone.local(now, in: zone("UTC")) == wall("2026-01-25", "03:00:59"))
    }

    @Test func localAcrossNewYorkTransitions() {
        let ny = zone("America/New_York")
        #expect(Zone.local(utc(2026, 3, 8, 6, 59, 59), in: ny) == wall("2026-03-08", "01:59:59"))
        #expect(Zone.local(utc(2026, 3, 8, 7), in: ny) == wall("2026-03-08", "03:00"))
        #expect(Zone.local(utc(2026, 11, 1, 5, 59, 59), in: ny) == wall("2026-11-01", "01:59:59"))
        #expect(Zone.local(utc(2026, 11, 1, 6), in: ny) == wall("2026-11-01", "01:00"))
    }

    @Test func instantOfOrdinaryWallTime() {
        let ny = zone("America/New_York")
        #expect(Zone.instant(of: wall("2026-01-25", "22:00"), in: ny) == utc(2026, 1, 26, 3))
        #expect(Zone.instant(of: wall("2026-07-04", "12:00"), in: ny) == utc(2026, 7, 4, 16))
        #expect(Zone.instant(of: day("2026-01-25"), LocalTime("24:00")!, in: ny) == utc(2026, 1, 26, 5))
    }

    @Test func gapGivesTheMomentClocksJump() {
        let ny = zone("America/New_York")           // 2026-03-08 02:00 EST → 03:00 EDT at 07:00Z
        #expect(Zone.instant(of: wall("2026-03-08", "02:30"), in: ny) == utc(2026, 3, 8, 7))
        #expect(Zone.instant(of: wall("2026-03-08", "02:00"), in: ny) == utc(2026, 3, 8, 7))
        #expect(Zone.instant(of: wall("2026-03-08", "02:59:59"), in: ny, overlap: .later) == utc(2026, 3, 8, 7))
        #expect(Zone.instant(of: wall("2026-03-08", "01:59:59"), in: ny) == utc(2026, 3, 8, 6, 59, 59))
        #expect(Zone.instant(of: wall("2026-03-08", "03:00"), in: ny) == utc(2026, 3, 8, 7))

        let london = zone("Europe/London")          // 2026-03-29 01:00 GMT → 02:00 BST at 01:00Z
        #expect(Zone.instant(of: wall("2026-03-29", "01:30"), in: london) == utc(2026, 3, 29, 1))

        let lordHowe = zone("Australia/Lord_Howe")  // 2026-10-04 02:00 +10:30 → 02:30 +11 at 15:30Z the day before
        #expect(Zone.instant(of: wall("2026-10-04", "02:15"), in: lordHowe) == utc(2026, 10, 3, 15, 30))
        #expect(Zone.local(utc(2026, 10, 3, 15, 30), in: lordHowe) == wall("2026-10-04", "02:30"))
    }

    @Test func overlapGivesEarlierOrLater() {
        let ny = zone("America/New_York")           // 2026-11-01 02:00 EDT → 01:00 EST at 06:00Z
        #expect(Zone.instant(of: wall("2026-11-01", "01:30"), in: ny) == utc(2026, 11, 1, 5, 30))
        #expect(Zone.instant(of: wall("2026-11-01", "01:30"), in: ny, overlap: .later) == utc(2026, 11, 1, 6, 30))
        #expect(Zone.instant(of: wall("2026-11-01", "02:00"), in: ny, overlap: .later) == utc(2026, 11, 1, 7))

        let london = zone("Europe/London")          // 2026-10-25 02:00 BST → 01:00 GMT at 01:00Z
        #expect(Zone.instant(of: wall("2026-10-25", "01:30"), in: london) == utc(2026, 10, 25, 0, 30))
        #expect(Zone.instant(of: wall("2026-10-25", "01:30"), in: london, overlap: .later) == utc(2026, 10, 25, 1, 30))

        let lordHowe = zone("Australia/Lord_Howe")  // 2026-04-05 02:00 +11 → 01:30 +10:30 at 15:00Z the day before
        #expect(Zone.instant(of: wall("2026-04-05", "01:45"), in: lordHowe) == utc(2026, 4, 4, 14, 45))
        #expect(Zone.instant(of: wall("2026-04-05", "01:45"), in: lordHowe, overlap: .later) == utc(2026, 4, 4, 15, 15))
    }

    @Test func nextTransitionIsTheFirstSecondOfTheNewOffset() {
        func secs(_ d: Date) -> Int { Int(d.timeIntervalSince1970) }
        let ny = zone("America/New_York")           // 2026-03-08 02:00 EST → 03:00 EDT at 07:00Z
        #expect(Zone.nextTransition(after: secs(utc(2026, 3, 8)), through: secs(utc(2026, 3, 9)), in: ny) == secs(utc(2026, 3, 8, 7)))
        #expect(Zone.nextTransition(after: secs(utc(2026, 3, 8, 6)), through: secs(utc(2026, 3, 8, 7)), in: ny) == secs(utc(2026, 3, 8, 7)))
        #expect(Zone.nextTransition(after: secs(utc(2026, 3, 8, 6)), through: secs(utc(2026, 3, 8, 6, 59, 59)), in: ny) == nil)
        #expect(Zone.nextTransition(after: secs(utc(2026, 3, 8, 7)), through: secs(utc(2026, 3, 9, 7)), in: ny) == nil)
        let lordHowe = zone("Australia/Lord_Howe")  // 2026-04-05 02:00 +11 → 01:30 +10:30 at 15:00Z the day before
        #expect(Zone.nextTransition(after: secs(utc(2026, 4, 4)), through: secs(utc(2026, 4, 5)), in: lordHowe) == secs(utc(2026, 4, 4, 15)))
        #expect(Zone.nextTransition(after: secs(utc(2026, 4, 4)), through: secs(utc(2026, 4, 5)), in: zone("Asia/Kolkata")) == nil)
    }

    @Test(arguments: ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"])
    func roundTripsEveryQuarterHourOfTheTransitionDays(_ id: String) {
        let z = zone(id)
        let starts = [utc(2026, 3, 7), utc(2026, 3, 28), utc(2026, 4, 4), utc(2026, 10, 3), utc(2026, 10, 24), utc(2026, 10, 31)]
        for start in starts {
            for q in 0..<(4 * 48) {
                let instant = start.addingTimeInterval(Double(q * 900))
                let w = Zone.local(instant, in: z)
                let back = [Zone.instant(of: w, in: z), Zone.instant(of: w, in: z, overlap: .later)]
                #expect(back.contains(instant), "\(id) \(instant) → \(w) → \(back)")
            }
        }
    }
}
