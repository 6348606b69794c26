import Foundation
import HeraldPostgres
import HeraldTestSupport

/// One round of section 8: rows enqueued one per transaction at a steady rate, as an app's backend
/// enqueues them, and when each reached the fake APNs.
struct LatencyRun {
    let url: String
    let db: PGConnection
    let apns: FakeAPNs
    let tokens: [(recipient: UUID, token: String)]
    let rate: Double

    /// Runs `round` (which enqueues, waits for the deliveries and returns the commit times) on an empty
    /// queue; the latencies in milliseconds of the rows received.
    func measure(_ round: () throws -> [Date]) throws -> [Double] {
        try db.execute("truncate notification_queue, inbox, push_receipts cascade")  // no earlier send counts against a rate limit
        let commits = try round()
        return zip(commits, receipts(commits)).compactMap { commit, receipt in
            receipt.map { $0.timeIntervalSince(commit) * 1000 }
        }
    }

    /// Enqueues one row per recipient, each in a transaction of its own, `rate` a second; returns when
    /// each commit returned.
    func enqueue() throws -> [Date] {
        var commits: [Date] = []
        let start = DispatchTime.now().uptimeNanoseconds
        let payload = #"{"title":"Hello","body":"From the backend"}"#
        for (i, t) in tokens.enumerated() {
            let due = start + UInt64(Double(i) / rate * 1e9)
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
            try db.execute("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload)
                values (\(t.recipient), \(t.recipient), 'push', 'system', \(payload)::jsonb)
                """)
            commits.append(Date())
        }
        return commits
    }

    /// When the fake received each row's request (nil: not yet), recipient by recipient; requests
    /// from before this round are left out.
    func receipts(_ commits: [Date]) -> [Date?] {
        let since = (commits.first ?? Date()).addingTimeInterval(-1)
        var byToken: [String: Date] = [:]
        for r in apns.requests where r.receivedAt >= since && r.path.hasPrefix("/3/device/") {
            byToken[String(r.path.dropFirst("/3/device/".count))] = r.receivedAt
        }
        return tokens.map { byToken[$0.token] }
    }

    /// Waits until every row has been received, at most 60 s; false if some were not.
    func waitForAll(_ commits: [Date]) -> Bool {
        let end = Date().addingTimeInterval(60)
        while Date() < end {
            if receipts(commits).allSatisfy({ $0 != nil }) { return true }
            usleep(50_000)
        }
        return false
    }
}
