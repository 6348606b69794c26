import Foundation

/// p50, p95 and p99 of latencies in milliseconds (nearest rank).
struct Percentiles {
    let sorted: [Double]

    init(_ values: [Double]) { sorted = values.sorted() }

    func at(_ p: Double) -> Double? {
        sorted.isEmpty ? nil : sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
    }

    var text: String {
        func f(_ ms: Double?) -> String {
            guard let ms else { return "—" }
            return ms < 10 ? String(format: "%.1f ms", ms) : ms < 1_000 ? String(format: "%.0f ms", ms) : String(format: "%.1f s", ms / 1000)
        }
        return "p50 \(f(at(0.50)).padding(toLength: 8, withPad: " ", startingAt: 0)) p95 \(f(at(0.95)).padding(toLength: 8, withPad: " ", startingAt: 0)) p99 \(f(at(0.99)))"
    }
}
