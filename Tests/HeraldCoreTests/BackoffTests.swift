import Foundation
import Testing
@testable import HeraldCore

@Suite struct BackoffTests {
    @Test(arguments: [(1, 30.0), (2, 60.0), (3, 120.0), (4, 240.0), (7, 1920.0), (8, 3600.0), (30, 3600.0), (1000, 3600.0)])
    func exponentialWithoutJitterAtMidpoint(_ attempt: Int, _ expected: Double) {
        #expect(Backoff.delay(attempt: attempt, retryAfter: nil, random: 0.5) == expected)
    }

    @Test func jitterStaysWithinTwentyPercent() {
        for attempt in 1...12 {
            let plain = Backoff.delay(attempt: attempt, retryAfter: nil, random: 0.5)
            let low = Backoff.delay(attempt: attempt, retryAfter: nil, random: 0)
            let high = Backoff.delay(attempt: attempt, retryAfter: nil, random: 0.999_999)
            #expect(abs(low - plain * 0.8) < 1e-9)
            #expect(high <= plain * 1.2 && high > plain * 1.19)
            for r in stride(from: 0.0, to: 1.0, by: 0.05) {
                let d = Backoff.delay(attempt: attempt, retryAfter: nil, random: r)
                #expect(d >= plain * 0.8 && d <= plain * 1.2)
            }
        }
        #expect(Backoff.delay(attempt: 0, retryAfter: nil, random: 0.5) == 30)   // nonsense attempts are clamped
    }

    @Test func retryAfterWinsAndIsCapped() {
        #expect(Backoff.delay(attempt: 5, retryAfter: 7, random: 0.9) == 7)
        #expect(Backoff.delay(attempt: 1, retryAfter: 7200, random: 0.1) == 7200)   // above the 1 h backoff cap: honoured
        #expect(Backoff.delay(attempt: 1, retryAfter: 10 * 86_400, random: 0.1) == 86_400)
        #expect(Backoff.delay(attempt: 1, retryAfter: -5, random: 0.1) == 0)
    }

    @Test func parsesDeltaSeconds() {
        let now = utc(2026, 1, 25)
        #expect(Backoff.parseRetryAfter("120", now: now) == 120)
        #expect(Backoff.parseRetryAfter(" 0 ", now: now) == 0)
        #expect(Backoff.parseRetryAfter("-3", now: now) == nil)
        #expect(Backoff.parseRetryAfter("soon", now: now) == nil)
        #expect(Backoff.parseRetryAfter("", now: now) == nil)
        #expect(Backoff.parseRetryAfter("١٢", now: now) == nil)   // Arabic-Indic digits are not delta-seconds
    }

    @Test func parsesHTTPDates() {
        let now = utc(2015, 10, 21, 7, 27)
        #expect(Backoff.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: now) == 60)
        #expect(Backoff.parseRetryAfter("Wednesday, 21-Oct-15 07:28:30 GMT", now: now) == 90)
        #expect(Backoff.parseRetryAfter("Wed Oct 21 07:29:00 2015", now: now) == 120)
        #expect(Backoff.parseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", now: now) == 0)   // past
        #expect(Backoff.parseRetryAfter("Wed, 21 Foo 2015 07:28:00 GMT", now: now) == nil)
        #expect(Backoff.parseRetryAfter("Wed, 21 Oct 2015 25:28:00 GMT", now: now) == nil)
    }
}
