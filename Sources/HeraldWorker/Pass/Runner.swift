import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// Exit codes of `herald`.
public enum ExitCode: Int32, Sendable {
    /// The pass completed (some deliveries may have failed and will be retried).
    case ok = 0
    /// A configuration error: nothing was touched.
    case configuration = 1
    /// The database could not be reached, or a statement failed.
    case database = 2
    /// SIGTERM/SIGINT/SIGHUP: in-flight rows were finished or released and recorded.
    case interrupted = 3
    /// The pass delivered, but a housekeeping or generator phase failed (`phase_errors` in the summary
    /// says which): delivery went on without it.
    case degraded = 4
}

/// One `herald run`: read the configuration, connect, check the schema, keep house, run the phases in
/// order, and end — every way a pass ends goes through `PassEnd`.
///
///     let (summary, code) = Runner(settings: try Settings.load(), options: options, logger: logger).run()
public struct Runner {
    /// The steps, one per phase, in the order a pass runs them (`Phase.allCases`).
    static let steps: [any PassStep] = [
        PatternsStep(), ForecastsStep(), PromptsStep(), RemindersStep(),
        DeliverStep(), ReceiptsStep(), EventsStep(), StatusesStep(),
    ]

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
        var summary = Summary(passId: Runner.newPassId())
        summary.dryRun = options.dryRun
        var logger = self.logger
        logger[metadataKey: "pass_id"] = .string(summary.passId)
        var end = PassEnd(options: options, clock: PassClock(now: options.now, shift: options.clockShift), logger: logger)

        // 1. Configuration, before any row is touched.
        let config: PassConfig
        let outbox: Outbox
        do {
            try end.monitor(settings, pushgateway: options.pushgateway)
            config = try PassConfig.load(settings, options: options)
            end.transport = try HTTPTransport(options: config.transport)
            outbox = try Outbox(path: config.logAdapterFile, logger: logger)
            if options.dryRun { summary.notRun = DryRunScope.notRun(config) }
        } catch {
            return end.fail(.configuration, "\(error)", log: "configuration error", &summary)
        }
        end.started()
        for key in settings.unknown {
            logger.warning("not a setting herald reads, so it changes nothing: a typo?", metadata: ["setting": .string(key)])
        }

        // 2. The database: reachable, its schema not behind this release, the shard it is asked for.
        let db: PGConnection
        do {
            db = try Runner.connect(config.databaseURL, applicationName: "herald \(summary.passId)")
        } catch {
            return end.fail(.database, "cannot reach the database: \(error)", log: "cannot reach the database", &summary,
                            hint: ConnectionHint.for("\(error)", urlSet: !config.databaseURL.isEmpty))
        }
        defer { db.close() }
        end.db = db
        if let (code, error, message) = Preflight(db: db, logger: logger).check(shard: options.shard) {
            return end.fail(code, error, log: message, &summary)
        }

        // Providers' short-lived credentials are shared by every pass through the database.
        let credentials = options.dryRun ? nil : SharedCredentials(url: config.databaseURL, passId: summary.passId, logger: logger)
        if let credentials { config.routes.shareCredentials(through: credentials) }
        defer { credentials?.close() }

        // 3. Housekeeping, then the phases.
        let store = QueueStore(db: db, passId: summary.passId, shard: options.shard, clock: end.clock)
        // A dry run's writes live in one transaction that a new connection would not have: it gives up.
        let reconnector = Reconnector(seconds: options.dryRun ? 0 : config.options.reconnectSeconds, logger: logger)
        let pass = PassContext(db: db, store: store, config: config, settings: settings, clock: end.clock,
                               logger: logger, transport: end.transport!, outbox: outbox, reconnector: reconnector)
        var code = ExitCode.ok
        do {
            if !options.dryRun {
                try db.execute("""
                    insert into herald_passes (pass_id, started_at, host)
                    values (\(summary.passId), now(), \(ProcessInfo.processInfo.hostName))
                    """)
                end.recorded = true
                Housekeeping(pass: pass).run(&summary)
            } else {
                try db.execute("begin")  // generators write; a dry run lets them, then rolls everything back
            }
            try runPhases(pass, &summary)
            if summary.interrupted { code = .interrupted } else if !summary.phaseErrors.isEmpty { code = .degraded }
        } catch {
            summary.ok = false
            summary.error = "\(error)"
            logger.error("database error; rows this pass held return to the queue when their lease expires",
                         metadata: ["error": .string("\(error)")])
            code = .database
        }
        summary.reconnects = reconnector.reconnects
        return end.finish(code, &summary)
    }

    /// Runs the selected phases in order: each isolated phase in a savepoint of its own (its failure is
    /// reported and the pass goes on); delivery's failure ends the pass. A stop signal ends the
    /// generators; delivery and the phases after it see it themselves. With `--follow`, delivery then
    /// goes on until the deadline (`Follower`). A pass that a stop signal reached, whenever it came, is
    /// interrupted (exit 3): a follower stopped between its phases and its following is one too.
    func runPhases(_ pass: PassContext, _ summary: inout Summary) throws {
        try runEachStep(pass, &summary)
        if options.follow && !options.dryRun && options.phases.contains(.deliver) && !StopSignal.requested
            && pass.clock.elapsed < options.deadline {
            try Follower(pass: pass, summary: summary).run(&summary)
        }
        if StopSignal.requested { summary.interrupted = true }
    }

    private func runEachStep(_ pass: PassContext, _ summary: inout Summary) throws {
        for step in Self.steps where options.phases.contains(step.phase) {
            if step is any GeneratorStep && StopSignal.requested {
                summary.interrupted = true
                continue
            }
            guard step.runs(in: pass, summary: summary) else { continue }
            if !pass.db.isOpen {  // an earlier phase's connection ended under it
                try pass.reconnector.restore(pass.db, "pass", after: PGError(isConnectionFailure: true, message: "the connection ended"))
            }
            if step.isolated {
                Self.isolated(.phase(step.phase), db: pass.db, logger: pass.logger, summary: &summary) { summary in
                    try step.run(pass, summary: &summary)
                }
            } else {
                try step.run(pass, summary: &summary)
            }
        }
    }

    /// Runs one phase so that its failure stops only that phase: the error is logged, counted in
    /// `phase_errors` (summary and metrics file), and the pass goes on; the exit code becomes 4.
    /// Its open transaction (or, in a dry run, its savepoint) is rolled back.
    static func isolated(_ source: ErrorSource, db: PGConnection, logger: Logger, summary: inout Summary,
                         _ body: (inout Summary) throws -> Void) {
        let wasIdle = !db.inTransaction
        do {
            try db.savepointIfInTransaction { try body(&summary) }
        } catch {
            summary.phaseErrors[source] = "\(error)"
            logger.error("a phase failed; the pass goes on without it", metadata: [
                "phase": .string(source.name), "error": .string("\(error)")])
            // A transaction the phase left open is rolled back; an outer one (a dry run's) is kept.
            if wasIdle { db.rollbackIfInTransaction() }
        }
    }
}
