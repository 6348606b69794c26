import Foundation

/// The pass's figures in the Prometheus text format, for node_exporter's textfile collector — how cron
/// jobs are usually watched: alert when `herald_last_success_timestamp_seconds` grows old.
///
///     herald run --metrics-file /var/lib/node_exporter/textfile_collector/herald.prom
public enum Metrics {
    /// `previousSuccess` carries the last success time over a failed pass, so the alert fires on age.
    /// A pass that completed, was not interrupted and had no phase fail: what `herald_pass_success` says.
    public static func succeeded(_ s: Summary) -> Bool { s.ok && !s.interrupted && s.phaseErrors.isEmpty }

    public static func text(_ s: Summary, now: Date = Date(), previousSuccess: Double? = nil) -> String {
        var w = MetricsText()
        rows(s, &w)
        sends(s, &w)
        providers(s, &w)
        pass(s, &w)
        if let queue = s.queue { Self.queue(queue, &w) }
        outcome(s, now: now, previousSuccess: previousSuccess, &w)
        return w.out
    }

    /// What became of the pass's rows.
    static func rows(_ s: Summary, _ w: inout MetricsText) {
        w.metric("herald_pass_rows", "Rows the last pass recorded, by outcome.", "gauge", [
            (label([("outcome", "sent")]), Double(s.sent)),
            (label([("outcome", "skipped")]), Double(s.skipped)),
            (label([("outcome", "failed")]), Double(s.failed)),
            (label([("outcome", "deferred")]), Double(s.deferred)),
            (label([("outcome", "released")]), Double(s.released)),
        ])
        w.metric("herald_pass_rows_by_channel", "Rows the last pass recorded, by channel and outcome.", "gauge",
                 s.byChannel.sorted { $0.key < $1.key }.flatMap { channel, counts in
                     counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { (label([("channel", channel.name), ("outcome", $0.key.rawValue)]), Double($0.value)) }
                 })
        w.metric("herald_pass_skip_reasons", "Rows the last pass skipped, by reason.", "gauge",
                 s.skipReasons.sorted { $0.key.rawValue < $1.key.rawValue }.map { (label([("reason", $0.key.rawValue)]), Double($0.value)) })
        w.metric("herald_pass_unroutable_rows", "Due rows whose channel has no adapter configured.", "gauge",
                 s.unroutable.sorted { $0.key < $1.key }.map { (label([("channel", $0.key)]), Double($0.value)) })
    }

    /// The sends and how long the providers took to answer them.
    static func sends(_ s: Summary, _ w: inout MetricsText) {
        w.metric("herald_sends_total", "Sends of the last pass, one per destination, by channel, provider and outcome.", "counter",
                 s.sends.sorted { $0.key < $1.key }.map { key, n in
                     (label([("channel", key.channel), ("provider", key.provider.rawValue), ("outcome", key.outcome)]), Double(n))
                 })
        guard !s.latency.isEmpty else { return }
        let name = "herald_provider_request_duration_seconds"
        w.out += "# HELP \(name) How long providers took to answer, in the last pass.\n"
        w.out += "# TYPE \(name) histogram\n"
        for (provider, h) in s.latency.sorted(by: { $0.key < $1.key }) {
            var cumulative = 0
            for (i, bound) in LatencyHistogram.bounds.enumerated() {
                cumulative += h.counts[i]
                w.out += "\(name)_bucket\(label([("provider", provider.rawValue), ("le", String(bound))])) \(cumulative)\n"
            }
            w.out += "\(name)_bucket\(label([("provider", provider.rawValue), ("le", "+Inf")])) \(h.count)\n"
            w.out += "\(name)_sum\(label([("provider", provider.rawValue)])) \(h.sum)\n"
            w.out += "\(name)_count\(label([("provider", provider.rawValue)])) \(h.count)\n"
        }
    }

    /// What the pass learnt of its providers: pauses, configuration slips, breakers, refused credentials.
    static func providers(_ s: Summary, _ w: inout MetricsText) {
        w.metric("herald_pass_paused_rows", "Due rows held back by an operator's pause.", "gauge",
                 s.paused.sorted { $0.key < $1.key }.map { (label([("channel", $0.key)]), Double($0.value)) })
        w.metric("herald_pass_config_suspect",
                 "Destinations the last pass did not deactivate because most of their provider's answers were refusals: check that provider's configuration.",
                 "gauge", s.configSuspect.sorted { $0.key < $1.key }.map { (label([("provider", $0.key.rawValue)]), Double($0.value)) })
        w.metric("herald_pass_breaker_open", "Providers whose circuit breaker opened in the last pass (1 each).", "gauge",
                 s.breakerOpen.sorted().map { (label([("provider", $0.rawValue)]), 1) })
        w.metric("herald_pass_credentials_refused",
                 "Providers that refused herald's own credentials or configuration in the last pass (1 each): their rows wait until an operator fixes the setting.",
                 "gauge", s.credentialsRefused.sorted().map { (label([("provider", $0.rawValue)]), 1) })
    }

    /// The pass's own counts, phases and cost.
    static func pass(_ s: Summary, _ w: inout MetricsText) {
        w.metric("herald_pass_retrying_rows", "Failed rows of the last pass that will be retried.", "gauge", [("", Double(s.retrying))])
        w.metric("herald_pass_recovered_rows", "Rows returned to the queue after an expired lease.", "gauge", [("", Double(s.recovered))])
        w.metric("herald_pass_deliveries", "Sends attempted by the last pass, one per destination.", "gauge", [("", Double(s.deliveries))])
        w.metric("herald_pass_phase_errors", "Phases of the last pass that failed while the pass went on (1 each).", "gauge",
                 Set(s.phaseErrors.keys.map(\.name)).sorted().map { (label([("phase", $0)]), 1) })
        w.metric("herald_pass_batches", "Batches the last pass claimed.", "gauge", [("", Double(s.batches))])
        w.metric("herald_pass_reconnects", "Database connections the last pass opened again after they ended (a failover, a restart).",
                 "gauge", [("", Double(s.reconnects))])
        // Delivery truth (docs/delivery-truth.md): alert on rejected (signatures that fail: forgery or a wrong key) and
        // unverified (a provider's key is not configured).
        w.metric("herald_pass_provider_events", "Provider events the last pass processed, by outcome.", "gauge",
                 ProviderEventOutcome.allCases.compactMap { outcome in
                     s.generated[.providerEvents(outcome)].map { (label([("outcome", outcome.rawValue)]), Double($0)) }
                 })
        w.metric("herald_pass_forecasts_missed",
                 "Daily forecasts the last pass found past their notification time and not made (each counted once).", "gauge",
                 [("", Double(s.generated[.forecastsMissed] ?? 0))])
        w.metric("herald_pass_duration_seconds", "Wall time of the last pass.", "gauge", [("", Double(s.durationMs) / 1000)])
        if let m = s.peakMemoryBytes {
            w.metric("herald_pass_peak_memory_bytes", "Peak resident memory of the last pass.", "gauge", [("", Double(m))])
        }
    }

    /// The whole queue as the pass left it (`QueueGauges`).
    static func queue(_ q: QueueGauges, _ w: inout MetricsText) {
        w.metric("herald_queue_due_rows", "Rows due when the last pass ended, in the whole queue, not counting paused ones.", "gauge",
                 [("", Double(q.due))])
        w.metric("herald_queue_oldest_due_age_seconds",
                 "How long the oldest of those rows had waited past its run_after when the last pass ended (0: none due).", "gauge",
                 [("", q.oldestDueAgeSeconds)])
        w.metric("herald_queue_dead_rows", "Rows failed for good (no pass tries them again) when the last pass ended.", "gauge",
                 [("", Double(q.dead))])
    }

    /// Success, and when: what the staleness alert reads.
    static func outcome(_ s: Summary, now: Date, previousSuccess: Double?, _ w: inout MetricsText) {
        let succeeded = Self.succeeded(s)
        w.metric("herald_pass_success", "1 when the last pass completed, 0 when it failed, was interrupted or a phase failed.", "gauge",
                 [("", succeeded ? 1 : 0)])
        w.metric("herald_last_run_timestamp_seconds", "When the last pass finished.", "gauge",
                 [("", now.timeIntervalSince1970.rounded())])
        let lastSuccess = succeeded ? now.timeIntervalSince1970.rounded() : previousSuccess
        if let lastSuccess {
            w.metric("herald_last_success_timestamp_seconds", "When the last successful pass finished.", "gauge",
                     [("", lastSuccess)])
        }
    }

    /// Written to a temporary file and renamed, so the collector never reads half a file.
    public static func write(_ s: Summary, to path: String, now: Date = Date()) throws {
        let tmp = path + ".\(getpid()).tmp"
        try text(s, now: now, previousSuccess: lastSuccess(in: path)).write(toFile: tmp, atomically: false, encoding: .utf8)
        if rename(tmp, path) != 0 {
            unlink(tmp)
            throw ConfigError("cannot rename \(tmp) to \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The success time recorded in an earlier metrics file, if any.
    static func lastSuccess(in path: String) -> Double? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("herald_last_success_timestamp_seconds ") {
            return Double(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    /// A sample's labels: `{name="value",…}`.
    static func label(_ pairs: [(String, String)]) -> String {
        "{" + pairs.map { "\($0)=\"\(escape($1))\"" }.joined(separator: ",") + "}"
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// The Prometheus text being written: each family's HELP and TYPE, then its samples.
struct MetricsText {
    var out = ""

    mutating func metric(_ name: String, _ help: String, _ type: String, _ samples: [(String, Double)]) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for (labels, v) in samples {
            let value = Int(exactly: v).map(String.init) ?? String(v)
            out += "\(name)\(labels) \(value)\n"
        }
    }
}
