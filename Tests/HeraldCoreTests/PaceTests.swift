import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// A provider's sends are paced to its quota: never more than the quota's limit in any window a tenth
/// longer than the provider's, never more requests in flight than its concurrency, and never stuck.
@Suite struct PaceTests {

    /// What a quota makes of the bucket: a burst of one request (at most half the limit), refilled so
    /// that burst plus refill over 1.1 windows stays under the limit.
    @Test(arguments: [
        // quota, adapter's largest request → largest request, burst
        (Quota(limit: 50, window: 1), 1, 1, 1.0),
        (Quota(limit: 600, window: 1), 100, 100, 100.0),     // Expo: 100 a request
        (Quota(limit: 50, window: 1), 100, 25, 25.0),        // a small quota makes Expo's requests smaller
        (Quota(limit: 600_000, window: 60), 1, 1, 1.0),      // FCM
        (Quota(limit: 1, window: 1), 100, 1, 1.0),
        (Quota(concurrency: 500), 1, 1, Double.infinity),    // APNs: no rate
        (Quota.unbounded, 100, 100, Double.infinity),
    ])
    func theBurstIsOneRequestOfAtMostHalfTheLimit(quota: Quota, adapterMax: Int, largest: Int, burst: Double) {
        let pace = Pace(quota, largestRequest: adapterMax)
        #expect(pace.largestRequest == largest)
        #expect(pace.capacity == burst)
        if let (limit, window) = quota.rate {
            #expect(pace.capacity + pace.refill * window * (1 + Pace.headroom) < max(limit, 2))
            #expect(pace.refill * window >= limit * 0.4, "the quota is used, not starved")
        }
    }

    /// 50 a second: one at once, then one every 22 ms (48.99 in 1.1 s); a request waits until then.
    @Test func fiftyASecondStartsOneEveryTwentyTwoMilliseconds() {
        var pace = Pace(Quota(limit: 50, window: 1))
        #expect(pace.take(1, now: 10) == .go)
        guard case .wait(let wait) = pace.take(1, now: 10) else {
            Issue.record("a second request at once went")
            return
        }
        #expect(abs(wait - 1.1 / 49) < 1e-6)
        #expect(pace.take(1, now: 10 + wait / 2) != .go)
        #expect(pace.take(1, now: 10 + wait + 1e-9) == .go)
    }

    /// APNs: 500 requests in flight at most; an answer frees a place.
    @Test func theConcurrencyBoundsTheRequestsInFlight() {
        var pace = Pace(Quota(concurrency: 3))
        for _ in 0..<3 { #expect(pace.take(1, now: 0) == .go) }
        #expect(pace.take(1, now: 100) == .full)
        pace.answered()
        #expect(pace.take(1, now: 100) == .go)
        #expect(pace.take(1, now: 100) == .full)
        pace.settled()
        #expect(pace.inFlight == 0)
        #expect(pace.take(1, now: 100) == .go)
    }

    /// Passes sharing a quota each get their part: 50 a second for two is 25 each; 50 for 100 is one
    /// every 2 s each; a concurrency of 500 for 3 is 166 each.
    @Test(arguments: [
        (Quota(limit: 50, window: 1), 2, Quota(limit: 25, window: 1)),
        (Quota(limit: 50, window: 1), 100, Quota(limit: 1, window: 2)),
        (Quota(concurrency: 500), 3, Quota(concurrency: 166)),
        (Quota(concurrency: 2), 5, Quota(concurrency: 1)),
        (Quota(limit: 80, window: 1), 0, Quota(limit: 80, window: 1)),
        (Quota(limit: 80, window: 1), -4, Quota(limit: 80, window: 1)),
    ])
    func eachPassPacesToItsShare(quota: Quota, passes: Int, share: Quota) {
        #expect(quota.share(of: passes) == share)
    }

    /// A request bigger than the bucket (never built, but possible) goes on a full bucket and leaves it
    /// in debt: it is never stuck.
    @Test func aRequestBiggerThanTheBucketIsNeverStuck() {
        var pace = Pace(Quota(limit: 10, window: 1), largestRequest: 5)
        #expect(pace.take(50, now: 0) == .go)
        guard case .wait(let wait) = pace.take(1, now: 0) else {
            Issue.record("the debt was not paid back first")
            return
        }
        #expect(abs(wait - 46 / pace.refill) < 1e-6, "the 45 owed and the one asked for")
        #expect(pace.take(1, now: wait + 1e-6) == .go)
    }

    /// A clock that goes back, or a `now` that is not a number, refills nothing.
    @Test func aClockThatGoesBackRefillsNothing() {
        var pace = Pace(Quota(limit: 2, window: 1))
        #expect(pace.take(1, now: 100) == .go)
        #expect(pace.take(1, now: 50) != .go)
        #expect(pace.take(1, now: .nan) != .go)
        #expect(pace.take(1, now: .infinity) != .go)
        #expect(pace.take(1, now: 102) == .go)
    }

    /// Hostile settings (0, negative, NaN, infinite, huge, a window of nothing) never trap; a quota the
    /// pace cannot honour bounds nothing; every wait is a finite number of seconds, and for every quota
    /// it can honour no window 1.1 times the provider's starts more than its limit, nor are more requests
    /// in flight than its concurrency.
    @Test func anyQuotaAndAnySequenceOfRequestsKeepsToTheQuotaAndNeverTraps() {
        var fuzz = Fuzz(seed: 34)
        let numbers: [Double] = [0, -1, -0.0, .nan, .infinity, -.infinity, 1e-300, 0.5, 1, 1.5, 2, 3, 50, 80, 600,
                                 600_000, 1e12, 1e300, .greatestFiniteMagnitude, .leastNonzeroMagnitude]
        for _ in 0..<400 {
            let quota = Quota(limit: fuzz.chance(0.1) ? nil : fuzz.pick(numbers + [Double(fuzz.int(1...1000))]),
                              window: fuzz.pick(numbers + [1, 60, 0.25]),
                              concurrency: fuzz.chance(0.5) ? nil : fuzz.pick([Int.min, -1, 0, 1, 2, 7, 500, Int.max]))
            let shares = fuzz.pick([Int.min, -3, 0, 1, 2, 7, 1000, Int.max])
            var pace = Pace(quota.share(of: shares), largestRequest: fuzz.pick([Int.min, -1, 0, 1, 100, Int.max]))
            var started: [(at: Double, cost: Int)] = []
            var now = 0.0, inFlight = 0
            let hostileCosts = fuzz.chance(0.3)
            for _ in 0..<300 {
                if inFlight > 0, fuzz.chance(0.3) {
                    pace.answered()
                    inFlight -= 1
                }
                let cost = hostileCosts && fuzz.chance(0.05) ? fuzz.pick([Int.min, 0, Int.max]) : fuzz.int(1...max(1, pace.largestRequest))
                switch pace.take(cost, now: now) {
                case .go:
                    started.append((now, cost))
                    inFlight += 1
                case .wait(let seconds):
                    #expect(seconds.isFinite && seconds >= 0 && seconds <= Pace.longestWait)
                    now += fuzz.chance(0.5) ? seconds : seconds * Double(fuzz.int(0...3)) / 2
                case .full:
                    #expect(pace.quota.inFlightBound.map { inFlight >= $0 } == true)
                }
                if fuzz.chance(0.2) { now += Double(fuzz.int(0...2000)) / 1000 }
                if let bound = pace.quota.inFlightBound { #expect(pace.inFlight <= bound) }
            }
            let honest = started.allSatisfy { (1...pace.largestRequest).contains($0.cost) }
            if let (limit, window) = pace.quota.rate, honest {
                let most = Self.mostInAnyWindow(started, span: window * (1 + Pace.headroom))
                #expect(most <= limit, "\(quota) shared by \(shares): \(most) in one window")
            }
        }
    }

    /// The most messages started in any closed interval of `span` seconds.
    static func mostInAnyWindow(_ started: [(at: Double, cost: Int)], span: Double) -> Double {
        var most = 0.0, sum = 0.0, first = 0
        for (i, start) in started.enumerated() {
            sum += Double(start.cost)
            while started[first].at < started[i].at - span {
                sum -= Double(started[first].cost)
                first += 1
            }
            most = max(most, sum)
        }
        return most
    }
}
