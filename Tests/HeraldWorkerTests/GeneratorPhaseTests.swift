import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Logging
import Testing

/// The patterns phase, which fills the queue from wearable metrics, end to end on a real PostgreSQL
/// (the scheduling phases are SchedulePhaseTests').
@Suite struct GeneratorPhaseTests {
    /// A family: one member with wearable data, two admins (push + in-app, and email only).
    struct Family {
        let member = UUID(), admin = UUID(), emailAdmin = UUID(), family = UUID()
        func create(_ f: Fixtures) throws {
            try f.profile(member, timezone: "America/New_York", push: false, inApp: false)
            try f.profile(admin, timezone: "Europe/London", push: true, inApp: true, championEmail: false)
            try f.profile(emailAdmin, email: "e@example.com", push: false, inApp: false, championEmail: true)
            try f.db.execute("""
                insert into family_members (family_id, user_id, role) values
                  (\(family), \(member), 'member'), (\(family), \(admin), 'admin'), (\(family), \(emailAdmin), 'admin')
                """)
        }
    }

    /// `baselineDays` of steady sleep (about 450 minutes) then `dropDays` at 150 minutes, ending at `last`.
    /// A drop this deep moves even the first day's 3-day mean past −20 %, so the run is `dropDays` long.
    func sleepSeries(_ db: PGConnection, user: UUID, last: String, baselineDays: Int, dropDays: Int) throws {
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps)
            select \(user), \(last)::date - g, case when g < \(dropDays) then 150 else 440 + (g % 5) * 5 end, 8000 + (g % 3) * 100
              from generate_series(0, \(baselineDays + dropDays - 1)) g
            on conflict (user_id, metric_date) do update set sleep_minutes = excluded.sleep_minutes, steps = excluded.steps
            """)
    }

    @Test func patternLevelsNotifyAdminsOncePerLevel() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let fam = Family()
        try fam.create(f)
        try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 7)
        let worker = Worker(url: tdb.url)
        let (s1, code) = worker.run(now: instant("2026-01-21T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(code == .ok)
        let episode = try #require(try db.query("""
            select id, current_level, severity, active_since::text as since, last_notified_level, episode_status
              from pattern_alert_state where user_id = \(fam.member) and metric_type = 'sleep_minutes'
            """).first)
        #expect(episode["current_level"].int == 7)
        #expect(episode["severity"].string == "attention")
        #expect(episode["since"].string == "2026-01-14")
        #expect(episode["last_notified_level"].int == 7)
        // The admin gets push and in-app; the other admin email (champion_notify_email); the member nothing.
        let rows = try db.query("""
            select recipient_user_id, channel, severity, payload::text as payload from notification_queue
             where kind = 'pattern_alert' order by channel
            """)
        #expect(Set(rows.map { "\($0["recipient_user_id"].uuid!)/\($0["channel"].string!)" }) ==
                ["\(fam.admin)/in_app", "\(fam.admin)/push", "\(fam.emailAdmin)/email"])
        #expect(s1.generated[.patterns] == 3)
        let payload = try JSONValue.parse(rows.first?["payload"].string ?? "")
        #expect(payload["level"]?.intValue == 7)
        #expect(payload["metric_type"]?.stringValue == "sleep_minutes")
        #expect(payload["baseline_value"] != nil && payload["deviation_percent"] != nil)

        // Nothing new: a second pass adds nothing; new data at the same level adds nothing either.
        let (s2, _) = worker.run(now: instant("2026-01-21T12:05:00Z")) { $0.phases = [.patterns] }
        #expect(s2.generated[.patterns] ?? 0 == 0)
        #expect(try f.count("select count(*)::int from notification_queue") == 3)

        // Seven more days of the drop: level 14, critical, notified again.
        try sleepSeries(db, user: fam.member, last: "2026-01-27", baselineDays: 40, dropDays: 14)
        let (s3, _) = worker.run(now: instant("2026-01-28T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(s3.generated[.patterns] == 3)
        #expect(try f.count("select count(*)::int from notification_queue where payload->>'level' = '14' and severity = 'critical'") == 3)

        // Recovery: the run no longer reaches the latest day → resolved.
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes)
            select \(fam.member), '2026-01-27'::date + g, 450 from generate_series(1, 3) g
            """)
        let (s4, _) = worker.run(now: instant("2026-01-31T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(s4.generated[.episodesResolved] == 1)
        #expect(try db.query("select episode_status from pattern_alert_state where id = \(episode["id"].uuid!)").first?["episode_status"].string == "resolved")
    }
    }

    @Test func concurrentPassesNotifyOnce() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        var families: [Family] = []
        for _ in 0..<30 {
            let fam = Family()
            try fam.create(f)
            try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 30, dropDays: 3)
            families.append(fam)
        }
        let worker = Worker(url: tdb.url)
        inParallel(3) { _ in
            // Chunks of 7 users: each pass reads the next chunk's metrics on a second connection.
            _ = worker.run(now: instant("2026-01-21T12:00:00Z")) { $0.phases = [.patterns]; $0.patternChunk = 7 }
        }
        #expect(try f.count("select count(*)::int from pattern_alert_state") == 30)
        #expect(try f.count("select count(*)::int from notification_queue") == 90)
        #expect(try f.count("select count(distinct dedupe_key)::int from notification_queue") == 90)
    }
    }

    /// Episodes bound as typed arrays store what the jsonb document stored before, value for value:
    /// a number keeps the text (and so the `numeric` scale) jsonb read, one that is not finite is null.
    @Test func episodeColumnsStoreWhatJSONStored() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let values: [Double] = [450, 292.5, 0.1, -0.0, 1e20, 1e-7, 1e15 + 0.5, .pi, .nan, .infinity, -.infinity,
                                .greatestFiniteMagnitude, .leastNonzeroMagnitude]
        let store = EpisodeStore(db: db, now: instant("2026-01-21T12:00:00Z"), thresholdsVersion: "v1")
        let threshold = PatternThreshold(metric: "sleep_minutes", pattern: .dropVsBaseline, deviationPercent: 20, minAbsChange: 30)
        let writes = values.enumerated().map { i, v in
            EpisodeStore.Write(user: UUID(), threshold: threshold,
                               evaluation: EpisodeEvaluation(activeSince: LocalDate("2026-01-10")!, duration: 7 + i, level: 7,
                                                             severity: .attention, baseline: v, recent: -v, deviationPercent: v / 3,
                                                             latest: LocalDate("2026-01-20")!),
                               latest: LocalDate("2026-01-20")!, notifiedLevel: i % 2 == 0 ? 7 : nil)
        }
        let ids = try store.upsert(writes)
        #expect(ids.count == (values.count + 1) / 2)
        for w in writes {
            let e = w.evaluation
            let json: JSONValue = ["b": .number(e.baseline), "r": .number(e.recent), "d": .number(e.deviationPercent)]
            let expected = try db.query("""
                select x.b::text as b, x.r::text as r, x.d::text as d
                  from jsonb_to_record(\(json.pgJSONText)::jsonb) as x(b numeric, r numeric, d numeric)
                """).first
            let stored = try db.query("""
                select baseline_value::text as b, recent_value::text as r, deviation_percent::text as d, current_level,
                       last_notified_level, active_since::text as since, last_evaluated_date::text as latest, severity
                  from pattern_alert_state where user_id = \(w.user)
                """).first
            for k in ["b", "r", "d"] { #expect(stored?[k].string == expected?[k].string, "\(k) of \(e.baseline)") }
            #expect(stored?["current_level"].int == 7)
            #expect(stored?["last_notified_level"].int == (w.notifiedLevel ?? 0))
            #expect(stored?["since"].string == "2026-01-10" && stored?["latest"].string == "2026-01-20")
            #expect(stored?["severity"].string == "attention")
        }
    }
    }

    /// Rows that name their user by the server's `uuid_hash` fill the same windows, value for value,
    /// as rows that carry the uuid, hostile values included (NaN, ±Infinity, beyond a Double, missing
    /// days, days outside the window); two users of a chunk that share a hash fall back to the uuid.
    @Test func metricRowsKeyedByHashFillTheSameWindows() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        // Two ids with the same uuid_hash, found among 300,000 (a 32-bit hash: a pair is all but certain).
        let pair = try db.query("""
            select array_agg(u::text) as us from (
              select u, uuid_hash(u) as h from (select md5(g::text)::uuid as u from generate_series(1, 300000) g) x) y
             group by h having count(*) > 1 limit 1
            """).first?["us"].string ?? ""
        let colliding = pair.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",")
            .compactMap { UUID(uuidString: String($0)) }
        #expect(colliding.count == 2)
        var rng = SplitMix64(seed: 11)
        let users = (0..<40).map { _ in UUID() } + colliding
        var latest: [UUID: LocalDate] = [:]
        for (i, user) in users.enumerated() {
            let last = LocalDate("2026-01-20")!.adding(days: -Int(rng.next() % 30))
            latest[user] = last
            let hostile = ["'NaN'", "'Infinity'", "'-Infinity'", "1e400", "-1e400", "1e308", "0.1", "null"]
            try db.execute("""
                insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps, hrv_ms)
                select \(user), \(last.description)::date - g,
                       case when g % 17 = \(i % 17) then \(unescaped: hostile[i % hostile.count])::numeric
                            else round((400 + random() * 80)::numeric, (g % 4)) end,
                       case when g % 5 = 0 then null else 9000 + g * 13 end,
                       (60 + g % 7)::numeric / 3
                  from generate_series(0, 150) g where g % 9 <> \(i % 9)
                """)
        }
        let metrics = ["hrv_ms", "sleep_minutes", "steps"]
        for chunk in [users, Array(users.prefix(40)), Array(users.suffix(3))] {
            let byHash = try MetricWindows.read(users: chunk, latest: latest, metrics: metrics, db: db)
            let byUUID = try MetricWindows.read(users: chunk, latest: latest, metrics: metrics, db: db, keyByHash: false)
            #expect(byHash.values.map(\.bitPattern) == byUUID.values.map(\.bitPattern))
            #expect(byHash.poisoned == byUUID.poisoned)
            #expect(!byHash.poisoned.isEmpty)
        }
        // The streamed windows, evaluated where they are read, agree with the rules applied to the
        // same rows read as one plain result, for every user without an unusable value.
        let thresholds = [PatternThreshold(metric: "sleep_minutes", pattern: .dropVsBaseline, deviationPercent: 3, minAbsChange: 0),
                          PatternThreshold(metric: "steps", pattern: .riseVsBaseline, deviationPercent: 2, minAbsChange: 0),
                          PatternThreshold(metric: "hrv_ms", pattern: .dropVsBaseline, deviationPercent: 1, minAbsChange: 0)]
        let evaluations = PatternEvaluations(try MetricWindows.read(users: users, latest: latest, metrics: metrics, db: db),
                                             latest: latest, thresholds: thresholds)
        var compared = 0
        for user in users where !evaluations.poisoned.contains(user) {
            let rows = try db.query("""
                select metric_date::text as d, sleep_minutes::float8 as s, steps::float8 as st, hrv_ms::float8 as h
                  from wearable_daily_metrics where user_id = \(user)
                """)
            let l = try #require(latest[user])
            let expected = thresholds.map { t -> EpisodeEvaluation? in
                let column = ["sleep_minutes": "s", "steps": "st", "hrv_ms": "h"][t.metric] ?? ""
                let pairs = rows.compactMap { r -> (LocalDate, Double)? in
                    guard let d = r["d"].string.flatMap(LocalDate.init), let v = r[column].double else { return nil }
                    return (d, v)
                }
                return PatternEvaluator.evaluate(pairs, latest: l, threshold: t)
            }
            #expect(evaluations[user] == expected)
            compared += 1
        }
        #expect(compared > 10)
        #expect(try MetricWindows.hashSlots(colliding, db: db) == nil)
        #expect(try MetricWindows.hashSlots(Array(users.prefix(40)), db: db)?.count == 40)
    }
    }

    /// A threshold is used only when its metric is a numeric column of wearable_daily_metrics: one naming
    /// a text column, an absent column or a dropped one is skipped (with a warning), never read.
    @Test func thresholdsNeedANumericMetricColumn() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        try db.execute("alter table wearable_daily_metrics add column mood_note text, add column gone numeric")
        try db.execute("alter table wearable_daily_metrics drop column gone")
        try db.execute("""
            insert into pattern_thresholds (version, metric_type, pattern_type, deviation_percent) values
              ('v1', 'mood_note', 'drop_vs_baseline', 20), ('v1', 'gone', 'drop_vs_baseline', 20),
              ('v1', 'no_such_column', 'rise_vs_baseline', 20), ('v1', 'user_id', 'rise_vs_baseline', 20)
            """)
        let configured = try db.query("select distinct metric_type from pattern_thresholds where version = 'v1' and enabled")
            .compactMap { $0["metric_type"].string }
        let phase = PatternGenerator(db: db, passId: "p", now: instant("2026-01-21T12:00:00Z"), logger: Logger(label: "test"))
        let used = Set(try phase.thresholds().map(\.metric))
        #expect(used == Set(configured).subtracting(["mood_note", "gone", "no_such_column", "user_id"]))
        #expect(used.contains("sleep_minutes"))
    }
    }

    @Test func aDryRunEvaluatesButStoresNothing() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        for _ in 0..<3 {
            let fam = Family()
            try fam.create(f)
            try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 7)
        }
        // Chunks of 2: the read-ahead connection is used too.
        let (summary, code) = Worker(url: tdb.url).run(now: instant("2026-01-21T12:00:00Z"), dryRun: true) {
            $0.phases = [.patterns]
            $0.patternChunk = 2
        }
        #expect(code == .ok)
        #expect(summary.generated[.patternsUsers] == 3)
        #expect(summary.generated[.episodesOpened] == 3)
        for table in ["pattern_alert_state", "pattern_evaluations", "notification_queue"] {
            #expect(try f.count("select count(*)::int from \(unescaped: table)") == 0, "\(table)")
        }
        #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through = '-infinity'") == 1)
    }
    }

    @Test func shadowModeStoresButEnqueuesNothing() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let fam = Family()
        try fam.create(f)
        try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 3)
        let worker = Worker(url: tdb.url, settings: ["HERALD_SHADOW_MODE": "true"])
        _ = worker.run(now: instant("2026-01-21T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(try f.count("select count(*)::int from pattern_alert_state where current_level = 3") == 1)
        #expect(try f.count("select count(*)::int from notification_queue") == 0)
        #expect(try f.count("select last_notified_level from pattern_alert_state") == 0)
    }
    }
}
