import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker

/// Section 2: webhook fan-out, beside the same requests sent one after another.
extension Bench {
    func webhookFanOut() throws {
        let rows = 2_000, delay = 0.020
        let url = try freshDatabase("herald_bench_webhook")
        let db = try PGConnection(url)
        let now = ISO8601.parse("2026-01-25T12:00:00Z")!
        print("2. \(rows) webhook sends, receiver waits \(Int(delay * 1000)) ms per request")
        let certificates = try TestCertificates.make()
        let secret = "whsec_" + Data("bench-secret-0123456789abcdef".utf8).base64EncodedString()
        var sequential = 0.0
        // The same receiver over plain HTTP/1.1 (a connection per request in flight: 64 at most by
        // default, 128 with HERALD_CONNECTIONS_PER_HOST=128) and over HTTPS, where HTTP/2 multiplexes
        // the requests on a few connections.
        for (tls, perHost) in [(false, 64), (false, 128), (true, 64)] {
            let server = try FakeHTTPServer(tls: tls ? certificates : nil, threads: 2) { _ in FakeResponse(status: 200, delay: delay) }
            defer { server.shutdown() }
            if sequential == 0 {
                // The floor: requests one after another, measured on 50 and scaled.
                let transport = try HTTPTransport()
                let probe = HTTPRequest(method: "POST", url: server.baseURL + "/probe", body: Array("{}".utf8), timeout: 5, version: .http1_1)
                sequential = Bench.seconds { for _ in 0..<50 { _ = transport.perform(probe) } } / 50 * Double(rows)
            }
            try fill(db, rows: rows, channel: "webhook", at: now)
            var options = PassOptions()
            options.now = now
            options.batchSize = rows
            var settings = ["DATABASE_URL": url, "WEBHOOK_URL": server.baseURL + "/hooks", "WEBHOOK_SECRET": secret,
                            "HERALD_CONNECTIONS_PER_HOST": "\(perHost)"]
            if tls { settings["HERALD_CA_FILE"] = certificates.caFile }
            let (summary, wall) = try pass(Settings(settings), options)
            Bench.line(tls ? "herald pass, HTTPS (HTTP/2)" : "herald pass, HTTP/1.1, \(perHost) conns", String(format: "%.2f s", wall),
                       "sequential", String(format: "%.1f s", sequential),
                       "(\(summary.sent) sent, \(server.connectionCount) connections; aim < 1 s)")
        }
        db.close()
        print("")
    }
}
