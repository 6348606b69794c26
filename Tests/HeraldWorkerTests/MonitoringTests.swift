import Foundation
import HeraldCore
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// Watching passes from outside: the dead man's switch, the Pushgateway, and the metrics' names.
@Suite struct MonitoringTests {
    @Test func theHeartbeatPingsStartAndTheExitCode() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            _ = try f.enqueue(to: try f.profile(), at: seedInstant)
            let monitor = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200) }
            defer { monitor.shutdown() }
            let settings = ["HERALD_HEARTBEAT_URL": monitor.baseURL + "/ping/abc-123/"]
            let (_, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant)
            #expect(code == .ok)
            #expect(monitor.requests.map(\.path) == ["/ping/abc-123/start", "/ping/abc-123/0"])

            // A configuration error is reported too (exit 1).
            var bad = settings
            bad["HERALD_LEASE_SECONDS"] = "0"
            let (_, badCode) = Worker(url: tdb.url, settings: bad).run(now: seedInstant)
            #expect(badCode == .configuration)
            #expect(monitor.requests.map(\.path).suffix(2) == ["/ping/abc-123/start", "/ping/abc-123/1"])
        }
    }

    @Test func aDeadMonitorDoesNotFailThePass() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            // Port 9 (discard) on loopback: nothing listens there.
            let settings = ["HERALD_HEARTBEAT_URL": "http://127.0.0.1:9/ping", "HERALD_PUSHGATEWAY_URL": "http://127.0.0.1:9"]
            let (summary, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant)
            #expect(code == .ok)
            #expect(summary.sent == 1)
            #expect(try f.row(id)["status"].string == "sent")
        }
    }

    @Test func metricsArePushedUnderJobHeraldPerHost() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            _ = try f.enqueue(to: try f.profile(), at: seedInstant)
            let gateway = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200) }
            defer { gateway.shutdown() }
            let (_, code) = Worker(url: tdb.url).run(now: seedInstant) { $0.pushgateway = gateway.baseURL }
            #expect(code == .ok)
            let push = try #require(gateway.requests.first)
            #expect(push.method == "PUT")
            #expect(push.path == Pushgateway.groupPath(host: ProcessInfo.processInfo.hostName))
            #expect(push.path.hasPrefix("/metrics/job/herald/instance/"))
            #expect(push.text.contains(#"herald_pass_rows{outcome="sent"} 1"#))
            #expect(push.text.contains(#"herald_sends_total{channel="in_app",outcome="delivered",provider="inbox"} 1"#)
                    || push.text.contains(#"herald_sends_total{channel="in_app",provider="inbox",outcome="delivered"} 1"#))
        }
    }

    /// A failed pass POSTs, so the group keeps the last success's timestamp (a PUT would drop it and the
    /// staleness alert could never fire); the instance is HERALD_PUSHGATEWAY_INSTANCE when set.
    @Test func aFailedPassKeepsTheLastSuccessInItsGroup() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            _ = try f.enqueue(to: try f.profile(), at: seedInstant)
            let gateway = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200) }
            defer { gateway.shutdown() }
            let worker = Worker(url: tdb.url, settings: ["HERALD_PUSHGATEWAY_INSTANCE": "herald-cronjob"])
            _ = worker.run(now: seedInstant) { $0.pushgateway = gateway.baseURL }
            // The next pass fails: its database is gone.
            let gone = Worker(url: "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2",
                              settings: ["HERALD_PUSHGATEWAY_INSTANCE": "herald-cronjob"])
            let (_, code) = gone.run(now: seedInstant) { $0.pushgateway = gateway.baseURL }
            #expect(code == .database)
            let pushes = gateway.requests
            #expect(pushes.map(\.method) == ["PUT", "POST"])
            #expect(pushes.allSatisfy { $0.path == "/metrics/job/herald/instance/herald-cronjob" })
            #expect(pushes[0].text.contains("herald_last_success_timestamp_seconds"))
            #expect(!pushes[1].text.contains("herald_last_success_timestamp_seconds"))
            #expect(pushes[1].text.contains("herald_pass_success 0"))
        }
    }

    @Test func theGroupingKeyIsPathSafe() {
        #expect(Pushgateway.groupPath(host: "web-1.example.com") == "/metrics/job/herald/instance/web-1.example.com")
        #expect(Pushgateway.groupPath(host: "a/b c") == "/metrics/job/herald/instance/a%2Fb%20c")
        #expect(Pushgateway.groupPath(host: "") == "/metrics/job/herald/instance/unknown")
    }

    /// A pass that reports metrics reads the whole queue at its end: rows due now (a paused channel's
    /// are not: they have their own gauge), how long the oldest of them has waited past its run_after,
    /// and rows failed for good. A row on a channel with no route is due and waits: that is what the
    /// age alert is for.
    @Test func theQueueGaugesSayWhatIsDueHowLongItWaitedAndWhatIsDead() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let unroutable = try f.enqueue(to: try f.profile(), channel: "sms", at: seedInstant.addingTimeInterval(-2400))
            _ = try f.enqueue(to: try f.profile(), channel: "sms", at: seedInstant.addingTimeInterval(-600))
            _ = try f.enqueue(to: try f.profile(), channel: "in_app", at: seedInstant)  // sent by the pass
            _ = try f.enqueue(to: try f.profile(), channel: "in_app", at: seedInstant.addingTimeInterval(3600))  // not due
            _ = try f.enqueue(to: try f.profile(), channel: "email", at: seedInstant.addingTimeInterval(-7200))  // paused
            try f.db.execute("insert into herald_pauses (channel, reason, paused_by) values ('email', 'test', 'tests')")
            for _ in 0..<2 {
                let dead = try f.enqueue(to: try f.profile(), channel: "in_app", at: seedInstant.addingTimeInterval(-60))
                try f.db.execute("update notification_queue set status = 'failed', permanent = true where id = \(dead)")
            }
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-gauges-\(UUID())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("herald.prom").path

            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant, metricsFile: path)
            #expect(code == .ok)
            #expect(summary.sent == 1)
            #expect(try f.row(unroutable)["status"].string == "pending")
            let queue = try #require(summary.queue)
            #expect(queue.due == 2)
            #expect(queue.dead == 2)
            // The pass's clock runs on from --now while it works: a few seconds at most on a loaded machine.
            #expect(queue.oldestDueAgeSeconds >= 2400 && queue.oldestDueAgeSeconds < 2460)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains("herald_queue_due_rows 2\n"))
            #expect(text.contains("herald_queue_dead_rows 2\n"))
            #expect(text.contains("herald_queue_oldest_due_age_seconds \(Int(queue.oldestDueAgeSeconds))\n"))
            #expect(summary.json["queue"]?["dead"]?.intValue == 2)

            // A pass that reports no metrics does not read them.
            let (quiet, _) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(quiet.queue == nil)
        }
    }

    /// A provider that refuses herald's own credentials is named in its own gauge (and its breaker's),
    /// for the alert that says an operator must fix a setting.
    @Test func aRefusedCredentialIsReportedPerProvider() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer { _ in FakeResponse.json(401, #"{"error":"bad signature"}"#) }
            defer { server.shutdown() }
            _ = try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant)
            _ = try f.enqueue(to: try f.profile(), channel: "in_app", at: seedInstant)
            let (summary, code) = Worker(url: tdb.url, settings: WebhookDeliveryTests.settings(server)).run(now: seedInstant)
            #expect(code == .degraded)
            #expect(summary.credentialsRefused == [.webhook])
            #expect(summary.json["credentials_refused"] == .array(["webhook"]))
            let text = Metrics.text(summary)
            #expect(text.contains(#"herald_pass_credentials_refused{provider="webhook"} 1"#))
            #expect(text.contains(#"herald_pass_breaker_open{provider="webhook"} 1"#))

            // A provider that only fails opens its breaker, and refuses nothing.
            let failing = try FakeHTTPServer { _ in FakeResponse(status: 500) }
            defer { failing.shutdown() }
            for _ in 0..<12 { _ = try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant) }
            let (second, _) = Worker(url: tdb.url, settings: WebhookDeliveryTests.settings(failing)).run(now: seedInstant.addingTimeInterval(600))
            #expect(second.breakerOpen.contains(.webhook))
            #expect(second.credentialsRefused.isEmpty)
            #expect(!Metrics.text(second).contains("herald_pass_credentials_refused{"))
        }
    }

    /// The rules `promtool check metrics` applies that a text can break: HELP and TYPE before the
    /// samples, counters named `_total`, histograms with cumulative buckets ending at +Inf and a
    /// matching `_count`, names and labels in the allowed alphabet.
    @Test func theMetricsTextFollowsPrometheusRules() throws {
        var s = Summary(passId: "p")
        s.sent = 3
        s.phaseErrors[.phase(.patterns)] = "boom"
        var d = DeliveryRecord(queueId: UUID(), attempt: 1, channel: "push", provider: .apns, destination: "t",
                               deviceTokenId: nil, outcome: "delivered", httpStatus: 200, errorCode: nil,
                               messageId: nil, error: nil, latencyMs: 40)
        s.count(d)
        d.latencyMs = 2_000_000_000  // absurd, still a number
        d.outcome = "retry"
        s.count(d)
        let text = Metrics.text(s, now: Date(timeIntervalSince1970: 1_800_000_000))
        var types: [String: String] = [:]
        var buckets: [String: [(String, Double)]] = [:]
        var counts: [String: Double] = [:]
        let name = #/^[a-zA-Z_:][a-zA-Z0-9_:]*$/#
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                types[String(parts[2])] = String(parts[3])
                continue
            }
            if line.hasPrefix("#") { continue }
            let metric = String(line.prefix { $0 != "{" && $0 != " " })
            #expect(metric.wholeMatch(of: name) != nil, "bad name \(metric)")
            let value = try #require(Double(line.split(separator: " ").last ?? ""), "bad value: \(line)")
            let family = ["_bucket", "_sum", "_count"].reduce(metric) { m, suffix in
                types[m] == nil && m.hasSuffix(suffix) ? String(m.dropLast(suffix.count)) : m
            }
            #expect(types[family] != nil, "sample before its TYPE: \(line)")
            if types[family] == "counter" { #expect(family.hasSuffix("_total"), "\(family)") }
            if metric.hasSuffix("_bucket"), let le = line.firstMatch(of: #/le="([^"]+)"/#) {
                let provider = line.firstMatch(of: #/provider="([^"]+)"/#).map { String($0.1) } ?? ""
                buckets[provider, default: []].append((String(le.1), value))
            }
            if metric.hasSuffix("_count"), let provider = line.firstMatch(of: #/provider="([^"]+)"/#) {
                counts[String(provider.1)] = value
            }
        }
        let apns = try #require(buckets["apns"])
        #expect(apns.last?.0 == "+Inf")
        #expect(apns.map(\.1) == apns.map(\.1).sorted(), "buckets are cumulative")
        #expect(apns.last?.1 == counts["apns"])
        #expect(counts["apns"] == 2)
        #expect(text.contains(#"herald_pass_phase_errors{phase="patterns"} 1"#))
    }
}
