import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Logging
import Testing

/// The patterns phase's scan of `wearable_daily_metrics`: it reads only what changed since its last
/// complete scan, never loses a row committed during one, and reads in chunks.
@Suite struct PatternScanTests {
    /// The patterns phase looks only at metrics updated since the last complete scan (less an hour's
    /// margin), so a pass every five minutes does not group the whole metrics table.
    @Test func aPassLooksOnlyAtMetricsUpdatedSinceTheLastCompleteScan() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let fam = GeneratorPhaseTests.Family()
            try fam.create(f)
            try GeneratorPhaseTests().sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 3)
            let worker = Worker(url: tdb.url)
            let now = instant("2026-01-21T12:00:00Z")
            let (first, _) = worker.run(now: now) { $0.phases = [.patterns] }
            #expect(first.generated[.patternsUsers] == 1)
            #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through > now() - interval '1 minute'") == 1)

            // Rows written two hours before that scan, which no evaluation has seen (as if their user's
            // evaluation were lost): below the watermark and its margin, so no pass reads them.
            try db.execute("update pattern_evaluations set evaluated_through = '-infinity'")
            try db.execute("set session_replication_role = replica")  // no trigger touching updated_at
            try db.execute("update wearable_daily_metrics set updated_at = now() - interval '2 hours'")
            try db.execute("set session_replication_role = origin")
            let (second, _) = worker.run(now: now) { $0.phases = [.patterns] }
            #expect(second.generated[.patternsUsers] == 0)

            // A new day's row is above it: the user is evaluated again, on all their days.
            try db.execute("""
                insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps)
                values (\(fam.member), '2026-01-21', 150, 8000)
                """)
            let (third, _) = worker.run(now: instant("2026-01-22T12:00:00Z")) { $0.phases = [.patterns] }
            #expect(third.generated[.patternsUsers] == 1)
            #expect(try f.count("select current_level from pattern_alert_state where episode_status = 'active' and metric_type = 'sleep_minutes'") == 3)
        }
    }

    /// A row whose writer's transaction began before a scan but committed after it carries an older
    /// updated_at than rows the scan saw. The user is evaluated once more after the scan, so it counts.
    @Test func aRowCommittedAfterTheScanIsStillEvaluated() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let fam = GeneratorPhaseTests.Family()
            try fam.create(f)
            try GeneratorPhaseTests().sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 3)
            let worker = Worker(url: tdb.url)
            _ = worker.run(now: instant("2026-01-21T12:00:00Z")) { $0.phases = [.patterns] }
            #expect(try f.count("select count(*)::int from pattern_evaluations where evaluated_through < now() - interval '100 seconds'") == 1)

            // Written by a transaction that began a minute ago, committed only now.
            try db.execute("""
                insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps, updated_at)
                values (\(fam.member), '2026-01-21', 150, 8000, now() - interval '1 minute')
                """)
            let (next, _) = worker.run(now: instant("2026-01-22T12:00:00Z")) { $0.phases = [.patterns] }
            #expect(next.generated[.patternsUsers] == 1)
            let dates = try db.query("""
                select last_evaluated_date::text as d from pattern_alert_state where metric_type = 'sleep_minutes'
                """).map { $0["d"].string }
            #expect(dates == ["2026-01-21"])
        }
    }

    /// A candidate that another pass holds locked is skipped; the watermark then stays where it was,
    /// so the next pass still finds that user.
    @Test func aSkippedCandidateKeepsTheWatermark() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let held = GeneratorPhaseTests.Family(), free = GeneratorPhaseTests.Family()
            for fam in [held, free] {
                try fam.create(f)
                try GeneratorPhaseTests().sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 40, dropDays: 3)
            }
            try db.execute("insert into pattern_evaluations (user_id, evaluated_through) values (\(held.member), '-infinity')")
            let other = try tdb.connect()
            try other.execute("begin")
            try other.execute("select 1 from pattern_evaluations where user_id = \(held.member) for update")

            let worker = Worker(url: tdb.url)
            let now = instant("2026-01-21T12:00:00Z")
            let (first, _) = worker.run(now: now) { $0.phases = [.patterns] }
            #expect(first.generated[.patternsUsers] == 1)
            #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through = '-infinity'") == 1)

            try other.execute("rollback")
            // The held user now, and the free one once more: its rows are younger than the late-commit margin.
            let (second, _) = worker.run(now: now) { $0.phases = [.patterns] }
            #expect(second.generated[.patternsUsers] == 2)
            #expect(try f.count("select count(distinct user_id)::int from pattern_alert_state") == 2)
            #expect(try f.count("select count(*)::int from pattern_scan_state where scanned_through > now() - interval '1 minute'") == 1)
        }
    }

    /// Chunks read ahead on connections of their own, one to three of them taking turns, give what one
    /// connection reading each chunk in turn gives; when those connections cannot be had, the pass
    /// reads on its own.
    @Test func readingAheadChangesNothing() throws {
        func outcome(_ configure: (inout PatternGenerator, _ url: String) -> Void) throws -> [String] {
            return try withTestDatabase { tdb in
                let db = try tdb.connect()
                let f = Fixtures(db: db)
                for i in 0..<12 {
                    let fam = GeneratorPhaseTests.Family()
                    try fam.create(f)
                    try GeneratorPhaseTests().sleepSeries(db, user: fam.member, last: "2026-01-20", baselineDays: 30 + i, dropDays: 3 + i)
                }
                var phase = PatternGenerator(db: try tdb.connect(), passId: "p", now: instant("2026-01-21T12:00:00Z"),
                                         logger: Logger(label: "test"))
                configure(&phase, tdb.url)
                let r = try phase.run()
                #expect(r.users == 12)
                return try db.query("""
                    select current_level || '/' || active_since || '/' || last_notified_level as e from pattern_alert_state
                     order by 1
                    """).map { $0["e"].string ?? "" }
            }
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
        #expect(PatternGenerator.segments(0, chunkSize: 1000, readUsers: 3276) == [])
        #expect(PatternGenerator.segments(1, chunkSize: 1000, readUsers: 3276) == [0..<1])
        #expect(PatternGenerator.segments(10, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<4, 4..<7, 7..<10])
        #expect(PatternGenerator.segments(3, chunkSize: 1000, readUsers: 10) == [0..<1, 1..<2, 2..<3])
        #expect(PatternGenerator.segments(4, chunkSize: 3, readUsers: 7) == [0..<1, 1..<3, 3..<4])
        #expect(MetricWindows.maxUsers(metrics: 4) * 4 * PatternEvaluator.windowDays * 8 <= 12 * 1_048_576)
        #expect(MetricWindows.maxUsers(metrics: 0) > 0)
    }

    /// The reads as the phase makes them: one chunk first and one chunk last (the writes nothing
    /// overlaps), as many as the budget allows in between, every chunk once, in order.
    @Test func metricReadsStartAndEndWithOneChunk() {
        #expect(PatternGenerator.readSegments(0, chunkSize: 1000, readUsers: 3276) == [])
        #expect(PatternGenerator.readSegments(1, chunkSize: 1000, readUsers: 3276) == [0..<1])
        #expect(PatternGenerator.readSegments(2, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<2])
        #expect(PatternGenerator.readSegments(10, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<4, 4..<7, 7..<9, 9..<10])
        #expect(PatternGenerator.readSegments(8, chunkSize: 1000, readUsers: 3276) == [0..<1, 1..<4, 4..<7, 7..<8])
        #expect(PatternGenerator.readSegments(4, chunkSize: 3, readUsers: 7) == [0..<1, 1..<3, 3..<4])
        for n in 0..<40 {
            let reads = PatternGenerator.readSegments(n, chunkSize: 1000, readUsers: 3276)
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
        try withTestDatabase { tdb in
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
                try db.query(PatternGenerator.candidatesQuery(since: since, wholeTable: wholeTable)).map {
                    [$0[0].uuid?.lowercased ?? "", $0[1].string ?? "", $0[2].string ?? "", $0[3].string ?? ""].joined(separator: " ")
                }.sorted()
            }
            for since in [Date.distantPast.addingTimeInterval(-PatternGenerator.rescanMargin), instant("2026-01-15T00:00:00Z"),
                          instant("2026-01-24T00:00:00Z"), instant("2026-03-01T00:00:00Z")] {
                let byIndex = try candidates(since: since, wholeTable: false)
                #expect(try candidates(since: since, wholeTable: true) == byIndex, "since \(since)")
            }
            let all = try candidates(since: Date.distantPast.addingTimeInterval(-PatternGenerator.rescanMargin), wholeTable: true)
            #expect(all.count == 6)  // not user 4 (every row at -infinity) nor user 5 (evaluated since)
            #expect(all.contains { $0.hasPrefix(users[0].lowercased + " 2026-01-20 2026-01-25") })
        }
    }
}
