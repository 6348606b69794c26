import Foundation

/// Whether a way of doing some work costs more than its floor by more than the bench can tell.
///
/// Both run in the same rounds, taking turns, and the floor runs twice (an A/A pair: the same work,
/// so any difference between its two runs is noise). A way's extra is the mean over the rounds of its
/// figure over the floor's in that round; the noise band is two standard errors of that mean, taken
/// from the floor's two runs round by round. Within noise when the extra is no more than the band.
///
///     let v = WithinNoise(way: [40.1, 39.8], floor: [39.9, 40.0], again: [40.2, 39.7])
///     print(v.text)   // "+0.0%; the floor run twice: ±1.5% (2 SE, 2 rounds); aim: within noise: met"
struct WithinNoise {
    /// The way's mean ratio to the floor, less one.
    let extra: Double
    /// Two standard errors of a mean ratio of two runs of the same work, less one.
    let band: Double
    let rounds: Int

    init(way: [Double], floor: [Double], again: [Double]) {
        let n = min(way.count, floor.count, again.count)
        rounds = n
        guard n > 0 else { extra = .nan; band = .nan; return }
        extra = WithinNoise.extra(way: way, floor: floor)
        let aa = (0..<n).map { again[$0] / floor[$0] - 1 }
        band = n > 1 ? 2 * WithinNoise.deviation(aa) / Double(n).squareRoot() : abs(aa[0])
    }

    var met: Bool { extra <= band }

    var text: String {
        String(format: "%+.1f%%; the floor run twice: ±%.1f%% (2 SE, %d rounds); aim: within noise: %@",
               extra * 100, band * 100, rounds, met ? "met" : "not met")
    }

    /// The mean over the rounds of `way`'s figure over `floor`'s in that round, less one.
    static func extra(way: [Double], floor: [Double]) -> Double {
        mean(zip(way, floor).map { $0 / $1 - 1 })
    }

    static func mean(_ xs: [Double]) -> Double { xs.reduce(0, +) / Double(max(xs.count, 1)) }

    /// The sample standard deviation.
    static func deviation(_ xs: [Double]) -> Double {
        let m = mean(xs)
        return (xs.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(max(xs.count - 1, 1))).squareRoot()
    }
}
