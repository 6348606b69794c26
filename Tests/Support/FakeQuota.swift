import Foundation

/// A provider's quota as a fake holds a sender to it: at most `limit` messages in any sliding `window`
/// seconds, counted as each request arrives. A request that would go over is refused (the fake answers
/// it with its provider's 429) and not counted, as FCM counts neither its 429s.
///
///     let quota = FakeQuota(limit: 50, window: 1)
///     fcm.enforce(quota)
///     … a pass …
///     #expect(quota.refused == 0)
///
/// With a `window` equal to a fake's answer delay, it bounds the requests in flight at once (a request
/// is in flight from its arrival until its answer, `window` later).
public final class FakeQuota: @unchecked Sendable {  // every var under `lock`
    public let limit: Int
    public let window: Double
    private let lock = NSLock()
    private var arrivals: [(at: UInt64, messages: Int)] = []
    private var first = 0
    private var inWindow = 0
    private var refusedCount = 0
    private var acceptedCount = 0
    private var mostCount = 0

    public init(limit: Int, window: Double) {
        self.limit = limit
        self.window = window
    }

    /// Whether `messages` more fit in the window that ends now; counted when they do.
    public func admit(_ messages: Int = 1) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        let span = UInt64(window * 1e9)
        return lock.withLock {
            while first < arrivals.count, arrivals[first].at + span <= now {
                inWindow -= arrivals[first].messages
                first += 1
            }
            guard inWindow + messages <= limit else {
                refusedCount += 1
                return false
            }
            arrivals.append((now, messages))
            inWindow += messages
            acceptedCount += messages
            mostCount = max(mostCount, inWindow)
            return true
        }
    }

    /// Requests answered 429.
    public var refused: Int { lock.withLock { refusedCount } }
    /// Messages let through.
    public var accepted: Int { lock.withLock { acceptedCount } }
    /// The most messages let through in one window.
    public var most: Int { lock.withLock { mostCount } }
}
