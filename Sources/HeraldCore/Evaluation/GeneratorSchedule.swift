import Foundation

/// The generators that come due at instants of their own, which a follower runs at those instants.
public enum TimedGenerator: String, CaseIterable, Sendable {
    case forecasts, prompts, reminders
}

/// One time a generator's work comes due at, as the database holds it: an instant, or a wall-clock
/// time in a zone (each local day, or on one weekday), some seconds ahead of which the work is due.
///
///     GeneratorTiming.daily(zone: "Europe/London", time: t("09:00"), weekday: nil, before: 1800)
///         .next(after: utc(2026, 1, 25, 8))   // 2026-01-25T08:30Z: a dose at 09:00, reminded 30 min before
///     GeneratorTiming.daily(zone: "Europe/London", time: t("09:00"), weekday: .monday, before: 0)
///         .next(after: utc(2026, 3, 27))      // 2026-03-30T08:00Z: the Monday, 09:00 BST
///
/// The wall clock is read as `ReminderSchedule` and `FlareForecast` read it (`DailyTime`, `Zone`): 24:00
/// is midnight, a time in a spring-forward gap is the moment clocks jump, a time that occurs twice is
/// its first occurrence. A zone herald cannot read has no next instant.
public enum GeneratorTiming: Hashable, Sendable {
    /// Once: a one-off reminder less its advance, a washout's end.
    case at(Date)
    /// Each local day (`weekday` nil) or each `weekday`, at `time` in `zone`, `before` seconds ahead.
    case daily(zone: String, time: LocalTime, weekday: Weekday?, before: TimeInterval)

    /// The first instant after `cursor`, or nil.
    public func next(after cursor: Date) -> Date? {
        switch self {
        case .at(let instant):
            return instant > cursor ? instant : nil
        case .daily(let id, let time, let weekday, let before):
            guard let zone = Zone.named(id) else { return nil }
            let time = DailyTime.timeOfDay(time)
            let first = Zone.localDate(cursor.addingTimeInterval(before), in: zone)
            for offset in 0...8 {
                let date = first.adding(days: offset)
                if let weekday, date.weekday != weekday { continue }
                let at = Zone.instant(of: date, time, in: zone).addingTimeInterval(-before)
                if at > cursor { return at }
            }
            return nil
        }
    }
}

/// When a follower runs each time-driven generator: at the next instant of its timings after its last
/// run, and, after a change an app made to what it reads, at once, but not within `settle` seconds of
/// the last run that took the changes. A run at one-off instants alone (`dueForInstantsOnly`) may read
/// only what they time and leave a change not yet settled for later. Pure: the follower reads the
/// timings and the changes, and passes `now`.
///
///     var schedule = GeneratorSchedule(generators: [.reminders], since: start)
///     schedule.read(.reminders, timings: [.at(start + 3)])
///     schedule.nextWake()                 // start + 3
///     schedule.due(at: start + 3)         // [.reminders]
///     schedule.ran(.reminders, at: start + 3)
///     schedule.due(at: start + 3)         // []
public struct GeneratorSchedule: Sendable {
    /// The least time between two runs of one generator for changes: a burst of an app's writes makes
    /// one run a second, not one per write.
    public static let settle: TimeInterval = 1

    public let generators: [TimedGenerator]
    /// When each generator last ran (its cursor: the timings' instants up to it are done).
    public private(set) var ranAt: [TimedGenerator: Date] = [:]
    /// When each generator last ran for everything, changes included (the settle counts from it).
    public private(set) var tookChangesAt: [TimedGenerator: Date] = [:]
    /// Changes noticed and not yet taken by a run, by when they were first noticed.
    public private(set) var changedAt: [TimedGenerator: Date] = [:]
    private var timings: [TimedGenerator: [GeneratorTiming]] = [:]
    private var upcoming: [TimedGenerator: Date] = [:]

    /// A schedule for `generators` whose work up to `start` is done (the pass's phases ran them).
    public init(generators: [TimedGenerator], since start: Date) {
        self.generators = generators
        for g in generators { (ranAt[g], tookChangesAt[g]) = (start, start) }
    }

    /// The generator's timings as read now.
    public mutating func read(_ generator: TimedGenerator, timings list: [GeneratorTiming]) {
        timings[generator] = list
        recompute(generator)
    }

    /// The generator's one-off instants as read now; its wall-clock timings stay as they were read
    /// (a run for one-off instants alone changes none of them).
    public mutating func read(_ generator: TimedGenerator, instants: [Date]) {
        timings[generator] = (timings[generator] ?? []).filter { if case .at = $0 { false } else { true } }
            + instants.map(GeneratorTiming.at)
        recompute(generator)
    }

    /// An app changed what the generator reads, noticed at `now`.
    public mutating func changed(_ generator: TimedGenerator, at now: Date) {
        guard generators.contains(generator) else { return }
        changedAt[generator] = min(changedAt[generator] ?? now, now)
    }

    /// The generator ran with `now`: every instant up to it is done, and, unless it ran for one-off
    /// instants alone, every change noticed by then.
    public mutating func ran(_ generator: TimedGenerator, at now: Date, instantsOnly: Bool = false) {
        ranAt[generator] = now
        if !instantsOnly {
            tookChangesAt[generator] = now
            if let c = changedAt[generator], c <= now { changedAt[generator] = nil }
        }
        recompute(generator)
    }

    /// The generator's next instant after its last run.
    public func next(_ generator: TimedGenerator) -> Date? { upcoming[generator] }

    /// When the generator is due: its next instant, or its change once settled; nil: nothing to wait for.
    public func dueAt(_ generator: TimedGenerator) -> Date? {
        var at = upcoming[generator]
        if let settled = settled(generator) { at = min(at ?? settled, settled) }
        return at
    }

    /// When the generator's pending change is due, if one is.
    private func settled(_ generator: TimedGenerator) -> Date? {
        changedAt[generator].map { max($0, (tookChangesAt[generator] ?? .distantPast).addingTimeInterval(Self.settle)) }
    }

    /// Whether the generator is due at `now` for its one-off instants alone: no change is due yet and
    /// no wall-clock time has come, so a run may read only what is timed by an instant.
    public func dueForInstantsOnly(_ generator: TimedGenerator, at now: Date) -> Bool {
        if let settled = settled(generator), settled <= now { return false }
        guard let cursor = ranAt[generator] else { return false }
        let came = (timings[generator] ?? []).filter { $0.next(after: cursor).map { $0 <= now } ?? false }
        return !came.isEmpty && came.allSatisfy { if case .at = $0 { true } else { false } }
    }

    /// The generators due at `now`, in `TimedGenerator`'s order (forecasts, prompts, reminders: a pass's).
    public func due(at now: Date) -> [TimedGenerator] {
        TimedGenerator.allCases.filter { g in generators.contains(g) && (dueAt(g).map { $0 <= now } ?? false) }
    }

    /// The earliest instant a generator comes due; nil: none.
    public func nextWake() -> Date? {
        generators.compactMap(dueAt).min()
    }

    private mutating func recompute(_ generator: TimedGenerator) {
        let cursor = ranAt[generator] ?? .distantPast
        upcoming[generator] = (timings[generator] ?? []).compactMap { $0.next(after: cursor) }.min()
    }
}
