import Foundation

/// A small deterministic random number generator (SplitMix64): the same seed gives the same numbers
/// in every process and on every platform, unlike Swift's `Hasher` or `SystemRandomNumberGenerator`.
///
///     var rng = SplitMix64(seed: SplitMix64.seed(user, date))
///     rng.next(below: 100)     // the same number for this user and date, every run
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<bound (bound > 0), by multiply-high: no modulo bias worth the name.
    public mutating func next(below bound: UInt64) -> UInt64 {
        bound.multipliedFullWidth(by: next()).high
    }

    /// A stable seed from a user id and a date: FNV-1a over the uuid's 16 bytes and the date's day number.
    public static func seed(_ user: UUID, _ date: LocalDate) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix(_ byte: UInt8) {
            h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        withUnsafeBytes(of: user.uuid) { for b in $0 { mix(b) } }
        let d = UInt64(bitPattern: Int64(date.daysSinceEpoch))
        for shift in stride(from: 0, to: 64, by: 8) { mix(UInt8(truncatingIfNeeded: d >> UInt64(shift))) }
        return h
    }
}
