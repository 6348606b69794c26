import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Logging
import Testing

/// The phases that fill the queue, end to end on a real PostgreSQL.
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
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
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
        #expect(s1.generated["patterns"] == 3)
        let payload = try JSONValue.parse(rows.first?["payload"].string ?? "")
        #expect(payload["level"]?.intValue == 7)
        #expect(payload["metric_type"]?.stringValue == "sleep_minutes")
        #expect(payload["baseline_value"] != nil && payload["deviation_percent"] != nil)

        // Nothing new: a second pass adds nothing; new data at the same level adds nothing either.
        let (s2, _) = worker.run(now: instant("2026-01-21T12:05:00Z")) { $0.phases = [.patterns] }
        #expect(s2.generated["patterns"] ?? 0 == 0)
        #expect(try f.count("select count(*)::int from notification_queue") == 3)

        // Seven more days of the drop: level 14, critical, notified again.
        try sleepSeries(db, user: fam.member, last: "2026-01-27", baselineDays: 40, dropDays: 14)
        let (s3, _) = worker.run(now: instant("2026-01-28T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(s3.generated["patterns"] == 3)
        #expect(try f.count("select count(*)::int from notification_queue where payload->>'level' = '14' and severity = 'critical'") == 3)

        // Recovery: the run no longer reaches the latest day → resolved.
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes)
            select \(fam.member), '2026-01-27'::date + g, 450 from generate_series(1, 3) g
            """)
        let (s4, _) = worker.run(now: instant("2026-01-31T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(s4.generated["episodes_resolved"] == 1)
        #expect(try db.query("select episode_status from pattern_alert_state where id = \(episode["id"].uuid!)").first?["episode_status"].string == "resolved")
    }

    @Test func concurrentPassesNotifyOnce() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
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

    /// The patterns phase looks only at metrics updated since the last complete scan (less an hour's
    /// margin), so a pass every five minutes does not group the whole metrics table.
    @Test func aPassLooksOnlyAtMetricsUpdatedSinceTheLastCompleteScan() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let fam = Family()
        try fam.create(f)
        try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 3)
        let worker = Worker(url: tdb.url)
        let now = instant("2026-01-21T12:00:00Z")
        let (first, _) = worker.run(now: now) { $0.phases = [.patterns] }
        #expect(first.generated["patterns_users"] == 1)
        #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through > now() - interval '1 minute'") == 1)

        // Rows written two hours before that scan, which no evaluation has seen (as if their user's
        // evaluation were lost): below the watermark and its margin, so no pass reads them.
        try db.execute("update pattern_evaluations set evaluated_through = '-infinity'")
        try db.execute("set session_replication_role = replica")  // no trigger touching updated_at
        try db.execute("update wearable_daily_metrics set updated_at = now() - interval '2 hours'")
        try db.execute("set session_replication_role = origin")
        let (second, _) = worker.run(now: now) { $0.phases = [.patterns] }
        #expect(second.generated["patterns_users"] == 0)

        // A new day's row is above it: the user is evaluated again, on all their days.
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps)
            values (\(fam.member), '2026-01-21', 150, 8000)
            """)
        let (third, _) = worker.run(now: instant("2026-01-22T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(third.generated["patterns_users"] == 1)
        #expect(try f.count("select current_level from pattern_alert_state where episode_status = 'active' and metric_type = 'sleep_minutes'") == 3)
    }

    /// A row whose writer's transaction began before a scan but committed after it carries an older
    /// updated_at than rows the scan saw. The user is evaluated once more after the scan, so it counts.
    @Test func aRowCommittedAfterTheScanIsStillEvaluated() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let fam = Family()
        try fam.create(f)
        try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 3)
        let worker = Worker(url: tdb.url)
        _ = worker.run(now: instant("2026-01-21T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(try f.count("select count(*)::int from pattern_evaluations where evaluated_through < now() - interval '100 seconds'") == 1)

        // Written by a transaction that began a minute ago, committed only now.
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps, updated_at)
            values (\(fam.member), '2026-01-21', 150, 8000, now() - interval '1 minute')
            """)
        let (next, _) = worker.run(now: instant("2026-01-22T12:00:00Z")) { $0.phases = [.patterns] }
        #expect(next.generated["patterns_users"] == 1)
        let dates = try db.query("""
            select last_evaluated_date::text as d from pattern_alert_state where metric_type = 'sleep_minutes'
            """).map { $0["d"].string }
        #expect(dates == ["2026-01-21"])
    }

    /// A candidate that another pass holds locked is skipped; the watermark then stays where it was,
    /// so the next pass still finds that user.
    @Test func aSkippedCandidateKeepsTheWatermark() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let held = Family(), free = Family()
        for fam in [held, free] {
            try fam.create(f)
            try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 3)
        }
        try db.execute("insert into pattern_evaluations (user_id, evaluated_through) values (\(held.member), '-infinity')")
        let other = try tdb.connect()
        try other.execute("begin")
        try other.execute("select 1 from pattern_evaluations where user_id = \(held.member) for update")

        let worker = Worker(url: tdb.url)
        let now = instant("2026-01-21T12:00:00Z")
        let (first, _) = worker.run(now: now) { $0.phases = [.patterns] }
        #expect(first.generated["patterns_users"] == 1)
        #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through = '-infinity'") == 1)

        try other.execute("rollback")
        // The held user now, and the free one once more: its rows are younger than the late-commit margin.
        let (second, _) = worker.run(now: now) { $0.phases = [.patterns] }
        #expect(second.generated["patterns_users"] == 2)
        #expect(try f.count("select count(distinct user_id)::int from pattern_alert_state") == 2)
        #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through > now() - interval '1 minute'") == 1)
    }

    /// Chunks read ahead on connections of their own, one to three of them taking turns, give what one
    /// connection reading each chunk in turn gives; when those connections cannot be had, the pass
    /// reads on its own.
    @Test func readingAheadChangesNothing() throws {
        func outcome(_ configure: (inout PatternPhase, _ url: String) -> Void) throws -> [String] {
            let tdb = try TestDatabase.create()
            defer { tdb.drop() }
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            for i in 0..<12 {
                let fam = Family()
                try fam.create(f)
                try sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 30 + i, dropDays: 3 + i)
            }
            var phase = PatternPhase(db: try tdb.connect(), passId: "p", now: instant("2026-01-21T12:00:00Z"),
                                     logger: Logger(label: "test"))
            configure(&phase, tdb.url)
            let r = try phase.run()
            #expect(r.users == 12)
            return try db.query("""
                select current_level || '/' || active_since || '/' || last_notified_level as e from pattern_alert_state
                 order by 1
                """).map { $0["e"].string ?? "" }
        }
        let inTurn = try outcome { phase, _ in phase.batchSize = 5 }
        #expect(inTurn.count == 12)
        #expect(try outcome { phase, url in phase.batchSize = 5; phase.readerURL = url } == inTurn)
        for readers in 1...3 {
            #expect(try outcome { phase, url in phase.batchSize = 2; phase.readers = readers; phase.readerURL = url } == inTurn)
            // Reads of several chunks each (1, then 2 and 1 chunks of 3 users), streamed ahead.
            #expect(try outcome { phase, url in
                phase.batchSize = 3; phase.readUsers = 7; phase.readers = readers; phase.readerURL = url
            } == inTurn)
        }
        #expect(try outcome { phase, _ in
            phase.batchSize = 5
            phase.readerURL = "postgresql://herald@127.0.0.1:1/none?connect_timeout=2"
        } == inTurn)
    }

    /// The chunks each metric read covers: the first chunk alone (evaluation starts soon), then as
    /// many as the read's user budget holds, never none.
    @Test func metricReadsCoverSeveralChunks() {
        #expect(PatternPhase.segments(0, chunkSize: 1000, readUsers: 3276) == [])
        #expect(PatternPhase.segments(1, chunkSize: 1000, readUsers: 3276) == [0..<1])
        #expect(PatternPhase.segments(10, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<4, 4..<7, 7..<10])
        #expect(PatternPhase.segments(3, chunkSize: 1000, readUsers: 10) == [0..<1, 1..<2, 2..<3])
        #expect(PatternPhase.segments(4, chunkSize: 3, readUsers: 7) == [0..<1, 1..<3, 3..<4])
        #expect(MetricWindows.maxUsers(metrics: 4) * 4 * PatternEvaluator.windowDays * 8 <= 12 * 1_048_576)
        #expect(MetricWindows.maxUsers(metrics: 0) > 0)
    }

    /// The reads as the phase makes them: one chunk first and one chunk last (the writes nothing
    /// overlaps), as many as the budget allows in between, every chunk once, in order.
    @Test func metricReadsStartAndEndWithOneChunk() {
        #expect(PatternPhase.readSegments(0, chunkSize: 1000, readUsers: 3276) == [])
        #expect(PatternPhase.readSegments(1, chunkSize: 1000, readUsers: 3276) == [0..<1])
        #expect(PatternPhase.readSegments(2, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<2])
        #expect(PatternPhase.readSegments(10, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<4, 4..<7, 7..<9, 9..<10])
        #expect(PatternPhase.readSegments(8, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<4, 4..<7, 7..<8])
        #expect(PatternPhase.readSegments(4, chunkSize: 3, readUsers: 7) == [0..<1, 1..<3, 3..<4])
        for n in 0..<40 {
            let reads = PatternPhase.readSegments(n, chunkSize: 1000, readUsers: 3276)
            #expect(reads.flatMap { Array($0) } == Array(0..<n))
            #expect(reads.allSatisfy { !$0.isEmpty && $0.count <= 3 })
            #expect(n < 2 || (reads.first?.count == 1 && reads.last?.count == 1))
        }
    }

    /// The whole-table aggregate that a first scan uses finds the same candidates, with the same
    /// latest day and newest update, as the updated_at index and one probe per user: users whose
    /// newest update is an old day's row, whose rows are all older than the watermark, whose
    /// updated_at an app set to ±infinity, and users already evaluated.
    @Test func theFirstScansAggregateFindsWhatTheIndexFinds() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let users = (0..<8).map { _ in UUID() }
        // Every user has 20 days; their rows were written on their day, the latest 2026-01-20.
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, updated_at, sleep_minutes)
            select u, '2026-01-20'::date - d, '2026-01-21T00:00:00Z'::timestamptz - make_interval(days => d), 400
              from unnest(\(users)::uuid[]) u, generate_series(0, 19) d
            """)
        // An old day edited last (its newest update is not its latest day), a user untouched since
        // long before the watermark, updated_at at ±infinity, a user evaluated since, one evaluated before.
        try db.execute("alter table wearable_daily_metrics disable trigger wearable_daily_metrics_touch")
        try db.execute("""
            update wearable_daily_metrics set updated_at = '2026-01-25T00:00:00Z' where user_id = \(users[0]) and metric_date = '2026-01-05'
            """)
        try db.execute("update wearable_daily_metrics set updated_at = updated_at - interval '300 days' where user_id = \(users[1])")
        try db.execute("""
            update wearable_daily_metrics set updated_at = 'infinity' where user_id = \(users[2]) and metric_date = '2026-01-03'
            """)
        try db.execute("""
            update wearable_daily_metrics set updated_at = '-infinity' where user_id = \(users[3]) and metric_date = '2026-01-20'
            """)
        try db.execute("update wearable_daily_metrics set updated_at = '-infinity' where user_id = \(users[4])")
        try db.execute("""
            insert into pattern_evaluations (user_id, evaluated_through) values
              (\(users[5]), '2026-02-01T00:00:00Z'), (\(users[6]), '2026-01-10T00:00:00Z')
            """)
        func candidates(since: Date, wholeTable: Bool) throws -> [String] {
            try db.query(PatternPhase.candidatesQuery(since: since, wholeTable: wholeTable)).map {
                [$0[0].uuid?.lowercased ?? "", $0[1].string ?? "", $0[2].string ?? "", $0[3].string ?? ""].joined(separator: " ")
            }.sorted()
        }
        for since in [Date.distantPast.addingTimeInterval(-PatternPhase.rescanMargin), instant("2026-01-15T00:00:00Z"),
                      instant("2026-01-24T00:00:00Z"), instant("2026-03-01T00:00:00Z")] {
            let byIndex = try candidates(since: since, wholeTable: false)
            #expect(try candidates(since: since, wholeTable: true) == byIndex, "since \(since)")
        }
        let all = try candidates(since: Date.distantPast.addingTimeInterval(-PatternPhase.rescanMargin), wholeTable: true)
        #expect(all.count == 6)  // not user 4 (every row at -infinity) nor user 5 (evaluated since)
        #expect(all.contains { $0.hasPrefix(users[0].lowercased + " 2026-01-20 2026-01-25") })
    }

    /// Episodes bound as typed arrays store what the jsonb document stored before, value for value:
    /// a number keeps the text (and so the `numeric` scale) jsonb read, one that is not finite is null.
    @Test func episodeColumnsStoreWhatJSONStored() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
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

    /// Rows that name their user by the server's `uuid_hash` fill the same windows, value for value,
    /// as rows that carry the uuid, hostile values included (NaN, ±Infinity, beyond a Double, missing
    /// days, days outside the window); two users of a chunk that share a hash fall back to the uuid.
    @Test func metricRowsKeyedByHashFillTheSameWindows() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
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

    /// A threshold is used only when its metric is a numeric column of wearable_daily_metrics: one naming
    /// a text column, an absent column or a dropped one is skipped (with a warning), never read.
    @Test func thresholdsNeedANumericMetricColumn() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
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
        let phase = PatternPhase(db: db, passId: "p", now: instant("2026-01-21T12:00:00Z"), logger: Logger(label: "test"))
        let used = Set(try phase.thresholds().map(\.metric))
        #expect(used == Set(configured).subtracting(["mood_note", "gone", "no_such_column", "user_id"]))
        #expect(used.contains("sleep_minutes"))
    }

    @Test func aDryRunEvaluatesButStoresNothing() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
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
        #expect(summary.generated["patterns_users"] == 3)
        #expect(summary.generated["episodes_opened"] == 3)
        for table in ["pattern_alert_state", "pattern_evaluations", "notification_queue"] {
            #expect(try f.count("select count(*)::int from \(unescaped: table)") == 0, "\(table)")
        }
        #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through = '-infinity'") == 1)
    }

    @Test func shadowModeStoresButEnqueuesNothing() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
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

    @Test func remindersAreEnqueuedOnceWhenDue() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(timezone: "Asia/Tokyo")
        try db.execute("""
            insert into reminders (user_id, schedule, reminder_type, title, body, local_time, critical) values
              (\(p), 'daily', 'dose', 'Dose', 'Time for your dose', '08:00', true)
            """)
        try db.execute("""
            insert into reminders (user_id, schedule, reminder_type, title, body, at) values
              (\(p), 'once', 'test_start', 'Test day', 'Your test starts today', \(instant("2026-01-25T01:00:00Z")))
            """)
        let worker = Worker(url: tdb.url)
        // 22:00 UTC on the 24th is 07:00 on the 25th in Tokyo: neither is due.
        _ = worker.run(now: instant("2026-01-24T22:00:00Z")) { $0.phases = [.reminders] }
        #expect(try f.count("select count(*)::int from notification_queue") == 0)
        // 23:30 UTC is 08:30 in Tokyo: the daily dose is due (the dose at 08:00 = 23:00 UTC, reminded
        // dose_reminder_advance_minutes (30) before); the one-off not yet.
        _ = worker.run(now: instant("2026-01-24T23:30:00Z")) { $0.phases = [.reminders] }
        let daily = try #require(try db.query("select severity, priority, scheduled_at, payload->>'dose_at' as dose_at from notification_queue").first)
        #expect(daily["severity"].string == "critical")
        #expect(daily["priority"].string == "high")
        #expect(daily["scheduled_at"].date == instant("2026-01-24T22:30:00Z"))
        #expect(daily["dose_at"].string.flatMap(ISO8601.parse) == instant("2026-01-24T23:00:00Z"))
        // Later: the one-off is due; the daily one is not enqueued again the same day.
        _ = worker.run(now: instant("2026-01-25T02:00:00Z")) { $0.phases = [.reminders] }
        _ = worker.run(now: instant("2026-01-25T03:00:00Z")) { $0.phases = [.reminders] }
        #expect(try f.count("select count(*)::int from notification_queue") == 2)
        // The next local day, the daily one again.
        _ = worker.run(now: instant("2026-01-25T23:10:00Z")) { $0.phases = [.reminders] }
        #expect(try f.count("select count(*)::int from notification_queue") == 3)
    }

    /// A daily time of 24:00 (PostgreSQL's `time` accepts it) never came due. It is midnight as each local
    /// date begins: a reminder, a dose and a forecast at 24:00 go out once a day.
    @Test func dailyTimesOf2400AreMidnightOnceADay() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(timezone: "Asia/Tokyo")            // UTC+9: midnight is 15:00 UTC
        try db.execute("update user_profiles set forecast_notification_time = '24:00', daily_reminder_time = '24:00' where user_id = \(p)")
        try db.execute("insert into reminders (user_id, schedule, reminder_type) values (\(p), 'daily', 'daily')")
        try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'dose', '24:00')")
        try db.execute("""
            insert into daily_forecasts (user_id, forecast_date, risk_level) values (\(p), '2026-01-25', 'LOW'), (\(p), '2026-01-26', 'LOW')
            """)
        let worker = Worker(url: tdb.url)
        for at in ["2026-01-24T15:00:00Z", "2026-01-24T15:05:00Z", "2026-01-25T03:00:00Z", "2026-01-25T14:00:00Z"] {
            let (s, code) = worker.run(now: instant(at)) { $0.phases = [.forecasts, .reminders] }
            #expect(code == .ok && s.phaseErrors.isEmpty)
        }
        func rows() throws -> [String] {
            try db.query("""
                select kind || ' ' || coalesce(payload->>'reminder_type', '') || ' ' || (payload->>'date') || ' '
                       || to_char(scheduled_at at time zone 'UTC', 'DD HH24:MI') as r
                  from notification_queue order by scheduled_at, kind, r
                """).compactMap { $0["r"].string }
        }
        // The 25th begins at 15:00 UTC on the 24th; the dose at that midnight is reminded 30 minutes before.
        // The 26th's forecast is made within the hour before its midnight (14:00 UTC), for that midnight.
        #expect(try rows() == ["reminder dose 2026-01-25 24 14:30", "daily_forecast  2026-01-25 24 15:00",
                               "reminder daily 2026-01-25 24 15:00", "daily_forecast  2026-01-26 25 15:00"])
        _ = worker.run(now: instant("2026-01-25T15:00:00Z")) { $0.phases = [.forecasts, .reminders] }
        #expect(try rows().count == 6)
        #expect(try rows().suffix(2) == ["daily_forecast  2026-01-26 25 15:00", "reminder daily 2026-01-26 25 15:00"])
    }

    /// People whose zone herald cannot read (PostgreSQL accepts the POSIX `UTC+3`) were passed over by
    /// the forecasts, prompts and reminders phases without a word. Each phase now warns once with their
    /// count (ids at debug, the zone text never above it) and the summary counts them; the others go on.
    @Test func peopleWithAnUnreadableZoneAreCountedAndLogged() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        // A zone written before migration 031, which now refuses it: the row is there, and must not stop the pass.
        try f.db.execute("alter table user_profiles disable trigger user_profiles_timezone_check")
        let odd = [try f.profile(timezone: "UTC+3"), try f.profile(timezone: "UTC+3")]
        try f.db.execute("alter table user_profiles enable trigger user_profiles_timezone_check")
        let fine = try f.profile(timezone: "Europe/London")
        for p in odd + [fine] {
            try db.execute("insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(p), 2, 7, 22)")
            // Two daily reminders each: a person is counted once.
            try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '06:00'), (\(p), 'daily', 'dose', '09:00')")
            try db.execute("insert into daily_forecasts (user_id, forecast_date, risk_level) values (\(p), '2026-01-25', 'LOW')")
        }
        let log = CollectedLog()
        var options = PassOptions()
        options.now = instant("2026-01-25T06:00:00Z")
        options.phases = [.forecasts, .prompts, .reminders]
        let logger = Logger(label: "herald") { JSONLogHandler(label: $0, level: .info, stream: log.stream) }
        let (summary, code) = Runner(settings: Settings(["DATABASE_URL": tdb.url]), options: options, logger: logger).run()
        #expect(code == .ok)
        #expect(summary.phaseErrors.isEmpty)
        #expect(summary.generated["forecasts_unknown_zone_users"] == 2)
        #expect(summary.generated["prompts_unknown_zone_users"] == 2)
        #expect(summary.generated["reminders_unknown_zone_users"] == 2)
        // The readable one goes on: her prompts and her 06:00 reminder (not the forecast: 08:00 by default).
        #expect(summary.generated["prompts"] == 2)
        #expect(summary.generated["reminders"] == 1)
        #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id <> \(fine)") == 0)
        let warnings = log.text.split(separator: "\n").filter { $0.contains("time zone herald cannot read") }
        #expect(warnings.count == 3, "\(log.text)")
        for phase in ["forecasts", "prompts", "reminders"] {
            #expect(warnings.contains { $0.contains(#""phase":"\#(phase)""#) && $0.contains(#""users":2"#) }, "\(warnings)")
        }
        #expect(!log.text.contains("UTC+3"))
        #expect(!odd.contains { log.text.contains($0.lowercased) })             // ids only at debug
    }

    @Test func promptsAreScheduledOncePerLocalDay() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(timezone: "America/Los_Angeles")
        try db.execute("insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(p), 4, 7, 22)")
        let worker = Worker(url: tdb.url)
        // 06:00 in Los Angeles (14:00 UTC): all four prompts of the day are still ahead.
        let (s, _) = worker.run(now: instant("2026-01-25T14:00:00Z")) { $0.phases = [.prompts] }
        #expect(s.generated["prompts"] == 4)
        let times = try db.query("select run_after from notification_queue order by run_after").compactMap { $0["run_after"].date }
        #expect(times.count == 4)
        // 07:00–22:00 local = 15:00–06:00 UTC; each prompt inside its 3.75-hour segment.
        let start = instant("2026-01-25T15:00:00Z")
        for (i, t) in times.enumerated() {
            let lo = start.addingTimeInterval(Double(i) * 3.75 * 3600)
            #expect(t >= lo && t < lo.addingTimeInterval(3.75 * 3600), "prompt \(i + 1) outside its segment")
        }
        _ = worker.run(now: instant("2026-01-25T18:00:00Z")) { $0.phases = [.prompts] }
        #expect(try f.count("select count(*)::int from notification_queue") == 4)
    }

    /// A weather service that answers slowly holds the pass back no longer than the phase's budget: the
    /// requests not started in time wait for the next pass (those users stay candidates), and delivery
    /// still runs. The service holds its answers until the budget is spent, so the requests that went
    /// out are those the two connections started within it.
    @Test func slowWeatherHoldsThePassNoLongerThanItsBudget() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let gate = FakeGate()
        let weather = try FakeHTTPServer { _ in
            FakeResponse(status: 200, headers: [("content-type", "application/json")],
                         body: Array(#"{"hourly":{"time":[],"pressure_msl":[]}}"#.utf8), gate: gate)
        }
        defer { weather.shutdown() }
        var users: [UUID] = []
        for _ in 0..<10 { users.append(try f.profile(timezone: "Asia/Tokyo")) }
        try db.execute("update user_profiles set latitude = 35.7, longitude = 139.7 where user_id = any(\(users)::uuid[])")
        let inbox = try f.enqueue(to: try f.profile(), at: seedInstant)
        let worker = Worker(url: tdb.url, settings: ["WEATHER_URL": weather.baseURL, "HERALD_CHANNEL_PUSH": "log",
                                                     "HERALD_CONNECTIONS_PER_HOST": "2"])
        let pass = InBackground {
            worker.run(now: seedInstant) { $0.phases = [.forecasts, .deliver]; $0.weatherBudget = 2 }
        }
        // The budget counts from before the first request; its answer goes once the budget is spent.
        #expect(gate.waitUntilHeld(1))
        Thread.sleep(forTimeInterval: 2.5)
        gate.open()
        let (s, code) = pass.value()
        #expect(code == .ok)
        let notFetched = s.generated["weather_not_fetched"] ?? 0
        #expect(notFetched >= 1 && notFetched <= 8, "two at a time, answered after the 2 s budget: none started after it")
        #expect(notFetched + (s.generated["weather_failed"] ?? 0) + (s.generated["weather_fetched"] ?? 0) == 10)
        #expect(weather.requests.count == 10 - notFetched)
        #expect(try f.row(inbox)["status"].string == "sent")
    }

    @Test func forecastsAreDueInEachTimezoneAndFetchedWhenMissing() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        // The fake weather provider: pressure falls 12 hPa over the day → HIGH.
        let requests = Counter()
        let weather = try FakeHTTPServer { request in
            _ = requests.next()
            var times: [String] = [], pressure: [String] = []
            for day in ["2026-01-25", "2026-01-26"] {
                for h in 0..<24 {
                    times.append("\"\(day)T\(h < 10 ? "0" : "")\(h):00\"")
                    pressure.append(String(1020.0 - Double(times.count - 1) * 0.5))
                }
            }
            return FakeResponse.json(200, #"{"hourly":{"time":[\#(times.joined(separator: ","))],"pressure_msl":[\#(pressure.joined(separator: ","))]}}"#)
        }
        defer { weather.shutdown() }
        let tokyo = try f.profile(timezone: "Asia/Tokyo")       // 12:00 at 03:00 UTC: due
        let london = try f.profile(timezone: "Europe/London")   // 03:00: not due (08:00)
        let ny = try f.profile(timezone: "America/New_York")    // 22:00 on the 24th: due for the 24th
        try db.execute("update user_profiles set latitude = 35.7, longitude = 139.7 where user_id = any(\([tokyo, london])::uuid[])")
        try db.execute("""
            insert into daily_forecasts (user_id, forecast_date, risk_level, forecast_summary)
            values (\(ny), '2026-01-24', 'LOW', 'Steady pressure expected. Your body may feel more balanced today.')
            """)
        let worker = Worker(url: tdb.url, settings: ["WEATHER_URL": weather.baseURL, "HERALD_CHANNEL_PUSH": "log"])
        let (s, code) = worker.run(now: seedInstant) { $0.phases = [.forecasts] }
        #expect(code == .ok)
        #expect(s.generated["forecasts"] == 2)
        #expect(requests.next() == 2, "one weather request, for Tokyo")
        let rows = try db.query("select recipient_user_id, payload::text as p from notification_queue order by recipient_user_id")
        let byUser = Dictionary(uniqueKeysWithValues: rows.map { ($0["recipient_user_id"].uuid!, try! JSONValue.parse($0["p"].string!)) })
        #expect(byUser[tokyo]?["risk_level"]?.stringValue == "HIGH")
        #expect(byUser[tokyo]?["date"]?.stringValue == "2026-01-25")
        #expect(byUser[ny]?["date"]?.stringValue == "2026-01-24")
        #expect(byUser[london] == nil)
        #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(tokyo) and risk_level = 'HIGH'") == 1)

        // A second pass the same day sends nothing new and fetches nothing.
        let (again, _) = worker.run(now: seedInstant.addingTimeInterval(600)) { $0.phases = [.forecasts] }
        #expect(again.generated["forecasts"] ?? 0 == 0)
        #expect(requests.next() == 3)

        // Delivery marks the forecast sent.
        try db.execute("insert into device_tokens (user_id, device_token, provider) values (\(ny), 'tok-ny', 'apns')")
        _ = worker.run(now: seedInstant.addingTimeInterval(700)) { $0.phases = [.deliver] }
        #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(ny) and notification_sent") == 1)
    }
}
