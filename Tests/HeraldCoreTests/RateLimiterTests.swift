import Foundation
import Testing
@testable import HeraldCore

@Suite struct RateLimiterTests {
    let ny = zone("America/New_York")
    // 2026-01-25 20:00 EST; the next local midnight is 2026-01-26 05:00Z.
    let now = utc(2026, 1, 26, 1)

    /// `n` pushes to alice earlier today (local), of distinct kinds, two hours apart or more.
    func today(_ n: Int, channel: Channel = .push) -> [SentRecord] {
        (0..<n).map { SentRecord(recipient: alice, channel: channel, kind: "k\($0)", at: now.addingTimeInterval(-Double($0 + 1) * 3600 - 600)) }
    }

    @Test func tenPerChannelPerLocalDayThenNextLocalMidnight() {
        let nine = RateLimiter(history: today(9))
        let ok = nine.check(recipient: alice, channel: .push, kind: "reminder", now: now, zone: ny)
        #expect(ok.isAllowed)
        #expect(ok.counters.sentToday == 9)

        let ten = RateLimiter(history: today(10))
        let held = ten.check(recipient: alice, channel: .push, kind: "reminder", now: now, zone: ny)
        #expect(held.until == utc(2026, 1, 26, 5))
        #expect(held.reason == .dailyLimit)
        #expect(held.counters.sentToday == 10)
    }

    /// Another pass's clock may run a little ahead (another host, or a process started a moment later
    /// with the same `--now`): its sends count as sent now. A replay's far future does not count.
    @Test func sendsStampedALittleAheadCountAsSentNow() {
        let ahead = today(9) + [SentRecord(recipient: alice, channel: .push, kind: "reminder", at: now.addingTimeInterval(4))]
        let held = RateLimiter(history: ahead).check(recipient: alice, channel: .push, kind: "system", now: now, zone: ny)
        #expect(held.reason == .dailyLimit)
        #expect(held.counters.sentToday == 10)
        let few = today(3) + [SentRecord(recipient: alice, channel: .push, kind: "reminder", at: now.addingTimeInterval(4))]
        let spaced = RateLimiter(history: few).check(recipient: alice, channel: .push, kind: "reminder", now: now, zone: ny)
        #expect(spaced.counters.minutesSinceLastSameType == 0, "as if sent now, never a negative interval")
        #expect(spaced.until == now.addingTimeInterval(3600))
        let replay = today(9) + [SentRecord(recipient: alice, channel: .push, kind: "reminder", at: now.addingTimeInterval(3600))]
        #expect(RateLimiter(history: replay).check(recipient: alice, channel: .push, kind: "system", now: now, zone: ny).isAllowed)
    }

    @Test func theDayIsTheRecipientsLocalDay() {
        // Ten sends on the previous local day (Jan 24 EST) do not count, even though some share the UTC date.
        let yesterday = (0..<10).map {
            SentRecord(recipient: alice, channel: .push, kind: "k\($0)", at: utc(2026, 1, 25, 4, $0))   // 23:0x EST on the 24th
        }
        let limiter = RateLimiter(history: yesterday)
        #expect(limiter.check(recipient: alice, channel: .push, kind: "x", now: now, zone: ny).isAllowed)
        // In London the same ten sends are at 04:0x on the 25th: the same local day as 21:00 that evening.
        let london = zone("Europe/London")
        let atLondonEvening = utc(2026, 1, 25, 21)
        #expect(limiter.check(recipient: alice, channel: .push, kind: "x", now: atLondonEvening, zone: london).until
                == utc(2026, 1, 26))
    }

    @Test func otherRecipientsDoNotCountTowardsTheDayButOtherChannelsDo() {
        let others = RateLimiter(history: today(10).map {
            SentRecord(recipient: bob, channel: $0.channel, kind: $0.kind, at: $0.at)
        })
        let c = others.check(recipient: alice, channel: .push, kind: "x", now: now, zone: ny)
        #expect(c.isAllowed)
        #expect(c.counters.sentToday == 0)
        // Ten notifications by email are ten notifications: the eleventh, by push, waits.
        let email = RateLimiter(history: today(10, channel: .email))
        #expect(email.check(recipient: alice, channel: .push, kind: "x", now: now, zone: ny).reason == .dailyLimit)
    }

    /// Seed 001: a notification fanned out to several channels is one notification.
    @Test func aNotificationOnFourChannelsCountsOnce() {
        let channels: [Channel] = [.push, .inApp, .email, .sms]
        // Nine notifications earlier today, each on four channels: 36 rows, 9 notifications.
        let rows = (0..<9).flatMap { i in channels.map { ch in
            SentRecord(recipient: alice, channel: ch, kind: "k\(i)", group: "g\(i)",
                       at: now.addingTimeInterval(-Double(i + 1) * 3600 - 600))
        } }
        var limiter = RateLimiter(history: rows)
        let tenth = limiter.check(recipient: alice, channel: .push, kind: "pattern_alert", group: "g9", now: now, zone: ny)
        #expect(tenth.isAllowed)
        #expect(tenth.counters.sentToday == 9)
        limiter.record(SentRecord(recipient: alice, channel: .push, kind: "pattern_alert", group: "g9", at: now))
        // Its copies on the other channels go too: the cap is reached, but they are the same notification,
        // and the spacing does not hold a notification back behind its own copy.
        for ch in channels.dropFirst() {
            let copy = limiter.check(recipient: alice, channel: ch, kind: "pattern_alert", group: "g9", now: now, zone: ny)
            #expect(copy.isAllowed)
            #expect(copy.counters.sentToday == 10)
            #expect(copy.counters.groupAlreadySent)
            limiter.record(SentRecord(recipient: alice, channel: ch, kind: "pattern_alert", group: "g9", at: now))
        }
        // An eleventh notification waits for the next local midnight, on any channel.
        let eleventh = limiter.check(recipient: alice, channel: .inApp, kind: "daily_forecast", group: "g10", now: now, zone: ny)
        #expect(eleventh.reason == .dailyLimit)
        #expect(eleventh.until == utc(2026, 1, 26, 5))
        #expect(eleventh.counters.sentToday == 10)
    }

    /// Seed 002's prompts (1–100 a day, the person's own choice) are outside the cap and the spacing.
    @Test func promptsAreNeitherCappedNorCounted() {
        let prompts = (0..<100).map {
            SentRecord(recipient: alice, channel: .push, kind: "prompt", group: "p\($0)", at: now.addingTimeInterval(-Double($0 + 1) * 120))
        }
        var limits = RateLimits(); limits.perMinute = 1000
        let limiter = RateLimiter(limits: limits, history: prompts + today(10))
        // The hundred-and-first prompt of the day, two minutes after the last: allowed.
        let prompt = limiter.check(recipient: alice, channel: .push, kind: "prompt", group: "p100", now: now, zone: ny)
        #expect(prompt.isAllowed)
        // The prompts did not use up the cap: with 9 other notifications, a reminder goes.
        let nine = RateLimiter(limits: limits, history: prompts + today(9))
        let reminder = nine.check(recipient: alice, channel: .push, kind: "reminder:daily", group: "r", now: now, zone: ny)
        #expect(reminder.isAllowed)
        #expect(reminder.counters.sentToday == 9)
        // Quiet hours and the per-minute guard still apply to prompts (the per-minute guard counts rows).
        let burst = RateLimiter(history: (0..<100).map { SentRecord(recipient: alice, channel: .push, kind: "prompt", at: now.addingTimeInterval(-Double($0) * 0.1)) })
        #expect(burst.check(recipient: alice, channel: .push, kind: "prompt", now: now, zone: ny).reason == .perMinute)
    }

    /// Reminder types are distinct types: a dose reminder does not wait on an unrelated daily one.
    @Test func spacingIsByReminderType() {
        let limiter = RateLimiter(history: [SentRecord(recipient: alice, channel: .push, kind: "reminder:daily", group: "a",
                                                       at: now.addingTimeInterval(-600))])
        #expect(limiter.check(recipient: alice, channel: .push, kind: "reminder:dose", group: "b", now: now, zone: ny).isAllowed)
        #expect(limiter.check(recipient: alice, channel: .push, kind: "reminder:washout", group: "c", now: now, zone: ny).isAllowed)
        let daily = limiter.check(recipient: alice, channel: .email, kind: "reminder:daily", group: "d", now: now, zone: ny)
        #expect(daily.reason == .kindSpacing)
        #expect(daily.until == now.addingTimeInterval(3000))
        #expect(QueueItem.rateType(kind: "reminder", reminderType: "dose") == "reminder:dose")
        #expect(QueueItem.rateType(kind: "reminder", reminderType: nil) == "reminder")
        #expect(QueueItem.rateType(kind: "prompt", reminderType: "dose") == "prompt")
    }

    @Test func dailyLimitAcrossSpringForwardMidnight() {
        // Santiago's clocks change at midnight; use New York the evening before its change instead:
        // 2026-03-07 23:00 EST → next midnight is 2026-03-08 00:00 EST = 05:00Z.
        let evening = utc(2026, 3, 8, 4)
        let h = (0..<10).map { SentRecord(recipient: alice, channel: .push, kind: "k\($0)", at: evening.addingTimeInterval(-Double($0) * 60 - 60)) }
        let c = RateLimiter(history: h).check(recipient: alice, channel: .push, kind: "x", now: evening, zone: ny)
        #expect(c.until == utc(2026, 3, 8, 5))
    }

    @Test func dailyLimitWhenLocalMidnightDoesNotHappen() {
        // Santiago, 2026-09-06: 00:00 -04 → 01:00 -03 at 04:00Z. The 6th begins at the jump.
        let santiago = zone("America/Santiago")
        let evening = utc(2026, 9, 6, 2)                                  // 22:00 on the 5th
        let full = (0..<10).map { SentRecord(recipient: alice, channel: .push, kind: "k\($0)", at: evening.addingTimeInterval(-Double($0) * 60 - 60)) }
        let c = RateLimiter(history: full).check(recipient: alice, channel: .push, kind: "x", now: evening, zone: santiago)
        #expect(c.until == utc(2026, 9, 6, 4))
        // On the 6th, a send at the jump counts; one a second earlier was on the 5th.
        let morning = utc(2026, 9, 6, 13)                                 // 10:00 -03
        let atJump = (0..<10).map { SentRecord(recipient: alice, channel: .push, kind: "k\($0)", at: utc(2026, 9, 6, 4)) }
        #expect(RateLimiter(history: atJump).check(recipient: alice, channel: .push, kind: "x", now: morning, zone: santiago).counters.sentToday == 10)
        let before = (0..<10).map { SentRecord(recipient: alice, channel: .push, kind: "k\($0)", at: utc(2026, 9, 6, 3, 59, 59)) }
        #expect(RateLimiter(history: before).check(recipient: alice, channel: .push, kind: "x", now: morning, zone: santiago).isAllowed)
    }

    @Test func dailyLimitWhenLocalMidnightHappensTwice() {
        // Havana, 2026-11-01: 01:00 -04 → 00:00 -05 at 05:00Z. The 1st began at the first midnight (04:00Z).
        let havana = zone("America/Havana")
        let full = (0..<10).map { SentRecord(recipient: alice, channel: .push, kind: "k\($0)", at: utc(2026, 11, 1, 4)) }
        let c = RateLimiter(history: full).check(recipient: alice, channel: .push, kind: "x", now: utc(2026, 11, 1, 5, 30), zone: havana)
        #expect(c.counters.sentToday == 10)
        #expect(c.until == utc(2026, 11, 2, 5))                           // 00:00 -05 on the 2nd
        // Santiago, 2026-04-05: 00:00 -03 → 23:00 -04 at 03:00Z; the 4th lasts until 00:00 -04 = 04:00Z.
        let santiago = zone("America/Santiago")
        let late = RateLimiter(history: full.map { SentRecord(recipient: alice, channel: .push, kind: $0.kind, at: utc(2026, 4, 5, 2)) })
        #expect(late.check(recipient: alice, channel: .push, kind: "x", now: utc(2026, 4, 5, 2, 30), zone: santiago).until == utc(2026, 4, 5, 4))
        #expect(late.check(recipient: alice, channel: .push, kind: "x", now: utc(2026, 4, 5, 3, 30), zone: santiago).until == utc(2026, 4, 5, 4))
    }

    @Test func sameTypeSpacingOfOneHour() {
        let limiter = RateLimiter(history: [SentRecord(recipient: alice, channel: .push, kind: "reminder", at: now.addingTimeInterval(-1800))])
        let same = limiter.check(recipient: alice, channel: .push, kind: "reminder", now: now, zone: ny)
        #expect(same.until == now.addingTimeInterval(1800))
        #expect(same.reason == .kindSpacing)
        #expect(same.counters.minutesSinceLastSameType == 30)
        #expect(limiter.check(recipient: alice, channel: .push, kind: "prompt", now: now, zone: ny).isAllowed)
        // Across channels: the same type by SMS is spaced too.
        #expect(limiter.check(recipient: alice, channel: .sms, kind: "reminder", now: now, zone: ny).reason == .kindSpacing)
        #expect(limiter.check(recipient: alice, channel: .push, kind: "reminder", now: now.addingTimeInterval(1800), zone: ny).isAllowed)
        #expect(!limiter.check(recipient: alice, channel: .push, kind: "reminder", now: now.addingTimeInterval(1799), zone: ny).isAllowed)
    }

    @Test func hundredPerMinuteAcrossChannels() {
        let channels = Channel.allCases
        let burst = (0..<100).map {
            SentRecord(recipient: alice, channel: channels[$0 % channels.count], kind: "k\($0)",
                       at: now.addingTimeInterval(-50 + Double($0) * 0.5))
        }
        let limits = RateLimits(perChannelPerDay: 1000)
        let limiter = RateLimiter(limits: limits, history: burst)
        let c = limiter.check(recipient: alice, channel: .webhook, kind: "new", now: now, zone: ny)
        #expect(c.reason == .perMinute)
        #expect(c.until == now.addingTimeInterval(10))          // the oldest (now − 50 s) + 60 s
        #expect(c.counters.sentLastMinute == 100)
        let allowedLimiter = RateLimiter(limits: limits, history: Array(burst.dropFirst()))
        #expect(allowedLimiter.check(recipient: alice, channel: .webhook, kind: "new", now: now, zone: ny).isAllowed)
    }

    @Test func severalLimitsDeferToTheLatest() {
        // Daily cap (→ 05:00Z) and spacing (→ now + 50 min): the daily cap is later.
        var h = today(10)
        h[0].kind = "reminder"
        let c = RateLimiter(history: h).check(recipient: alice, channel: .push, kind: "reminder", now: now, zone: ny)
        #expect(c.until == utc(2026, 1, 26, 5))
        #expect(c.reason == .dailyLimit)
    }

    @Test func recordingCountsAndFutureSendsAreIgnored() {
        // An hour ahead is a replay's future, beyond any clock skew (``RateLimiter/clockSkew``).
        var limiter = RateLimiter(history: [SentRecord(recipient: alice, channel: .push, kind: "reminder", at: now.addingTimeInterval(3600))])
        #expect(limiter.check(recipient: alice, channel: .push, kind: "reminder", now: now, zone: ny).isAllowed)
        limiter.record(SentRecord(recipient: alice, channel: .push, kind: "reminder", at: now))
        #expect(!limiter.check(recipient: alice, channel: .push, kind: "reminder", now: now, zone: ny).isAllowed)
    }

    /// A recipient with nothing sent: allowed with every count zero, in any zone, at any instant — or,
    /// with a daily cap of zero, held to the next local midnight as the full count says.
    @Test func aRecipientWithNothingSentIsAllowedUnlessACapIsZero() {
        let zones = ["UTC", "America/New_York", "Asia/Kathmandu", "Pacific/Chatham", "Australia/Lord_Howe"].map(zone)
        for (i, z) in zones.enumerated() {
            let at = now.addingTimeInterval(Double(i) * 7_919)
            // Other recipients' sends and this one's far future do not count.
            let history = today(3).map { var r = $0; r.recipient = bob; return r }
                + [SentRecord(recipient: alice, channel: .push, kind: "k", at: at.addingTimeInterval(7_200))]
            let check = RateLimiter(history: history).check(recipient: alice, channel: .sms, kind: "reminder:dose",
                                                            group: "g", now: at, zone: z)
            #expect(check == RateCheck(until: nil, reason: nil,
                                       counters: RateCounters(sentToday: 0, minutesSinceLastSameType: nil, sentLastMinute: 0)))
            let closed = RateLimiter(limits: RateLimits(perDay: 0), history: history)
                .check(recipient: alice, channel: .sms, kind: "reminder:dose", now: at, zone: z)
            #expect(closed.reason == .dailyLimit)
            #expect(closed.until == Zone.instant(of: Zone.localDate(at, in: z).adding(days: 1),
                                                 LocalTime(hour: 0, minute: 0), in: z))
        }
    }
}
