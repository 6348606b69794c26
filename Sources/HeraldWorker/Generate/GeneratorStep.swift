import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The step of a phase that fills the queue from the data the apps write: it sets up its generator
/// (`PatternGenerator`, `ForecastGenerator`, `PromptGenerator`, `ReminderGenerator`) from the pass's
/// options, runs it, and counts what it made. A stop signal ends the generators: the ones not yet run
/// are left for the next pass.
///
/// Adding one: a generator, a step conforming here, its `Phase` case, and its place in `Runner.steps`.
protocol GeneratorStep: PassStep, Sendable {
    /// Runs the phase for the pass as of `now` and counts what it did in `summary.generated`.
    /// `oneOffOnly`: the run is for instants alone (a follower's, at a one-off reminder's time): the
    /// reminders phase reads the one-off reminders only.
    func run(_ pass: PassContext, at now: Date, oneOffOnly: Bool, summary: inout Summary) throws
}

extension GeneratorStep {
    func runs(in pass: PassContext, summary: Summary) -> Bool { true }

    func run(_ pass: PassContext, summary: inout Summary) throws {
        try run(pass, at: pass.clock.now(), oneOffOnly: false, summary: &summary)
    }
}

/// Pattern evaluation: episodes opened and resolved, alerts enqueued (PatternGenerator).
struct PatternsStep: GeneratorStep {
    var phase: Phase { .patterns }

    func run(_ pass: PassContext, at now: Date, oneOffOnly: Bool, summary: inout Summary) throws {
        var p = PatternGenerator(db: pass.db, passId: pass.passId, now: now, logger: pass.logger)
        p.shadowMode = pass.options.shadowMode
        p.thresholdsVersion = pass.options.thresholdsVersion
        p.readerURL = try pass.settings.databaseURL()
        p.batchSize = max(1, pass.options.patternChunk)
        p.readers = max(1, pass.options.patternReaders)
        let r = try p.run()
        summary.generated[.patterns] = r.enqueued
        summary.generated[.patternsUsers] = r.users
        summary.generated[.episodesOpened] = r.episodesOpened
        summary.generated[.episodesResolved] = r.episodesResolved
        if r.failedUsers > 0 { summary.generated[.patternsFailedUsers] = r.failedUsers }
    }
}

/// Daily forecasts, made within the lead before each notification time; the weather and the insight
/// service are asked unless the pass is a dry run (ForecastGenerator).
struct ForecastsStep: GeneratorStep {
    var phase: Phase { .forecasts }

    func run(_ pass: PassContext, at now: Date, oneOffOnly: Bool, summary: inout Summary) throws {
        var f = ForecastGenerator(db: pass.db, passId: pass.passId, now: now, logger: pass.logger, transport: pass.transport)
        f.weatherURL = pass.options.dryRun ? nil : pass.options.weatherURL
        f.insight = pass.options.dryRun ? nil : pass.options.forecastInsight
        f.notesMisses = !pass.options.dryRun
        f.fetchBudget = pass.options.weatherBudget
        f.clock = PassClock(now: now, shift: pass.options.clockShift)
        f.lead = pass.options.forecastLead
        f.cellSize = pass.options.weatherCellSize
        f.reuseFor = pass.options.weatherReuse
        f.chunkSize = pass.options.forecastChunk
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

/// Scheduled prompts, and days planned again after a change of settings (PromptGenerator).
struct PromptsStep: GeneratorStep {
    var phase: Phase { .prompts }

    func run(_ pass: PassContext, at now: Date, oneOffOnly: Bool, summary: inout Summary) throws {
        let r = try PromptGenerator(db: pass.db, passId: pass.passId, now: now, logger: pass.logger).run()
        summary.generated[.prompts] = r.enqueued
        if r.replanned > 0 {
            summary.generated[.promptsReplanned] = r.replanned
            summary.generated[.promptsWithdrawn] = r.withdrawn
        }
        r.unknownZones.count(in: &summary, as: .promptsUnknownZoneUsers)
    }
}

/// Reminders (ReminderGenerator).
struct RemindersStep: GeneratorStep {
    var phase: Phase { .reminders }

    func run(_ pass: PassContext, at now: Date, oneOffOnly: Bool, summary: inout Summary) throws {
        var p = ReminderGenerator(db: pass.db, passId: pass.passId, now: now, logger: pass.logger)
        p.oneOffOnly = oneOffOnly
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
