import Foundation
import HeraldHTTP
import HeraldPostgres
import Logging

/// The one way a pass ends, whatever ended it: the summary's duration and peak memory, a dry run's
/// writes rolled back, the queue's gauges (when metrics are reported), the pass's row in
/// `herald_passes`, the metrics file, the Pushgateway, the heartbeat's exit code, and the log's last
/// line. A dry run tells the monitors nothing.
///
///     var end = PassEnd(options: options, clock: clock, logger: logger)
///     … return end.fail(.configuration, "\(error)", log: "configuration error", &summary)
///     … return end.finish(code, &summary)
struct PassEnd {
    let options: PassOptions
    let clock: PassClock
    let logger: Logger
    var heartbeat: Heartbeat?
    var pushgateway: Pushgateway?
    /// The pass's transport, once the configuration allowed one.
    var transport: HTTPTransport?
    var db: PGConnection?
    /// The pass's row in `herald_passes` was written: its end is recorded there.
    var recorded = false
    private var heartbeatStarted = false

    init(options: PassOptions, clock: PassClock, logger: Logger) {
        self.options = options
        self.clock = clock
        self.logger = logger
    }

    /// The monitors, first of all the settings, so that a configuration error is reported to them too.
    mutating func monitor(_ settings: Settings, pushgateway url: String?) throws {
        heartbeat = try Heartbeat(url: settings["HERALD_HEARTBEAT_URL"])
        pushgateway = try Pushgateway(url: url ?? settings["HERALD_PUSHGATEWAY_URL"],
                                      instance: settings["HERALD_PUSHGATEWAY_INSTANCE"])
    }

    /// The heartbeat's `start`, once.
    mutating func started() {
        guard !options.dryRun, !heartbeatStarted, let heartbeat, let transport = transport ?? (try? HTTPTransport()) else { return }
        heartbeatStarted = true
        heartbeat.ping("start", transport: transport, logger: logger)
    }

    /// Ends a pass that could not run: the summary and the log say why.
    mutating func fail(_ code: ExitCode, _ error: String, log message: Logger.Message, _ summary: inout Summary,
                       hint: String? = nil) -> (Summary, ExitCode) {
        summary.ok = false
        summary.error = error
        var metadata: Logger.Metadata = ["error": .string(error)]
        if let hint { metadata["hint"] = .string(hint) }
        logger.error(message, metadata: metadata)
        started()
        return finish(code, &summary)
    }

    /// The queue's gauges, for a pass that reports metrics and whose connection still serves: an
    /// alert on the backlog or on dead rows reads them. A failed read costs the gauges, not the pass.
    private func readQueueGauges(_ code: ExitCode, _ summary: inout Summary) {
        let reports = options.metricsFile != nil || (pushgateway != nil && !options.dryRun)
        guard reports, [.ok, .degraded, .interrupted].contains(code), let db, !db.inTransaction else { return }
        do {
            summary.queue = try QueueGauges.read(db, now: clock.now())
        } catch {
            logger.warning("could not read the queue's gauges for the metrics", metadata: ["error": .string("\(error)")])
        }
    }

    /// Ends the pass with `code`.
    mutating func finish(_ code: ExitCode, _ summary: inout Summary) -> (Summary, ExitCode) {
        summary.ok = code == .ok
        summary.exitCode = code.rawValue
        summary.durationMs = Int(clock.elapsed * 1000)
        summary.peakMemoryBytes = ProcessMemory.peakBytes()
        if options.dryRun { _ = try? db?.execute("rollback") }
        readQueueGauges(code, &summary)
        if recorded, let db {
            _ = try? db.execute("""
                update herald_passes set finished_at = now(), exit_code = \(Int(code.rawValue)),
                       summary = \(summary.json.pgJSONText)::jsonb
                 where pass_id = \(summary.passId)
                """)
        }
        if let path = options.metricsFile {
            do { try Metrics.write(summary, to: path) } catch {
                logger.warning("could not write the metrics file", metadata: ["path": .string(path), "error": .string("\(error)")])
            }
        }
        if !options.dryRun, let transport = transport ?? (try? HTTPTransport()) {
            pushgateway?.push(summary, transport: transport, logger: logger)
            heartbeat?.ping("\(code.rawValue)", transport: transport, logger: logger)
        }
        logger.info("pass finished", metadata: [
            "processed": "\(summary.processed)", "sent": "\(summary.sent)", "skipped": "\(summary.skipped)",
            "failed": "\(summary.failed)", "deferred": "\(summary.deferred)", "duration_ms": "\(summary.durationMs)",
            "exit_code": "\(code.rawValue)",
        ])
        return (summary, code)
    }
}
