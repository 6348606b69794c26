import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// Exit codes of `herald` (DESIGN §1).
public enum ExitCode: Int32, Sendable {
    /// The pass completed (some deliveries may have failed and will be retried).
    case ok = 0
    /// A configuration error: nothing was touched.
    case configuration = 1
    /// The database could not be reached, or a statement failed.
    case database = 2
    /// SIGTERM/SIGINT: in-flight rows were finished or released and recorded.
    case interrupted = 3
}

/// One `herald run`: check the configuration, connect, recover and prune, run the phases, report.
///
///     let (summary, code) = Runner(settings: try Settings.load(), options: options, logger: logger).run()
public struct Runner {
    public var settings: Settings
    public var options: PassOptions
    public var logger: Logger

    public init(settings: Settings, options: PassOptions, logger: Logger) {
        self.settings = settings
        self.options = options
        self.logger = logger
    }

    public static func newPassId() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        return "\(host)-\(getpid())-\(suffix)"
    }

    public func run() -> (Summary, ExitCode) {
        let clock = PassClock(now: options.now)
        var summary = Summary(passId: Runner.newPassId())
        summary.dryRun = options.dryRun
        var logger = self.logger
        logger[metadataKey: "pass_id"] = .string(summary.passId)

        // 1. Configuration, before any row is touched.
        let routes: ChannelRoutes
        let transport: HTTPTransport
        let outbox: Outbox
        var options = self.options
        do {
            let missing = options.phases.filter { !Phase.available.contains($0) }
            if !missing.isEmpty {
                throw ConfigError("phase \(missing.map(\.rawValue).joined(separator: ", ")) is not available in this "
                    + "version of herald; available: \(Phase.available.map(\.rawValue).joined(separator: ", "))")
            }
            guard options.batchSize > 0 else { throw ConfigError("--batch-size must be at least 1") }
            guard options.leaseSeconds > Int(options.deadline) else {
                throw ConfigError("the lease (HERALD_LEASE_SECONDS=\(options.leaseSeconds)) must outlast --deadline (\(Int(options.deadline)) s) plus one send timeout")
            }
            routes = try ChannelRoutes.load(settings)
            var transportOptions = TransportOptions()
            if let ca = settings["HERALD_CA_FILE"] {
                guard FileManager.default.isReadableFile(atPath: ca) else {
                    throw ConfigError("HERALD_CA_FILE names \(ca), which cannot be read")
                }
                transportOptions.caFile = ca
            }
            if let perHost = try settings.int("HERALD_CONNECTIONS_PER_HOST") {
                guard (1...1000).contains(perHost) else {
                    throw ConfigError("HERALD_CONNECTIONS_PER_HOST must be between 1 and 1000 (it is \(perHost))")
                }
                transportOptions.maxConnectionsPerHost = perHost
            }
            transport = try HTTPTransport(options: transportOptions)
            outbox = try Outbox(path: settings["HERALD_LOG_ADAPTER_FILE"], logger: logger)
            options.render.detailedLockScreen = try settings.bool("HERALD_DETAILED_LOCK_SCREEN") ?? false
            if let scheme = settings["HERALD_DEEP_LINK_SCHEME"] { options.render.deepLinkScheme = scheme }
            if let lease = try settings.int("HERALD_LEASE_SECONDS") { options.leaseSeconds = lease }
            if let shadow = try settings.bool("HERALD_SHADOW_MODE") { options.shadowMode = shadow }
            if let version = settings["HERALD_THRESHOLDS_VERSION"] { options.thresholdsVersion = version }
            if let weather = settings["WEATHER_URL"] {
                guard let u = URL(string: weather), u.scheme == "https" || u.scheme == "http", u.host != nil else {
                    throw ConfigError("WEATHER_URL must be an http(s) URL, got '\(weather)'")
                }
                options.weatherURL = weather.hasSuffix("/") ? String(weather.dropLast()) : weather
            }
            if let days = try settings.int("HERALD_RETENTION_DAYS") { options.retentionDays = days }
        } catch {
            summary.ok = false
            summary.error = "\(error)"
            logger.error("configuration error", metadata: ["error": .string("\(error)")])
            return (summary, .configuration)
        }

        // 2. The database.
        let db: PGConnection
        do {
            db = try PGConnection(settings["DATABASE_URL"] ?? "", applicationName: "herald \(summary.passId)")
            try db.setTimeouts(statement: 60_000, lock: 10_000, idleInTransaction: 60_000)
        } catch {
            summary.ok = false
            summary.error = "cannot reach the database: \(error)"
            logger.error("cannot reach the database", metadata: [
                "error": .string("\(error)"),
                "hint": "set DATABASE_URL (a postgresql:// URI or a libpq conninfo), or libpq's PG* variables",
            ])
            return (summary, .database)
        }
        defer { db.close() }

        let store = QueueStore(db: db, passId: summary.passId)
        var code = ExitCode.ok
        do {
            if !options.dryRun {
                try db.execute("""
                    insert into herald_passes (pass_id, started_at, host)
                    values (\(summary.passId), now(), \(ProcessInfo.processInfo.hostName))
                    """)
                summary.recovered = try store.recoverExpiredLeases()
                if summary.recovered > 0 {
                    logger.warning("returned rows whose lease expired to the queue", metadata: ["rows": "\(summary.recovered)"])
                }
                summary.pruned = try store.pruneTerminal(retentionDays: options.retentionDays)
            }
            if options.dryRun {
                // Generators write; a dry run lets them, then rolls everything back.
                try db.execute("begin")
            }
            try generate(db: db, transport: transport, options: options, clock: clock, logger: logger, summary: &summary)
            if options.phases.contains(.deliver) {
                let pass = DeliveryPass(store: store, routes: routes, transport: transport, options: options,
                                        clock: clock, logger: logger, outbox: outbox, summary: summary)
                defer { summary = pass.summary }
                try pass.run()
            }
            if options.phases.contains(.receipts) && !options.dryRun && !summary.interrupted,
               case .batch(let adapter as ExpoAdapter)? = routes[.push]?.adapter(for: "expo") {
                let r = try ReceiptsPhase(db: db, now: clock.now(), logger: logger, transport: transport, expo: adapter).run()
                summary.generated["receipts_checked"] = r.checked
                if r.deactivated > 0 { summary.generated["tokens_deactivated"] = r.deactivated }
            }
            if summary.interrupted { code = .interrupted }
        } catch {
            summary.ok = false
            summary.error = "\(error)"
            logger.error("database error; rows this pass held return to the queue when their lease expires",
                         metadata: ["error": .string("\(error)")])
            code = .database
        }

        summary.durationMs = Int(clock.elapsed * 1000)
        summary.peakMemoryBytes = ProcessMemory.peakBytes()
        if options.dryRun { _ = try? db.execute("rollback") }
        if !options.dryRun {
            _ = try? db.execute("""
                update herald_passes set finished_at = now(), exit_code = \(Int(code.rawValue)),
                       summary = \(summary.json.jsonText)::jsonb
                 where pass_id = \(summary.passId)
                """)
        }
        if let path = options.metricsFile {
            do { try Metrics.write(summary, to: path) } catch {
                logger.warning("could not write the metrics file", metadata: ["path": .string(path), "error": .string("\(error)")])
            }
        }
        logger.info("pass finished", metadata: [
            "processed": "\(summary.processed)", "sent": "\(summary.sent)", "skipped": "\(summary.skipped)",
            "failed": "\(summary.failed)", "deferred": "\(summary.deferred)", "duration_ms": "\(summary.durationMs)",
        ])
        return (summary, code)
    }

    /// The generator phases, in order: each fills the queue from the data the apps write.
    func generate(db: PGConnection, transport: HTTPTransport, options: PassOptions, clock: PassClock,
                  logger: Logger, summary: inout Summary) throws {
        let passId = summary.passId
        for phase in Phase.allCases where options.phases.contains(phase) {
            if StopSignal.requested { summary.interrupted = true; return }
            let now = clock.now()
            switch phase {
            case .patterns:
                var p = PatternPhase(db: db, passId: passId, now: now, logger: logger)
                p.shadowMode = options.shadowMode
                p.thresholdsVersion = options.thresholdsVersion
                p.readerURL = settings["DATABASE_URL"]
                p.batchSize = max(1, options.patternChunk)
                let r = try p.run()
                summary.generated["patterns"] = r.enqueued
                summary.generated["patterns_users"] = r.users
                summary.generated["episodes_opened"] = r.episodesOpened
                summary.generated["episodes_resolved"] = r.episodesResolved
            case .forecasts:
                var f = ForecastPhase(db: db, passId: passId, now: now, logger: logger, transport: transport)
                f.weatherURL = options.dryRun ? nil : options.weatherURL
                let r = try f.run()
                summary.generated["forecasts"] = r.enqueued
                if r.fetched + r.fetchFailures > 0 {
                    summary.generated["weather_fetched"] = r.fetched
                    summary.generated["weather_failed"] = r.fetchFailures
                }
            case .prompts:
                summary.generated["prompts"] = try PromptPhase(db: db, passId: passId, now: now).run()
            case .reminders:
                summary.generated["reminders"] = try ReminderPhase(db: db, passId: passId, now: now).run()
            case .deliver, .receipts:
                continue
            }
        }
    }
}
