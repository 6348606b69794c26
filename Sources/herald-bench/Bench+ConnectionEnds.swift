import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker

/// Section 7: a provider that ends its connections under the pass.
extension Bench {
    /// 3,000 APNs pushes at 20 ms an answer to a fake that drops each connection on its 500th request
    /// (answers in flight lost), beside the same to a steady fake and to one that ends connections with
    /// a graceful GOAWAY: rows sent by one drain, its time, the requests sent again.
    func apnsConnectionEnds() throws {
        let rows = 3_000, latency = 0.020
        print("7. \(rows) APNs pushes (20 ms an answer), connections ended every 500 requests, one drain at batch 1,000")
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        var steadySeconds = 0.0
        for ending in [nil, ConnectionEnding.abort(afterRequests: 500), .reset(afterRequests: 500),
                       .goAway(afterRequests: 500)] {
            let apns = try FakeAPNs(certificates: certificates, latency: latency, threads: 2, ending: ending)
            defer { apns.shutdown() }
            let url = try freshDatabase("herald_bench_connection_ends")
            let db = try PGConnection(url)
            defer { db.close() }
            let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            try fill(db, rows: rows, channel: "push", at: now.addingTimeInterval(-60))
            try db.execute("update user_profiles set notify_push = true")
            try db.execute("""
                insert into device_tokens (user_id, device_token, platform, provider)
                select user_id, encode(sha256(user_id::text::bytea), 'hex'), 'ios', 'apns' from user_profiles
                """)
            let keyFile = certificates.directory + "/apns-ends.p8"
            try apns.keyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
            let settings = Settings(["DATABASE_URL": url, "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": apns.keyId,
                                     "APNS_TEAM_ID": apns.teamId, "APNS_TOPIC": apns.topic, "APNS_URL": apns.baseURL,
                                     "HERALD_CA_FILE": certificates.caFile])
            var options = PassOptions()
            options.now = now
            options.batchSize = 1_000
            options.drain = true
            options.maxBatches = nil
            options.phases = [.deliver]
            let (summary, wall) = try pass(settings, options)
            if ending == nil { steadySeconds = wall }
            let label = ending.map { "\($0)".replacingOccurrences(of: "(afterRequests: 500)", with: "") } ?? "steady"
            Bench.line("herald drain, \(label)", "\(summary.sent) sent", "steady server",
                       String(format: "%.2f s", steadySeconds),
                       String(format: "(%.2f s, %.1f× steady; %d resent; %d connections; breaker %@; aim ≥ 2,700 sent, ≤ 2×)",
                              wall, wall / max(steadySeconds, 0.001), summary.resent, apns.connectionCount,
                              summary.breakerOpen.isEmpty ? "closed" : "OPEN"))
        }
        print("")
    }
}
