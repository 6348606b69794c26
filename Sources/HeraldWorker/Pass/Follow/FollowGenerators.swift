import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// A follower's time-driven generators (reminders, prompts, forecasts: those its `--only` selects):
/// each runs again at the next instant it comes due, and soon after an app changes what it reads, so
/// what it enqueues goes out in the same round instead of at the next pass. When is the pure
/// `GeneratorSchedule`'s; this reads what it needs (`GeneratorTimings`, `GeneratorChanges`) and runs
/// the generators as a pass runs them, with the same claims and dedupe keys, so beside other
/// followers and passes each notification is still made once.
///
/// Changes reach it as `herald_generate` notifications on the follower's LISTEN connection
/// (`noted`), or, while it polls, by a look at `herald_generator_changes` each round (`look`).
final class FollowGenerators {
    let pass: PassContext
    private(set) var schedule: GeneratorSchedule
    private var changes = GeneratorChanges()
    /// Times a generator ran while following.
    private(set) var runs = 0
    /// The generators whose timings are to be read again (`refresh`), each with whether its one-off
    /// instants alone.
    private var stale: [TimedGenerator: Bool] = [:]

    /// Nil when the follower runs no time-driven generator (`--only deliver`).
    init?(pass: PassContext) {
        let generators = TimedGenerator.allCases.filter { g in pass.options.phases.contains(Self.step(g).phase) }
        guard !generators.isEmpty else { return nil }
        self.pass = pass
        schedule = GeneratorSchedule(generators: generators, since: pass.clock.start)  // the phases ran since
    }

    /// The step a generator runs as.
    static func step(_ generator: TimedGenerator) -> any GeneratorStep {
        switch generator {
        case .forecasts: ForecastsStep()
        case .prompts: PromptsStep()
        case .reminders: RemindersStep()
        }
    }

    /// Takes the first look's snapshot, notes the changes apps made since the pass started (while the
    /// phases ran, before anything listened), and reads every generator's timings.
    func start() throws {
        _ = try changes.look(pass.db)
        let now = pass.clock.now()
        for g in try GeneratorChanges.sinceStart(of: pass.passId, pass.db) { schedule.changed(g, at: now) }
        for g in schedule.generators { try read(g) }
    }

    /// Notes the generators named by `herald_generate` notifications (their payload).
    func noted(_ notifications: [PGNotification]) {
        let now = pass.clock.now()
        for n in notifications where n.channel == GeneratorNotification.channel {
            if let g = TimedGenerator(rawValue: n.payload) { schedule.changed(g, at: now) }
        }
    }

    /// Notes every generator as changed: notifications may have been lost (the LISTEN connection ended).
    func changedAll() {
        let now = pass.clock.now()
        for g in schedule.generators { schedule.changed(g, at: now) }
    }

    /// A polling follower's look at the changes committed since its last look.
    func look() throws {
        let found = try changes.look(pass.db)
        let now = pass.clock.now()
        for g in found { schedule.changed(g, at: now) }
    }

    /// Runs each generator due now, in a pass's order, each in isolation as a pass runs it (a failure
    /// is logged and counted in `phase_errors`; a lost connection is the follower's to restore); what
    /// they make is counted in `summary.generated`. Their timings are read again by `refresh`, once
    /// what they made has gone out.
    func runDue(_ summary: inout Summary) throws {
        for g in schedule.due(at: pass.clock.now()) where !StopSignal.requested {
            let now = pass.clock.now()
            let oneOffOnly = schedule.dueForInstantsOnly(g, at: now)
            do {
                var made = Summary(passId: summary.passId)
                try pass.db.savepointIfInTransaction { try run(g, now: now, oneOffOnly: oneOffOnly, into: &made) }
                Self.add(made.generated, to: &summary.generated)
            } catch let error as PGError where error.isConnectionFailure {
                throw error  // still due: it runs once the connection is back
            } catch {
                summary.phaseErrors[.phase(Self.phaseOf(g))] = "\(error)"
                pass.logger.error("a phase failed; the follower goes on without it", metadata: [
                    "phase": .string(g.rawValue), "error": .string("\(error)")])
                pass.db.rollbackIfInTransaction()
            }
            schedule.ran(g, at: now, instantsOnly: oneOffOnly)
            runs += 1
            stale[g] = (stale[g] ?? true) && oneOffOnly
        }
    }

    /// Reads again the timings of the generators that ran (after a run for one-off instants alone,
    /// only those): what the runs marked done, and what is to come after them.
    func refresh() throws {
        for (g, instantsOnly) in stale.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            if instantsOnly && g == .reminders {
                let timings = GeneratorTimings(db: pass.db, forecastLead: pass.options.forecastLead)
                let next = try timings.nextOneOff(after: schedule.ranAt[g] ?? pass.clock.start)
                schedule.read(g, instants: next.map { [$0] } ?? [])
            } else {
                try read(g)
            }
            stale[g] = nil
        }
    }

    /// When the next generator comes due; nil: none.
    var nextWake: Date? { schedule.nextWake() }

    /// Runs one generator as of `now`; `oneOffOnly`: for one-off instants alone (the reminders phase
    /// then reads the one-off reminders only, not every daily one).
    private func run(_ g: TimedGenerator, now: Date, oneOffOnly: Bool, into made: inout Summary) throws {
        try Self.step(g).run(pass, at: now, oneOffOnly: oneOffOnly, summary: &made)
        pass.logger.debug("ran a generator at its time", metadata: [
            "phase": .string(g.rawValue), "one_off_only": "\(oneOffOnly)", "generated": .string("\(made.generated)")])
    }

    private func read(_ g: TimedGenerator) throws {
        let timings = GeneratorTimings(db: pass.db, forecastLead: pass.options.forecastLead)
        schedule.read(g, timings: try timings.read(g, after: schedule.ranAt[g] ?? pass.clock.start))
    }

    /// Adds one run's counts to the follower's: what was made adds up; people passed over (`…_users`)
    /// are the same people each run, so the largest count stands.
    /// The pass phase that runs `g`.
    static func phaseOf(_ g: TimedGenerator) -> Phase {
        switch g {
        case .forecasts: .forecasts
        case .prompts: .prompts
        case .reminders: .reminders
        }
    }

    static func add(_ counts: [GeneratedCount: Int], to total: inout [GeneratedCount: Int]) {
        for (key, n) in counts {
            total[key] = key.rawValue.hasSuffix("_users") ? max(total[key] ?? 0, n) : (total[key] ?? 0) + n
        }
    }
}

/// The channel sql/052's triggers notify when an app changes what a time-driven generator reads; the
/// payload is the generator's name (`reminders`, `prompts`, `forecasts`), nothing else.
public enum GeneratorNotification {
    public static let channel = "herald_generate"
}
