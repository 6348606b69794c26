/// One of `count` hash partitions of the queue: `herald run --shard K/N` pins a pass to partition K of
/// N (PostgreSQL's `partition by hash (recipient_user_id)`, modulus N, remainder K).
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    /// The most partitions `herald migrate --queue-partitions` makes.
    public static let maxCount = 1024

    /// N is at least 2: a queue of one partition is the plain table, which every pass works in.
    public init?(index: Int, count: Int) {
        guard count >= 2, count <= Shard.maxCount, index >= 0, index < count else { return nil }
        self.index = index
        self.count = count
    }

    /// Parses `K/N` (`0/4`): nil unless 0 ≤ K < N, 2 ≤ N ≤ `maxCount`.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let k = Int(parts[0]), let n = Int(parts[1]) else { return nil }
        self.init(index: k, count: n)
    }

    /// The partition's table: `notification_queue_p2`.
    public var table: String { "notification_queue_p\(index)" }

    public var description: String { "\(index)/\(count)" }
}
