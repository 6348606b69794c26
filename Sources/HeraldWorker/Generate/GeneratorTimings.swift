import Foundation
import HeraldCore
import HeraldPostgres

/// What the time-driven generators are timed by, read for a follower's `GeneratorSchedule`: distinct
/// times only (a zone and a wall-clock time shared by a million people is one timing), and of the
/// one-off instants only the next one. A superset is harmless (the generator runs, finds nothing due
/// and says so); a timing left out would make the follower late, so each read keeps at least what
/// its generator would act on.
///
/// | generator | timings |
/// |---|---|
/// | reminders | each daily or weekly time (less a dose's advance) of an active reminder; the next one-off instant (`at` less a dose's advance, a washout's end) after the last run |
/// | prompts | the start of each local day, in each zone where someone has prompts on (a day is planned as it begins) |
/// | forecasts | each zone's forecast times, and the lead before them (the weather is fetched then), for everyone whose push is not off |
///
///     let timings = try GeneratorTimings(db: db, forecastLead: 3600).read(.reminders, after: lastRun)
struct GeneratorTimings {
    let db: PGConnection
    /// How long before a forecast's time it is made (`PassOptions.forecastLead`).
    let forecastLead: TimeInterval

    /// `reminders_active`'s predicate (sql/048), word for word, so its partial index serves the reads.
    private static let active: SQL = """
        r.enabled and r.cancelled_at is null
        and (r.schedule <> 'once' or r.enqueued_at is null or (r.ends_at is not null and r.end_enqueued_at is null))
        """

    func read(_ generator: TimedGenerator, after cursor: Date) throws -> [GeneratorTiming] {
        switch generator {
        case .reminders: try reminders(after: cursor)
        case .prompts: try prompts()
        case .forecasts: try forecasts()
        }
    }

    /// The active reminders' distinct times, and their next one-off instant after `cursor`; through
    /// the partial index of active reminders (its predicate word for word, as `dueRemindersQuery`'s).
    private func reminders(after cursor: Date) throws -> [GeneratorTiming] {
        let active = Self.active
        var timings: [GeneratorTiming] = []
        for row in try db.query("""
            select distinct p.timezone as zone, r.weekday,
                   coalesce(r.local_time, case when r.reminder_type = 'daily' then p.daily_reminder_time end)::text as t,
                   case when r.reminder_type = 'dose' then p.dose_reminder_advance_minutes else 0 end as advance
              from reminders r join user_profiles p on p.user_id = r.user_id
             where \(active) and r.schedule in ('daily', 'weekly') and p.timezone is not null
            """) {
            guard let zone = row["zone"].string, let time = row["t"].string.flatMap(LocalTime.init) else { continue }
            let weekday = row["weekday"].int.flatMap(Weekday.init(rawValue:))
            if row["weekday"].int != nil && weekday == nil { continue }
            timings.append(.daily(zone: zone, time: time, weekday: weekday, before: Double(row["advance"].int ?? 30) * 60))
        }
        if let next = try nextOneOff(after: cursor) { timings.append(.at(next)) }
        return timings
    }

    /// The next one-off reminder instant after `cursor`: a once reminder's time less a dose's advance,
    /// or a washout's end, not yet enqueued.
    func nextOneOff(after cursor: Date) throws -> Date? {
        let active = Self.active
        return try db.query("""
            select min(x.at) as at from (
              select r.at - case when r.reminder_type = 'dose' then make_interval(mins => p.dose_reminder_advance_minutes)
                                 else interval '0' end as at
                from reminders r join user_profiles p on p.user_id = r.user_id
               where \(active) and r.schedule = 'once' and r.enqueued_at is null
              union all
              select r.ends_at from reminders r
               where \(active) and r.reminder_type = 'washout' and r.end_enqueued_at is null
            ) x
             where x.at > \(cursor) and x.at < 'infinity'
            """).first?["at"].date
    }

    /// The start of each local day in the zones of people with prompts on.
    private func prompts() throws -> [GeneratorTiming] {
        try db.query("""
            select distinct p.timezone as zone
              from prompt_settings s join user_profiles p on p.user_id = s.user_id
             where s.enabled and p.timezone is not null
            """).compactMap { row in
            row["zone"].string.map { .daily(zone: $0, time: LocalTime(hour: 0, minute: 0), weekday: nil, before: 0) }
        }
    }

    /// Each distinct forecast time in each zone, at the lead before it and at it (a forecast whose
    /// weather failed at the lead is tried again as its time comes).
    private func forecasts() throws -> [GeneratorTiming] {
        var timings: [GeneratorTiming] = []
        for row in try db.query("""
            select distinct p.timezone as zone, p.forecast_notification_time::text as t
              from user_profiles p
             where p.notify_push is distinct from false and p.timezone is not null
               and p.forecast_notification_time is not null
            """) {
            guard let zone = row["zone"].string, let time = row["t"].string.flatMap(LocalTime.init) else { continue }
            timings.append(.daily(zone: zone, time: time, weekday: nil, before: forecastLead))
            timings.append(.daily(zone: zone, time: time, weekday: nil, before: 0))
        }
        return timings
    }
}

/// The changes apps made to what the generators read, as `herald_generator_changes` records them
/// (sql/052): what a polling follower looks at, since no notification reaches it. Each look asks for
/// the changes of the transactions that committed since the last look's snapshot, so one that
/// committed late is not missed and none is seen twice.
///
///     var changes = GeneratorChanges()
///     _ = try changes.look(db)        // the first look only takes the snapshot
///     try changes.look(db)            // [.prompts]: someone's prompt settings changed since
struct GeneratorChanges {
    /// The snapshot of the last look (`txid_current_snapshot()` as text).
    private(set) var snapshot: String?

    mutating func look(_ db: PGConnection) throws -> Set<TimedGenerator> {
        guard let previous = snapshot else {
            snapshot = try db.query("select txid_current_snapshot()::text as s").first?["s"].string
            return []
        }
        let row = try db.query("""
            select txid_current_snapshot()::text as s,
                   (select string_agg(distinct c.generator, ',') from herald_generator_changes c
                     where c.xid >= txid_snapshot_xmin(\(previous)::txid_snapshot)
                       and not txid_visible_in_snapshot(c.xid, \(previous)::txid_snapshot)) as changed
            """).first
        snapshot = row?["s"].string ?? previous
        let names = (row?["changed"].string ?? "").split(separator: ",").map(String.init)
        return Set(names.compactMap(TimedGenerator.init(rawValue:)))
    }

    /// How long before a pass's start an app's transaction may have begun and still committed after
    /// the pass's phases read (its `changed_at` is its start).
    static let commitAllowance = 10

    /// The generators apps changed since pass `passId` started (its `herald_passes` row), less
    /// `commitAllowance` seconds.
    static func sinceStart(of passId: String, _ db: PGConnection) throws -> Set<TimedGenerator> {
        Set(try db.query("""
            select distinct c.generator from herald_generator_changes c
              join herald_passes p on p.pass_id = \(passId)
             where c.changed_at >= p.started_at - make_interval(secs => \(commitAllowance))
            """).compactMap { $0["generator"].string.flatMap(TimedGenerator.init(rawValue:)) })
    }
}
