import Foundation
import HeraldHTTP
import Logging

/// A dead man's switch (healthchecks.io, Sentry Crons): a request to `<url>/start` when a pass begins
/// and to `<url>/<exit code>` when it ends, so the monitor notices a pass that failed — and a cron that
/// stopped starting herald at all. Best effort: a short timeout, and a failure only logs a warning.
///
///     let heartbeat = try Heartbeat(url: settings["HERALD_HEARTBEAT_URL"])
///     heartbeat?.ping("start", transport: transport, logger: logger)
///     …
///     heartbeat?.ping("\(code.rawValue)", transport: transport, logger: logger)
public struct Heartbeat: Sendable {
    public let url: String
    public var timeout: Double = 5

    /// Nil when `url` is nil; throws when it is not an http(s) URL.
    public init?(url: String?) throws {
        guard let url else { return nil }
        self.url = try monitorBase(url, named: "HERALD_HEARTBEAT_URL")
    }

    /// GETs `<url>/<suffix>`; never throws.
    public func ping(_ suffix: String, transport: HTTPTransport, logger: Logger) {
        let request = HTTPRequest(method: "GET", url: url + "/" + suffix, timeout: timeout, version: .http1_1)
        switch transport.perform(request) {
        case .success(let response) where (200..<300).contains(response.status):
            logger.debug("heartbeat sent", metadata: ["signal": .string(suffix)])
        case .success(let response):
            logger.warning("the heartbeat monitor refused the ping", metadata: [
                "signal": .string(suffix), "status": "\(response.status)"])
        case .failure(let error):
            // The URL carries the check's secret id: only the error is logged.
            logger.warning("could not reach the heartbeat monitor", metadata: [
                "signal": .string(suffix), "error": .string("\(error)")])
        }
    }
}

/// Pushes the pass's metrics to a Prometheus Pushgateway, for passes on several hosts or in a
/// Kubernetes CronJob where no node_exporter reads a textfile, under `job/herald/instance/<instance>`:
/// `HERALD_PUSHGATEWAY_INSTANCE`, else the host name (a CronJob's pods each have a new one, so set it
/// there, or every pass leaves a group behind). A successful pass `PUT`s, replacing the group; any
/// other `POST`s, replacing only the metrics it pushes, so the group keeps the last success's
/// `herald_last_success_timestamp_seconds` and an alert on its age fires. Best effort, like the heartbeat.
public struct Pushgateway: Sendable {
    public let url: String
    public let instance: String
    public var timeout: Double = 5

    public init?(url: String?, instance: String? = nil) throws {
        guard let url else { return nil }
        self.url = try monitorBase(url, named: "the Pushgateway URL (--pushgateway or HERALD_PUSHGATEWAY_URL)")
        let given = instance?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        self.instance = given.isEmpty ? ProcessInfo.processInfo.hostName : given
    }

    /// The grouping key's path: job `herald`, instance = this host (path-escaped).
    public static func groupPath(host: String) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let instance = host.addingPercentEncoding(withAllowedCharacters: allowed) ?? "unknown"
        return "/metrics/job/herald/instance/" + (instance.isEmpty ? "unknown" : instance)
    }

    public func push(_ summary: Summary, transport: HTTPTransport, logger: Logger) {
        let text = Metrics.text(summary)
        let request = HTTPRequest(method: Metrics.succeeded(summary) ? "PUT" : "POST", url: url + Self.groupPath(host: instance),
                                  headers: [("content-type", "text/plain; version=0.0.4")],
                                  body: Array(text.utf8), timeout: timeout, version: .http1_1)
        switch transport.perform(request) {
        case .success(let response) where (200..<300).contains(response.status):
            logger.debug("metrics pushed")
        case .success(let response):
            logger.warning("the Pushgateway refused the metrics", metadata: ["status": "\(response.status)"])
        case .failure(let error):
            logger.warning("could not push the metrics", metadata: ["error": .string("\(error)")])
        }
    }
}

/// A monitoring endpoint's base URL without trailing slashes; throws naming `setting` unless http(s).
private func monitorBase(_ url: String, named setting: String) throws -> String {
    guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
          scheme == "https" || scheme == "http", parsed.host != nil else {
        throw ConfigError("\(setting) must be an http(s) URL")
    }
    var base = url
    while base.hasSuffix("/") { base.removeLast() }
    return base
}
