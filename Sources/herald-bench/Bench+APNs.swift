import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker

/// Section 5: APNs over HTTP/2, beside one connection sending one request at a time.
extension Bench {
    func apnsPushes() throws {
        let rows = 10_000, latency = 0.020
        let url = try freshDatabase("herald_bench_apns")
        let db = try PGConnection(url)
        let now = ISO8601.parse("2026-01-25T12:00:00Z")!
        print("5. \(rows) APNs pushes to an HTTP/2 fake (TLS) answering after \(Int(latency * 1000)) ms")
        let certificates = try TestCertificates.make()
        let apns = try FakeAPNs(certificates: certificates, latency: latency, threads: 2)
        defer { apns.shutdown() }
        let keyFile = certificates.directory + "/apns-bench.p8"
        try apns.keyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try fill(db, rows: rows, channel: "push", at: now)
        try db.execute("""
            update user_profiles set notify_push = true;
            """)
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider)
            select user_id, encode(sha256(user_id::text::bytea), 'hex'), 'ios', 'apns' from user_profiles
            """)
        let settings = Settings(["DATABASE_URL": url, "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": apns.keyId,
                                 "APNS_TEAM_ID": apns.teamId, "APNS_TOPIC": apns.topic, "APNS_URL": apns.baseURL,
                                 "HERALD_CA_FILE": certificates.caFile])

        // The floor: one connection, one request at a time, through the same adapter and transport.
        let adapter = try ChannelRoutes.load(settings)[.push]!.adapter(for: .apns)!
        let transport = try HTTPTransport(options: TransportOptions(caFile: certificates.caFile, maxConnectionsPerHost: 1,
                                                                    maxTransfersInFlight: 1))
        let item = QueueItem(id: UUID(), recipientUserId: UUID(), channelRaw: "push", kindRaw: "system", scheduledAt: now)
        let rendered = RenderedNotification(title: "Hello", body: "Bench", badge: 1, locale: "en")
        let probes = (0..<100).map { i in
            try! adapter.request(for: [Envelope(item: item, rendered: rendered,
                destination: Destination(provider: .apns, address: String(format: "%064x", i)), now: Date())])
        }
        var ok = 0
        let serial = Bench.seconds { transport.perform(probes) { _, r in if case .success(let x) = r, x.status == 200 { ok += 1 } } }
        let singleRate = Double(probes.count) / serial

        var options = PassOptions()
        options.now = now
        options.batchSize = 2_000
        options.drain = true
        options.maxBatches = nil
        let before = apns.connectionCount
        let (summary, wall) = try pass(settings, options)
        let rate = Double(summary.sent) / wall
        if summary.sent != rows {
            for row in try db.query("select last_error, count(*)::int as n from notification_queue group by 1 order by 2 desc limit 3") {
                print("  (not sent: \(row["n"].int ?? 0) × \(row["last_error"].string ?? "-"))")
            }
        }
        Bench.line("herald pass (HTTP/2 multiplexed)", "\(Int(rate)) pushes/s", "one connection, one at a time",
                   "\(Int(singleRate)) pushes/s (\(ok) ok)",
                   "(sequential at \(Int(latency * 1000)) ms: \(Int(1 / latency))/s; \(summary.sent) sent over \(apns.connectionCount - before) connections; aim ≥ 2,000/s)")
        db.close()
        print("")
    }
}
