import Testing
@testable import HeraldWorker

/// The metric read's map from the server's `uuid_hash` to a user's slot, checked against a Dictionary.
@Suite struct HashSlotsTests {
    /// Random int4 keys, with duplicates, the extremes, and keys no int4 can be: the table answers as
    /// a Dictionary of the accepted keys does, for keys it holds and keys it does not.
    @Test func answersAsADictionary() {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<200 {
            let n = round < 10 ? round : Int.random(in: 1...3000, using: &rng)
            var slots = HashSlots(capacity: n)
            var reference: [Int: Int] = [:]
            // A narrow range some rounds, so that keys repeat and buckets collide.
            let range = round % 3 == 0 ? -50...50 : Int(Int32.min)...Int(Int32.max)
            for i in 0..<n {
                let key = i % 97 == 5 ? [Int(Int32.min), Int(Int32.max), 0, -1][i % 4] : Int.random(in: range, using: &rng)
                let accepted = slots.insert(key, slot: i)
                #expect(accepted == (reference[key] == nil), "key \(key)")
                if accepted { reference[key] = i }
            }
            #expect(slots.count == reference.count)
            for (key, slot) in reference { #expect(slots[key] == slot) }
            for _ in 0..<200 {
                let key = Int.random(in: range, using: &rng)
                #expect(slots[key] == reference[key])
            }
            for key in [Int.min, Int.max, Int(Int32.max) + 1, Int(Int32.min) - 1] {
                #expect(slots[key] == nil)
                let accepted = slots.insert(key, slot: 0)
                #expect(!accepted)
            }
        }
    }

    /// It holds what it was made for and refuses more than half its buckets, never looping.
    @Test func refusesBeyondHalfFull() {
        var slots = HashSlots(capacity: 8)  // 16 buckets
        for k in 0..<8 {   // keys that share low bits
            let accepted = slots.insert(k * 16, slot: k)
            #expect(accepted)
        }
        let ninth = slots.insert(1000, slot: 8)
        #expect(!ninth)
        #expect(slots[1000] == nil)
        for k in 0..<8 { #expect(slots[k * 16] == k) }
        var other = HashSlots(capacity: 1)
        let tooFar = other.insert(1, slot: Int(Int32.max) + 1)
        #expect(!tooFar && other.count == 0)
    }
}
