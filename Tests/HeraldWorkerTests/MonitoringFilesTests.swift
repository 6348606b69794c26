import Foundation
import HeraldTestSupport
import Testing

/// The alert rules (deploy/prometheus/herald-rules.yml) and the Grafana dashboard
/// (deploy/grafana/herald-dashboard.json) read only metrics herald writes: a real pass writes its
/// metrics file, and every metric name in a rule's or a panel's expression is among the names in it.
@Suite struct MonitoringFilesTests {
    static let rules = DeployTests.root.appendingPathComponent("deploy/prometheus/herald-rules.yml").path
    static let dashboard = DeployTests.root.appendingPathComponent("deploy/grafana/herald-dashboard.json").path

    /// The metric names of a metrics file: every family's `# TYPE` and every sample's name (a
    /// histogram's `_bucket`, `_sum` and `_count`).
    static func names(inMetricsText text: String) -> Set<String> {
        var names: Set<String> = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                names.insert(String(line.split(separator: " ")[2]))
            } else if !line.hasPrefix("#") {
                names.insert(String(line.prefix { $0 != "{" && $0 != " " }))
            }
        }
        return names
    }

    /// The rules file's `expr:` values, on one line or as a YAML block (`|`, `>`) below it.
    static func ruleExpressions(_ yaml: String) -> [String] {
        let lines = yaml.components(separatedBy: "\n")
        var exprs: [String] = []
        for (i, line) in lines.enumerated() {
            guard let match = line.firstMatch(of: #/^(\s*)(?:- )?expr:\s*(.*)$/#) else { continue }
            var value = String(match.2).trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("|") || value.hasPrefix(">") {
                let indent = match.1.count
                value = lines[(i + 1)...].prefix { $0.trimmingCharacters(in: .whitespaces).isEmpty || $0.prefix { $0 == " " }.count > indent }
                    .joined(separator: " ")
            } else if value.count >= 2, let q = value.first, q == "'" || q == "\"", value.last == q {
                value = String(value.dropFirst().dropLast())
            }
            exprs.append(value)
        }
        return exprs
    }

    /// Every `expr` of the dashboard's panels and targets, however deep.
    static func dashboardExpressions(_ json: Any) -> [String] {
        if let object = json as? [String: Any] {
            return object.flatMap { key, value in
                key == "expr" ? [value as? String ?? ""] : dashboardExpressions(value)
            }
        }
        if let array = json as? [Any] { return array.flatMap(dashboardExpressions) }
        return []
    }

    /// What a pass writes: every channel on the log adapter but the webhook, which goes over HTTP to a
    /// loopback receiver so that the providers' latency histogram is written too.
    static func writtenNames() throws -> Set<String> {
        return try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let pushed = try f.profile()
            try f.token(pushed)
            _ = try f.enqueue(to: pushed, channel: "push", at: seedInstant)
            _ = try f.enqueue(to: try f.profile(email: "a@example.com", emailOn: true), channel: "email", at: seedInstant)
            _ = try f.enqueue(to: try f.profile(phone: "+15555550100", sms: true), channel: "sms", at: seedInstant)
            _ = try f.enqueue(to: try f.profile(), channel: "in_app", at: seedInstant)
            _ = try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant)
            let server = try FakeHTTPServer { _ in FakeResponse(status: 204) }
            defer { server.shutdown() }
            let settings = ["HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_EMAIL": "log", "HERALD_CHANNEL_SMS": "log",
                            "HERALD_LOG_ADAPTER_FILE": "/dev/null"].merging(WebhookDeliveryTests.settings(server)) { a, _ in a }
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-monitoring-\(UUID())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("herald.prom").path
            let (summary, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant, metricsFile: path)
            #expect(code == .ok)
            #expect(summary.sent == 5)
            return names(inMetricsText: try String(contentsOfFile: path, encoding: .utf8))
        }
    }

    /// The rules and the dashboard against one real pass's metrics file.
    @Test func theRulesAndTheDashboardNameOnlyMetricsAPassWrites() throws {
        let written = try Self.writtenNames()
        #expect(written.contains("herald_provider_request_duration_seconds_bucket"))
        #expect(written.contains("herald_queue_oldest_due_age_seconds"))

        let yaml = try String(contentsOfFile: Self.rules, encoding: .utf8)
        let ruleExprs = Self.ruleExpressions(yaml)
        let alerts = yaml.components(separatedBy: "\n").filter { $0.contains("- alert: ") }
        #expect(ruleExprs.count == alerts.count && !alerts.isEmpty, "an expr per alert")
        let dashboard = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.dashboard)))
        let panelExprs = Self.dashboardExpressions(dashboard)
        #expect(panelExprs.count >= 10)

        for (file, exprs) in [("herald-rules.yml", ruleExprs), ("herald-dashboard.json", panelExprs)] {
            for expr in exprs {
                let names = try PromQLNames.metrics(in: expr)
                #expect(!names.isEmpty, "\(file): no metric in \(expr)")
                let unknown = names.subtracting(written)
                #expect(unknown.isEmpty, "\(file): \(expr) names \(unknown.sorted()), which herald does not write")
            }
        }
    }

    /// The dashboard is a Grafana dashboard: a title, panels with a position and queries, and every
    /// query on the Prometheus data source the dashboard asks for.
    @Test func theDashboardIsAGrafanaDashboard() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.dashboard))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(dashboard["title"] as? String == "herald")
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        #expect(!panels.isEmpty)
        let ids = panels.compactMap { $0["id"] as? Int }
        #expect(Set(ids).count == panels.count, "panel ids are unique")
        for panel in panels {
            #expect(panel["gridPos"] as? [String: Any] != nil)
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty, "\(panel["title"] ?? "?") has no query")
            for target in targets {
                let source = target["datasource"] as? [String: Any]
                #expect(source?["type"] as? String == "prometheus")
                #expect(source?["uid"] as? String == "${DS_PROMETHEUS}")
            }
        }
    }

    /// What the name check rests on: names are found in selectors, ranges, aggregations, binary
    /// operations with matching, offsets and absent(); label names, strings, durations, numbers and
    /// Grafana variables are not names; a function the list does not know is an error.
    @Test func metricNamesAreFoundInPromQL() throws {
        let cases: [(String, Set<String>)] = [
            (#"sum by (provider, le) (rate(herald_a_bucket{le="+Inf", x=~"b|c"}[5m]))"#, ["herald_a_bucket"]),
            ("time() - max(herald_b) > 15 * 60", ["herald_b"]),
            ("herald_c > 0 unless herald_d > 0", ["herald_c", "herald_d"]),
            ("herald_e / ignoring (instance) group_left (phase) herald_f offset 5m", ["herald_e", "herald_f"]),
            ("absent(herald_g)", ["herald_g"]),
            ("max without (instance) (delta(herald_h[1h])) > 1e3", ["herald_h"]),
            (#"herald_i{instance=~"$instance", q="{not[a]name}"}[$__rate_interval:1m]"#, ["herald_i"]),
            ("histogram_quantile(0.95, sum(rate(herald_j_bucket[5m])) by (le))", ["herald_j_bucket"]),
            ("herald_k and on(job) herald_l or herald_m == bool 1", ["herald_k", "herald_l", "herald_m"]),
        ]
        for (expr, expected) in cases {
            #expect(try PromQLNames.metrics(in: expr) == expected, "\(expr)")
        }
        #expect(throws: PromQLNames.UnknownFunction.self) { try PromQLNames.metrics(in: "rate_of_change(herald_a[5m])") }
    }
}
