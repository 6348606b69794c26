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
    /// The run is for instants alone (a follower's, at a one-off reminder's time): the reminders phase
    /// reads the one-off reminders only.
    var oneOffOnly = false
}

/// A phase that fills the queue from the data the apps write. A stop signal ends the generators: the
/// ones not yet run are left for the next pass.
///
/// Adding one: a type conforming here, its `Phase` case, and its place in `Runner.phases`.
protocol GeneratorPhase: PassPhase, Sendable {
    /// Runs the phase and counts what it did in `summary.generated`.
    func run(_ context: GeneratorContext, summary: inout Summary) throws
}

extension GeneratorPhase {
    func runs(in pass: PassContext, summary: Summary) -> Bool { true }

    func run(_ pass: PassContext, summary: inout Summary) throws {
        let context = GeneratorContext(db: pass.db, passId: pass.passId, now: pass.clock.now(), logger: pass.logger,
                                       transport: pass.transport, options: pass.options, settings: pass.settings)
        try run(context, summary: &summary)
    }
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

/// Daily forecasts, made within the lead before each notification time; the weather and the insight
/// service are asked unless the pass is a dry run (ForecastPhase).
struct ForecastsGenerator: GeneratorPhase {
    var phase: Phase { .forecasts }

    func run(_ c: GeneratorContext, summary: inout Summary) throws {
        var f = ForecastPhase(db: c.db, passId: c.passId, now: c.now, logger: c.logger, transport: c.transport)
        f.weatherURL = c.options.dryRun ? nil : c.options.weatherURL
        f.insight = c.options.dryRun ? nil : c.options.forecastInsight
        f.notesMisses = !c.options.dryRun
        f.fetchBudget = c.options.weatherBudget
        f.clock = PassClock(now: c.now, shift: c.options.clockShift)
        f.lead = c.options.forecastLead
        f.cellSize = c.options.weatherCellSize
        f.reuseFor = c.options.weatherReuse
        f.chunkSize = c.options.forecastChunk
        let r = try f.run()
        summary.generated[.forecasts] = r.enqueued
        if r.missed > 0 { summary.generated[.forecastsMissed] = r.missed }
        if r.insights + r.insightFailures + r.templatedWords > 0 {
            summary.generated[.forecastInsights] = r.insights
            summary.generated[.forecastInsightFailed] = r.insightFailures
            summary.generated[.forecastTemplatedWords] = r.templatedWords
        }
        if r.fetched + r.fetchFailures + r.notFetched + r.reused > 0 {
            summary.generated[.weatherFetched] = r.fetched
            summary.generated[.weatherFailed] = r.fetchFailures
            if r.notFetched > 0 { summary.generated[.weatherNotFetched] = r.notFetched }
            if r.reused > 0 { summary.generated[.weatherReused] = r.reused }
        }
        if r.unplaced > 0 { summary.generated[.forecastsUnplacedUsers] = r.unplaced }
        r.unknownZones.count(in: &summary, as: .forecastsUnknownZoneUsers)
    }
}

/// Scheduled prompts, and days planned again after a change of settings (PromptPhase).
struct PromptsGenerator: GeneratorPhase {
    var phase: Phase { .prompts }

    func run(_ c: GeneratorContext, summary: inout Summary) throws {
        let r = try PromptPhase(db: c.db, passId: c.passId, now: c.now, logger: c.logger).run()
        summary.generated[.prompts] = r.enqueued
        if r.replanned > 0 {
            summary.generated[.promptsReplanned] = r.replanned
            summary.generated[.promptsWithdrawn] = r.withdrawn
        }
        r.unknownZones.count(in: &summary, as: .promptsUnknownZoneUsers)
    }
}

/// Reminders (ReminderPhase).
struct RemindersGenerator: GeneratorPhase {
    var phase: Phase { .reminders }

    func run(_ c: GeneratorContext, summary: inout Summary) throws {
        var p = ReminderPhase(db: c.db, passId: c.passId, now: c.now, logger: c.logger)
        p.oneOffOnly = c.oneOffOnly
        let r = try p.run()
        summary.generated[.reminders] = r.enqueued
        r.unknownZones.count(in: &summary, as: .remindersUnknownZoneUsers)
    }
}

/// The people a generator phase passed over because herald cannot read their time zone
/// (`user_profiles.timezone` missing, or no IANA zone, such as PostgreSQL's POSIX-style `UTC+3`): with
/// no local clock, nothing of theirs can come due. The phase warns once with their count (their user
/// ids at debug level, never the zone text above it) and the summary counts them
/// (`generated.<phase>_unknown_zone_users`); their rows made by others fail at delivery with a readable
/// error.
struct UnknownZones {
    private(set) var users: Set<UUID> = []

    mutating func note(_ user: UUID) { users.insert(user) }

    /// One warning for the phase, and each user id at debug level.
    func report(_ phase: Phase, logger: Logger) {
        guard !users.isEmpty else { return }
        logger.warning("people whose time zone herald cannot read were passed over", metadata: [
            "phase": .string(phase.rawValue), "users": .stringConvertible(users.count)])
        for user in users.sorted(by: { $0.lowercased < $1.lowercased }) {
            logger.debug("time zone unreadable; passed over", metadata: [
                "phase": .string(phase.rawValue), "user_id": .string(user.lowercased)])
        }
    }

    func count(in summary: inout Summary, as key: GeneratedCount) {
        if !users.isEmpty { summary.generated[key] = users.count }
    }
}
