import HeraldCore
import Testing

@Suite struct ShardParsingTests {
    @Test func parsesKOverN() throws {
        let s = try #require(Shard("2/4"))
        #expect(s.index == 2 && s.count == 4)
        #expect(s.table == "notification_queue_p2")
        #expect(s.description == "2/4")
        #expect(Shard("0/2") != nil)
        #expect(Shard("1023/1024") != nil)
    }

    @Test func refusesAnythingElse() {
        for bad in ["", "/", "0/1", "4/4", "5/4", "-1/4", "1/0", "0/1025", "1/4/", "a/4", "1 /4", "+1/4", "١/4",
                    "99999999999999999999/4", "1/99999999999999999999", "0x1/4"] {
            #expect(Shard(bad) == nil, "\(bad)")
        }
    }
}
