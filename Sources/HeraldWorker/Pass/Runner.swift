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
    /// The pass delivered, but a housekeeping or generator phase failed (`phase_errors` in the summary
    /// says which): delivery went on without it.
    case degraded = 4
}

/// One `herald run`: check the configuration, connect, recover and prune, run the phases, report.
///
///     let (summary, code) = Runner(settings: try Settings.load(), options: options, logger: logger).run()
public struct Runner {
    /// A connection of the pass, with its per-transaction timeouts (statement 60 s, lock 10 s, idle in
    /// transaction 60 s).
    ///
    ///     let db = try Runner.connect(url, applicationName: "herald \(passId)")
    static func connect(_ url: String, applicationName: String) throws -> PGConnection {
        let db = try PGConnection(url, applicationName: applicationName)
        try db.setTimeouts(statement: 60_000, lock: 10_000, idleInTransaction: 60_000)
        return db
    }

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
        var databaseURL = ""
        var heartbeat: Heartbeat?
        var pushgateway: Pushgateway?
        var eventKeys = ProviderEventKeys()
        do {
            heartbeat = try Heartbeat(url: settings["HERALD_HEARTBEAT_URL"])
            pushgateway = try Pushgateway(url: options.pushgateway ?? settings["HERALD_PUSHGATEWAY_URL"],
                                          instance: settings["HERALD_PUSHGATEWAY_INSTANCE"])
            databaseURL = try settings.databaseURL() ?? ""
            guard options.batchSize > 0 else { throw ConfigError("--batch-size must be at least 1") }
            guard options.deadline.isFinite, options.deadline > 0 else { throw ConfigError("--deadline must be a positive number of seconds") }
            routes = try ChannelRoutes.load(settings)
            eventKeys = try ProviderEventsPhase.keys(settings)
            var transportOptions = TransportOptions()
            if let ca = settings["HERALD_CA_FILE"] {
                guard FileManager.default.isReadableFile(atPath: ca) else {
                    throw ConfigError("HERALD_CA_FILE names \(ca), which cannot be read")
                }
                transportOptions.caFile = ca
            }
            if let perHost = try settings.int("HERALD_CONNECTIONS_PER_HOST", in: 1...1000) {
                transportOptions.maxConnectionsPerHost = perHost
            }
            transport = try HTTPTransport(options: transportOptions)
            outbox = try Outbox(path: settings["HERALD_LOG_ADAPTER_FILE"], logger: logger)
            options.render.detailedLockScreen = try settings.bool("HERALD_DETAILED_LOCK_SCREEN") ?? false
            if let scheme = settings["HERALD_DEEP_LINK_SCHEME"] { options.render.deepLinkScheme = scheme }
            options.render.silentKinds = try Runner.silentKinds(settings["HERALD_SILENT_KINDS"])
            if let lease = try settings.int("HERALD_LEASE_SECONDS", in: Runner.leaseRange) { options.leaseSeconds = lease }
            try Runner.checkLease(options, longestSend: routes.longestSendTimeout)
            if let shadow = try settings.bool("HERALD_SHADOW_MODE") { options.shadowMode = shadow }
            if let version = settings["HERALD_THRESHOLDS_VERSION"] { options.thresholdsVersion = version }
            if let weather = settings["WEATHER_URL"] {
                guard let u = URL(string: weather), u.scheme == "https" || u.scheme == "http", u.host != nil else {
                    throw ConfigError("WEATHER_URL must be an http(s) URL, got '\(weather)'")
                }
                options.weatherURL = weather.hasSuffix("/") ? String(weather.dropLast()) : weather
            }
            if let days = try settings.int("HERALD_RETENTION_DAYS", in: 1...36_500) { options.retentionDays = days }
            if let text = settings["HERALD_ESCALATION"] {
                guard let chain = EscalationPolicy.parseChain(text) else {
                    throw ConfigError("HERALD_ESCALATION must be channels separated by commas (push,sms,email) or off; got '\(text)'")
                }
                options.escalation.chain = chain
            }
            for (key, text) in settings.withPrefix("HERALD_ESCALATION_") {
                let kind = key.dropFirst("HERALD_ESCALATION_".count).lowercased()
                guard Kind(rawValue: kind) != nil else {
                    throw ConfigError("\(key) names no kind; kinds: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                guard let chain = EscalationPolicy.parseChain(text) else {
                    throw ConfigError("\(key) must be channels separated by commas or off; got '\(text)'")
                }
                options.escalation.perKind[kind] = chain
            }
            if let days = try settings.int("HERALD_AUDIT_RETENTION_DAYS", in: 1...36_500) { options.auditRetentionDays = days }
        } catch {
            summary.ok = false
            summary.error = "\(error)"
            logger.error("configuration error", metadata: ["error": .string("\(error)")])
            if let heartbeat, let transport = try? HTTPTransport() {
                heartbeat.ping("start", transport: transport, logger: logger)
                heartbeat.ping("\(ExitCode.configuration.rawValue)", transport: transport, logger: logger)
            }
            return (summary, .configuration)
        }
        heartbeat?.ping("start", transport: transport, logger: logger)

        // 2. The database.
        let db: PGConnection
        do {
            db = try Runner.connect(databaseURL, applicationName: "herald \(summary.passId)")
        } catch {
            summary.ok = false
            summary.error = "cannot reach the database: \(error)"
            logger.error("cannot reach the database", metadata: [
                "error": .string("\(error)"),
                "hint": "set DATABASE_URL (a postgresql:// URI or a libpq conninfo), or libpq's PG* variables",
            ])
            pushgateway?.push(summary, transport: transport, logger: logger)
            heartbeat?.ping("\(ExitCode.database.rawValue)", transport: transport, logger: logger)
            return (summary, .database)
        }
        defer { db.close() }

        /// Ends the pass before any row is claimed: the summary and the log say why, the heartbeat the code.
        func endBeforeClaiming(_ code: ExitCode, _ error: String, log message: Logger.Message) -> (Summary, ExitCode) {
            summary.ok = false
            summary.error = error
            logger.error(message, metadata: ["error": .string(error)])
            heartbeat?.ping("\(code.rawValue)", transport: transport, logger: logger)
            return (summary, code)
        }

        // A schema behind this binary is refused before anything is claimed (see `SchemaVersion`);
        // one ahead of it, or one whose migrations cannot be read, is run against, with a warning.
        do {
            switch try SchemaVersion.check(db) {
            case nil:
                logger.warning("cannot read which migrations the database has (schema_migrations): run `herald migrate`, or grant select on it, so a pass can tell a schema behind its release",
                               metadata: ["herald_schema": "\(SchemaVersion.required)"])
            case let applied? where applied > SchemaVersion.required:
                logger.warning("the database's schema is newer than this herald: deploy the release that matches it",
                               metadata: ["schema": "\(applied)", "herald_schema": "\(SchemaVersion.required)"])
            default:
                break
            }
        } catch let error as SchemaBehind {
            return endBeforeClaiming(.configuration, "\(error)", log: "configuration error")
        } catch {
            return endBeforeClaiming(.database, "cannot read the database's schema version: \(error)",
                                     log: "cannot read the database's schema version")
        }
        // A --shard the queue's partitions do not match is a configuration error; a statement that
        // fails while checking it is a database error.
        if let shard = options.shard {
            do { try QueueStore.checkShard(shard, db: db) } catch let error as ShardMismatch {
                return endBeforeClaiming(.configuration, "\(error)", log: "configuration error")
            } catch {
                return endBeforeClaiming(.database, "cannot read the queue's partitions: \(error)",
                                         log: "cannot read the queue's partitions")
            }
        }
        let store = QueueStore(db: db, passId: summary.passId, shard: options.shard)
        var code = ExitCode.ok
        do {
            if !options.dryRun {
                try db.execute("""
                    insert into herald_passes (pass_id, started_at, host)
                    values (\(summary.passId), now(), \(ProcessInfo.processInfo.hostName))
                    """)
                // Housekeeping runs in isolation: a failure is logged and counted, and delivery goes on.
                isolated("recover", db: db, logger: logger, summary: &summary) { summary in
                    summary.recovered = try store.recoverExpiredLeases()
                    if summary.recovered > 0 {
                        logger.warning("returned rows whose lease expired to the queue", metadata: ["rows": "\(summary.recovered)"])
                    }
                }
                isolated("prune", db: db, logger: logger, summary: &summary) { summary in
                    summary.pruned = try store.pruneTerminal(retentionDays: options.retentionDays, now: clock.now())
                }
                isolated("audit", db: db, logger: logger, summary: &summary) { summary in
                    let dropped = try store.maintainAuditTrail(retentionDays: options.auditRetentionDays)
                    if dropped > 0 { summary.generated[.auditPartitionsDropped] = dropped }
                }
            }
            if options.dryRun {
                // Generators write; a dry run lets them, then rolls everything back.
                try db.execute("begin")  // PGConnection adds the timeouts (SET LOCAL)
            }
            generate(db: db, transport: transport, options: options, clock: clock, logger: logger, summary: &summary)
            if options.phases.contains(.deliver) {
                let pass = DeliveryPass(store: store, routes: routes, transport: transport, options: options,
                                        clock: clock, logger: logger, outbox: outbox, summary: summary)
                defer { summary = pass.summary }
                if !options.dryRun {
                    let name = "herald \(summary.passId) records"
                    pass.openRecordConnection = { try Runner.connect(databaseURL, applicationName: name) }
                }
                try pass.run()
            }
            if options.phases.contains(.receipts) && !options.dryRun && !summary.interrupted {
                for checker in routes[.push]?.receiptCheckers ?? [] where !summary.interrupted {
                    isolated(Phase.receipts.rawValue, db: db, logger: logger, summary: &summary) { summary in
                        let r = try ReceiptsPhase(db: db, now: clock.now(), logger: logger, transport: transport,
                                                  checker: checker).run()
                        summary.generated[.receiptsChecked] = (summary.generated[.receiptsChecked] ?? 0) + r.checked
                        if r.deactivated > 0 {
                            summary.generated[.tokensDeactivated] = (summary.generated[.tokensDeactivated] ?? 0) + r.deactivated
                        }
                    }
                }
            }
            // Delivery truth (issue 12): provider events first (they need no network), then status polling.
            if options.phases.contains(.events) && !options.dryRun && !summary.interrupted {
                isolated(Phase.events.rawValue, db: db, logger: logger, summary: &summary) { summary in
                    var phase = ProviderEventsPhase(db: db, now: clock.now(), logger: logger, keys: eventKeys)
                    phase.retentionDays = options.retentionDays
                    let r = try phase.run()
                    if r.processed > 0 {
                        summary.generated[.providerEvents] = r.processed
                        for (outcome, n) in r.outcomes { summary.generated["provider_events_\(outcome)"] = n }
                    }
                    if r.updated > 0 { summary.generated[.truthFromEvents] = r.updated }
                    if r.optedOut > 0 { summary.generated[.truthChannelsOff] = (summary.generated[.truthChannelsOff] ?? 0) + r.optedOut }
                }
            }
            let pollers = routes.statusPollers
            if options.phases.contains(.statuses) && !options.dryRun && !summary.interrupted && !pollers.isEmpty {
                isolated(Phase.statuses.rawValue, db: db, logger: logger, summary: &summary) { summary in
                    let r = try StatusPollPhase(db: db, now: clock.now(), logger: logger, transport: transport, pollers: pollers).run()
                    if r.checked > 0 { summary.generated[.statusesChecked] = r.checked }
                    if r.final > 0 { summary.generated[.statusesFinal] = r.final }
                    if r.expired > 0 { summary.generated[.statusesExpired] = r.expired }
                    if r.optedOut > 0 { summary.generated[.truthChannelsOff] = (summary.generated[.truthChannelsOff] ?? 0) + r.optedOut }
                }
            }
            if summary.interrupted { code = .interrupted } else if !summary.phaseErrors.isEmpty { code = .degraded }
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
                       summary = \(summary.json.pgJSONText)::jsonb
                 where pass_id = \(summary.passId)
                """)
        }
        if let path = options.metricsFile {
            do { try Metrics.write(summary, to: path) } catch {
                logger.warning("could not write the metrics file", metadata: ["path": .string(path), "error": .string("\(error)")])
            }
        }
        if !options.dryRun {
            pushgateway?.push(summary, transport: transport, logger: logger)
            heartbeat?.ping("\(code.rawValue)", transport: transport, logger: logger)
        }
        logger.info("pass finished", metadata: [
            "processed": "\(summary.processed)", "sent": "\(summary.sent)", "skipped": "\(summary.skipped)",
            "failed": "\(summary.failed)", "deferred": "\(summary.deferred)", "duration_ms": "\(summary.durationMs)",
        ])
        return (summary, code)
    }

    /// The seconds HERALD_LEASE_SECONDS may give: at most a day, so that the rows of a pass that died
    /// come back within a day (and `make_interval` never overflows). How short it may be is
    /// `checkLease`'s to say.
    static let leaseRange = 1...86_400

    /// The lease must be positive and outlast the deadline plus the longest send timeout, or a row
    /// could be taken over while its send is still in flight.
    static func checkLease(_ options: PassOptions, longestSend: Double) throws {
        let needed = options.deadline + longestSend
        guard options.leaseSeconds > 0, Double(options.leaseSeconds) > needed else {
            throw ConfigError("HERALD_LEASE_SECONDS=\(options.leaseSeconds) is too short: a lease must be longer than "
                + "--deadline (\(options.deadline.formatted0) s) plus the longest send timeout (\(longestSend.formatted0) s), "
                + "i.e. more than \(needed.formatted0) s (default 600)")
        }
    }

    /// Runs one phase so that its failure stops only that phase: the error is logged, counted in
    /// `phase_errors` (summary and metrics file), and the pass goes on; the exit code becomes 4.
    /// Its open transaction (or, in a dry run, its savepoint) is rolled back.
    func isolated(_ phase: String, db: PGConnection, logger: Logger, summary: inout Summary,
                  _ body: (inout Summary) throws -> Void) {
        let wasIdle = !db.inTransaction
        do {
            try db.savepointIfInTransaction { try body(&summary) }
        } catch {
            summary.phaseErrors[phase] = "\(error)"
            logger.error("a phase failed; the pass goes on without it", metadata: [
                "phase": .string(phase), "error": .string("\(error)")])
            // A transaction the phase left open is rolled back; an outer one (a dry run's) is kept.
            if wasIdle { db.rollbackIfInTransaction() }
        }
    }

    /// The generator phases, in the order they run: each fills the queue from the data the apps write.
    static let generators: [any GeneratorPhase] = [
        PatternsGenerator(), ForecastsGenerator(), PromptsGenerator(), RemindersGenerator(),
    ]

    /// Runs the selected generator phases, each in isolation: one that fails is reported and the
    /// others, and delivery, still run.
    func generate(db: PGConnection, transport: HTTPTransport, options: PassOptions, clock: PassClock,
                  logger: Logger, summary: inout Summary) {
        for generator in Self.generators where options.phases.contains(generator.phase) {
            if StopSignal.requested { summary.interrupted = true; return }
            isolated(generator.phase.rawValue, db: db, logger: logger, summary: &summary) { summary in
                let context = GeneratorContext(db: db, passId: summary.passId, now: clock.now(), logger: logger,
                                               transport: transport, options: options, settings: settings)
                try generator.run(context, summary: &summary)
            }
        }
    }
}

extension Double {
    /// Whole seconds for messages, without trapping on any value.
    var formatted0: String { isFinite && abs(self) < 1e15 ? String(Int64(self.rounded())) : String(self) }
}

extension Runner {
    /// HERALD_SILENT_KINDS: a comma-separated list of kinds sent as silent data-only pushes
    /// (`prompt`, `reminder`, …); empty or `none` for none. An unknown kind exits 1 naming it.
    static func silentKinds(_ value: String?) throws -> Set<String> {
        guard let value else { return [] }
        var kinds: Set<String> = []
        for part in value.split(separator: ",") {
            let kind = part.trimmingCharacters(in: .whitespaces).lowercased()
            if kind.isEmpty || kind == "none" { continue }
            guard Kind(rawValue: kind) != nil else {
                throw ConfigError("HERALD_SILENT_KINDS names an unknown kind '\(kind)' (known: \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            kinds.insert(kind)
        }
        return kinds
    }
}
