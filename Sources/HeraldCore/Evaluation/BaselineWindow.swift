/// The median of the latest `capacity` values pushed, kept sorted as values come and go, so a day's
/// baseline costs one insertion and one removal instead of a sort.
///
///     var w = BaselineWindow(capacity: 3)
///     w.push(5); w.push(1); w.push(9)     // median 5
///     w.push(2)                           // 5 leaves (oldest): values 1, 2, 9 → median 2
struct BaselineWindow {
    let capacity: Int
    /// The values in arrival order, as a ring: `arrivals[(head + i) % capacity]` is the i-th oldest.
    private var arrivals: [Double]
    private var head = 0
    /// The same values, ascending.
    private var sorted: [Double]

    init(capacity: Int) {
        self.capacity = capacity
        arrivals = []
        arrivals.reserveCapacity(capacity)
        sorted = []
        sorted.reserveCapacity(capacity)
    }

    var count: Int { sorted.count }

    /// Adds a value; when full, the oldest value leaves.
    mutating func push(_ value: Double) {
        if arrivals.count < capacity {
            arrivals.append(value)
        } else {
            let oldest = arrivals[head]
            arrivals[head] = value
            head = (head + 1) % capacity
            sorted.remove(at: Self.firstIndex(notBelow: oldest, in: sorted))
        }
        sorted.insert(value, at: Self.firstIndex(notBelow: value, in: sorted))
    }

    /// The median (the mean of the two middle values for an even count); nil when empty.
    var median: Double? {
        let n = sorted.count
        guard n > 0 else { return nil }
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    /// Binary search: the first index whose value is ≥ `value`.
    private static func firstIndex(notBelow value: Double, in a: [Double]) -> Int {
        var lo = 0, hi = a.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if a[mid] < value { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
