/// How many requests one HTTP/2 connection carries at once: the server's own limit (its SETTINGS) until
/// a connection ends with answers in flight, then fewer, so that the next connection to end loses fewer.
///
/// A server that ends its connections without answering the streams still open — a dropped network, a
/// proxy that closes after so many requests — loses every answer in flight on the connection; spreading
/// the same number of requests over more, shallower connections keeps throughput and shrinks each loss.
/// Each connection that ends so lowers the limit once (to at most `afterFirstEnd`, then by half), never
/// below `floor`; the limit holds for the rest of the transport's life (one pass).
///
///     var streams = StreamsPerConnection(initial: 1000)
///     streams.answered(onConnection: 40001)
///     streams.lostAnswer(onConnection: 40001)   // 64: the new limit
///     streams.lostAnswer(onConnection: 40001)   // nil: the same connection, already counted
struct StreamsPerConnection: Equatable {
    private(set) var limit: Int
    /// The limit after the first connection that ends with answers lost.
    static let afterFirstEnd = 64
    /// The fewest streams a connection is given.
    static let floor = 8
    /// Connections (by local port) already counted as ended.
    private var ended: Set<Int> = []

    init(initial: Int) {
        limit = max(Self.floor, initial)
    }

    /// A request was answered on the connection at `port`: a port seen again is a new connection.
    mutating func answered(onConnection port: Int) {
        if !ended.isEmpty { ended.remove(port) }
    }

    /// A request's answer was lost when the connection at `port` ended. Returns the new limit when this
    /// lowers it, nil when the connection was already counted or the limit is at its floor.
    mutating func lostAnswer(onConnection port: Int) -> Int? {
        guard ended.insert(port).inserted else { return nil }
        let lowered = max(Self.floor, min(limit / 2, Self.afterFirstEnd))
        guard lowered < limit else { return nil }
        limit = lowered
        return lowered
    }
}
