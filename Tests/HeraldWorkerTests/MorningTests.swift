import Foundation
import HeraldTestSupport
import Testing

/// A morning of forecasts (`Morning`, the bench's section "a morning" at 100,000 people) run small, its
/// counts checked and nothing timed: passes primed in the hour before, each herald a process, against
/// the weather and insight fakes, then a follower delivering at 08:00 through fake APNs and FCM over TLS
/// and HTTP/2.
@Suite struct MorningTests {
    /// 500 people in 5 places make one weather request per place and one insight call per person; every
    /// forecast is enqueued before 08:00, and every push is accepted once, by the provider of the
    /// person's one device, and recorded sent.
    @Test func aMorningAsksTheWeatherOncePerPlaceAndPushesEveryoneOnce() throws {
        try withTestDatabase { tdb in
            let fakes = try MorningFakes()
            defer { fakes.shutdown() }
            var morning = Morning(people: 500, places: 5, herald: HeraldBinary.url)
            morning.primingPasses = [Morning.eight.addingTimeInterval(-3600), Morning.eight.addingTimeInterval(-1800)]
            morning.followerLead = 3
            morning.deliveryTimeout = 120
            let f = try morning.run(url: tdb.url, fakes: fakes)
            #expect(f.weatherRequests == 5)
            #expect(f.insightCalls == 500)
            #expect(f.enqueuedBeforeEight == 500)
            #expect(f.apnsPushes == 250 && f.fcmPushes == 250)
            #expect(f.distinctDevices == 500)
            #expect(f.sentRows == 500)
        }
    }
}
