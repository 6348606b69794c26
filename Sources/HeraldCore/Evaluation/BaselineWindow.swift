/// The median of the latest `capacity` values pushed, kept sorted as values come and go, so a day's
/// baseline costs one insertion and one removal instead of a sort. Its values live in memory lent
/// for one walk (on the stack), so evaluating a window allocates nothing.
///
///     BaselineWindow.with(capacity: 3) { w in
///         w.push(5); w.push(1); w.push(9)     // median 5
///         w.push(2)                           // 5 leaves (oldest): values 1, 2, 9 → median 2
///     }
struct BaselineWindow {
    let capacity: Int
    /// The values in arrival order, as a ring: `arrivals[(head + i) % capacity]` is the i-th oldest.
    private let arrivals: UnsafeMutableBufferPointer<Double>
    private var head = 0
    /// The same values, ascending, in `sorted[0..<count]`.
    private let sorted: UnsafeMutableBufferPointer<Double>
    /// How many values it holds (at most `capacity`).
    private(set) var count = 0

    /// Runs `body` with an empty window of `capacity` values, valid only inside it.
    static func with<R>(capacity: Int, _ body: (inout BaselineWindow) throws -> R) rethrows -> R {
        let capacity = max(1, capacity)
        return try withUnsafeTemporaryAllocation(of: Double.self, capacity: 2 * capacity) { storage in
            var window = BaselineWindow(capacity: capacity,
                                        arrivals: UnsafeMutableBufferPointer(rebasing: storage[0..<capacity]),
                                        sorted: UnsafeMutableBufferPointer(rebasing: storage[capacity..<2 * capacity]))
            return try body(&window)
        }
    }

    private init(capacity: Int, arrivals: UnsafeMutableBufferPointer<Double>, sorted: UnsafeMutableBufferPointer<Double>) {
        self.capacity = capacity
        self.arrivals = arrivals
        self.sorted = sorted
    }

    /// Adds a value; when full, the oldest value leaves.
    mutating func push(_ value: Double) {
        if count < capacity {
            arrivals[count] = value
            count += 1
        } else {
            let oldest = arrivals[head]
            arrivals[head] = value
            head = (head + 1) % capacity
            // The oldest leaves: the values above it move down one place.
            var k = firstIndex(notBelow: oldest)
            while k < count - 1 {
                sorted[k] = sorted[k + 1]
                k += 1
            }
        }
        // The values above the new one move up one place (the last place is free).
        var k = count - 1
        while k > 0 && sorted[k - 1] >= value {
            sorted[k] = sorted[k - 1]
            k -= 1
        }
        sorted[k] = value
    }

    /// The median (the mean of the two middle values for an even count); nil when empty.
    var median: Double? {
        let n = count
        guard n > 0 else { return nil }
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    /// Binary search over the values held: the first index whose value is ≥ `value`.
    private func firstIndex(notBelow value: Double) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < value { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
