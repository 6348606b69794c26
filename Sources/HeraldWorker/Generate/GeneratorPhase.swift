import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// What every generator phase is given: the connection, the pass, its time and options.
struct GeneratorContext {
    var db: PGConnection
    var passId: String
    var now: Date
    var logger: Logger
    var transport: HTTPTransport
    var options: PassOptions
    var settings: Settings
}

/// A phase that fills the queue from the data the apps write. The runner runs each one selected, in
/// `Runner.generators`' order, in isolation (`Runner.isolated`): one that fails is reported in
/// `phase_errors` and the others, and delivery, still run.
///
/// Adding one: a type conforming here, its `Phase` case, and its place in `Runner.generators`.
protocol GeneratorPhase: Sendable {
    var phase: Phase { get }
    /// Runs the phase and counts what it did in `summary.generated`.
    func run(_ context: GeneratorContext, summary: inout Summary) throws
}

/// Pattern evaluation: episodes opened and resolved, alerts enqueued (PatternPhase).
struct PatternsGenerator: GeneratorPhase {
    var phase: Phase { .patterns }

    func run(_ c: GeneratorContext, summary: inout Summary) throws {
        var p = PatternPhase(db: c.db, passId: c.passId, now: c.now, logger: c.logger)
        p.shadowMode = c.options.shadowMode
        p.thresholdsVersion = c.options.thresholdsVersion
        p.readerURL = try c.settings.databaseURL()
        p.batchSize = max(1, c.options.patternChunk)
        p.readers = max(1, c.options.patternReaders)
        let r = try p.run()
        summary.generated[.patterns] = r.enqueued
        summary.generated[.patternsUsers] = r.users
        summary.generated[.episodesOpened] = r.episodesOpened
        summary.generated[.episodesResolved] = r.episodesResolved
        if r.failedUsers > 0 { summary.generated[.patternsFailedUsers] = r.failedUsers }
    }
}

/// Daily forecasts, fetching missing weather unless the pass is a dry run (ForecastPhase).
struct ForecastsGenerator: GeneratorPhase {
    var phase: Phase { .forecasts }

    func run(_ c: GeneratorContext, summary: inout Summary) throws {
        var f = ForecastPhase(db: c.db, passId: c.passId, now: c.now, logger: c.logger, transport: c.transport)
        f.weatherURL = c.options.dryRun ? nil : c.options.weatherURL
        f.fetchBudget = c.options.weatherBudget
        let r = try f.run()
        summary.generated[.forecasts] = r.enqueued
        if r.fetched + r.fetchFailures + r.notFetched > 0 {
            summary.generated[.weatherFetched] = r.fetched
            summary.generated[.weatherFailed] = r.fetchFailures
            if r.notFetched > 0 { summary.generated[.weatherNotFetched] = r.notFetched }
        }
    }
}

/// Scheduled prompts (PromptPhase).
struct PromptsGenerator: GeneratorPhase {
    var phase: Phase { .prompts }

    func run(_ c: GeneratorContext, summary: inout Summary) throws {
        summary.generated[.prompts] = try PromptPhase(db: c.db, passId: c.passId, now: c.now).run()
    }
}

/// Reminders (ReminderPhase).
struct RemindersGenerator: GeneratorPhase {
    var phase: Phase { .reminders }

    func run(_ c: GeneratorContext, summary: inout Summary) throws {
        summary.generated[.reminders] = try ReminderPhase(db: c.db, passId: c.passId, now: c.now, logger: c.logger).run()
    }
}
