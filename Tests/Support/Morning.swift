import Foundation
import HeraldPostgres

/// A morning of forecasts, as herald meets it where it is deployed: `people` in one zone (Europe/London,
/// UTC in January) whose forecasts are due at 08:00 on 2026-01-25, living in `places` places that fall
/// in as many weather cells, one device each (every other one APNs, the rest FCM).
///
/// - In the hour before, passes start as cron starts them (`primingPasses`: every five minutes from
///   07:00 to 07:55), each `herald run --batch-size 200 --now <its instant>` as a process of its own:
///   the weather is fetched, the forecasts made, their words asked of the insight service, and their
///   pushes enqueued for 08:00.
/// - Then the pass cron starts last before 08:00 follows the queue (`--follow`, as crontab.example
///   deploys it), started `followerLead` seconds before 08:00 on its own clock: at 08:00 it delivers
///   every push, through fake APNs and FCM over TLS and HTTP/2. It is stopped (SIGTERM) once the fakes
///   have every push, or `deliveryTimeout` after 08:00.
///
/// The bench's section "a morning" runs it at 100,000 people and 500 places; a test runs it small and
/// checks its counts.
///
///     let fakes = try MorningFakes()
///     defer { fakes.shutdown() }
///     let figures = try Morning(people: 500, places: 5, herald: heraldBinary).run(url: databaseURL, fakes: fakes)
///     figures.weatherRequests   // 5
public struct Morning: Sendable {
    public var people: Int
    public var places: Int
    /// The `herald` binary the processes run.
    public var herald: URL
    /// Rows a pass claims per batch (crontab.example's 200).
    public var batchSize = 200
    /// The instants of the passes before 08:00.
    public var primingPasses: [Date] = (0..<12).map { Morning.eight.addingTimeInterval(Double($0 * 300 - 3600)) }
    /// How long before 08:00, on its own clock, the follower starts: it runs its phases, then waits.
    public var followerLead: Double = 10
    /// The longest the follower is given after 08:00 to deliver every push.
    public var deliveryTimeout: Double = 300
    /// Settings for every process beside the fakes' (e.g. HERALD_LOG_LEVEL).
    public var settings: [String: String] = [:]

    /// 08:00 on 2026-01-25 in Europe/London: when every forecast is due.
    public static let eight = FakeWeather.instant("2026-01-25T08:00:00Z")

    public init(people: Int, places: Int, herald: URL) {
        self.people = people
        self.places = places
        self.herald = herald
    }

    /// Fills the database `url` (migrated, without people) and runs the morning against `fakes`.
    public func run(url: String, fakes: MorningFakes) throws -> MorningFigures {
        let db = try PGConnection(url)
        defer { db.close() }
        try prepare(db)
        var env = try fakes.settings()
        env["DATABASE_URL"] = url
        env.merge(settings) { _, new in new }
        var figures = MorningFigures()
        for now in primingPasses {
            let summary = try HeraldProcess.pass(herald, ["run", "--batch-size", "\(batchSize)", "--now", Self.iso(now)], env: env)
            figures.primingPasses.append(.init(now: now, summary: summary, enqueued: try enqueued(db)))
        }
        figures.weatherRequests = fakes.weather.server.requestCount
        figures.insightCalls = fakes.insight.requestCount
        figures.enqueuedBeforeEight = try enqueued(db)
        try deliver(env, fakes, &figures)
        figures.sentRows = Int(try db.query("""
            select count(*)::int as n from notification_queue where kind = 'daily_forecast' and status = 'sent'
            """).first?["n"].int ?? 0)
        return figures
    }

    /// `people` with push on, a location in one of `places` cells and one device each. Place p's centre
    /// is the centre of a 0.1° cell, on a grid 0.3° apart (25 to a row) from 50.05° N, 4.95° W; each of
    /// its people lives up to 0.03° from it, inside the cell.
    func prepare(_ db: PGConnection) throws {
        try db.execute("""
            insert into user_profiles (user_id, timezone, notify_push, latitude, longitude, location_name, forecast_notification_time)
            select md5('morning' || g)::uuid, 'Europe/London', true,
                   (50.05 + 0.3 * ((g % \(places)) / 25) + 0.01 * ((g / \(places)) % 7 - 3))::float8,
                   (-4.95 + 0.3 * ((g % \(places)) % 25) + 0.01 * ((g / \(places)) % 5 - 2))::float8,
                   'Place ' || (g % \(places)), '08:00'
              from generate_series(0, \(people - 1)) g
            """)
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider)
            select md5('morning' || g)::uuid,
                   case when g % 2 = 0 then encode(sha256(('morning' || g)::bytea), 'hex') else 'fcm-' || md5('morning' || g) end,
                   case when g % 2 = 0 then 'ios' else 'android' end,
                   case when g % 2 = 0 then 'apns' else 'fcm' end
              from generate_series(0, \(people - 1)) g
            """)
        try db.execute("vacuum analyze user_profiles")
        try db.execute("vacuum analyze device_tokens")
    }

    /// The forecast pushes in the queue.
    func enqueued(_ db: PGConnection) throws -> Int {
        Int(try db.query("select count(*)::int as n from notification_queue where kind = 'daily_forecast'").first?["n"].int ?? 0)
    }

    /// The follower: started `followerLead` before 08:00 on its clock, stopped once the fakes have a
    /// push per person (or at the timeout); the figures of the delivery.
    func deliver(_ env: [String: String], _ fakes: MorningFakes, _ figures: inout MorningFigures) throws {
        let start = Self.eight.addingTimeInterval(-followerLead)
        let follower = try HeraldProcess(herald, ["run", "--batch-size", "\(batchSize)", "--follow", "--deadline", "320",
                                                  "--now", Self.iso(start)], env: env.merging(["HERALD_LOG_LEVEL": "info"]) { a, _ in a })
        // Its clock starts after the process does: 08:00 comes no earlier than this.
        let eight = follower.started.addingTimeInterval(followerLead)
        let end = eight.addingTimeInterval(deliveryTimeout)
        while fakes.pushCount < people && Date() < end && follower.process.isRunning {
            if figures.followingBeforeEight == nil, follower.log.contains("following the queue") {
                figures.followingBeforeEight = eight.timeIntervalSinceNow
            }
            usleep(20_000)
        }
        let summary = try follower.stop()
        figures.follower = .init(summary: summary)
        let (apns, fcm) = fakes.pushes
        figures.apnsPushes = apns.count
        figures.fcmPushes = fcm.count
        figures.distinctDevices = Set(apns.map(\.path)).count + Set(fcm.map { Self.fcmToken($0) }).count
        if let last = (apns + fcm).map(\.receivedAt).max() { figures.secondsToLastPush = last.timeIntervalSince(eight) }
    }

    /// The device an FCM send is for (its `message.token`).
    static func fcmToken(_ request: FakeRequest) -> String {
        let root = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
        return (root?["message"] as? [String: Any])?["token"] as? String ?? ""
    }

    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: date)
    }
}

/// What a morning measured.
public struct MorningFigures: Sendable {
    /// One herald process's figures, from its summary.
    public struct Pass: Sendable {
        public var now: Date?
        public var seconds: Double
        public var peakMemoryMB: Double?
        public var sent: Int
        /// What its generators counted (`generated`: forecasts, weather_fetched, forecast_insights, …).
        public var generated: [String: Int]
        /// Forecast pushes in the queue after it.
        public var enqueued: Int?
        /// The phases that failed, with their errors (`phase_errors`).
        public var phaseErrors: [String: String]

        init(now: Date? = nil, summary: [String: Any], enqueued: Int? = nil) {
            self.now = now
            seconds = (summary["duration_ms"] as? Double ?? Double(summary["duration_ms"] as? Int ?? 0)) / 1000
            peakMemoryMB = summary["peak_memory_mb"] as? Double
            sent = summary["sent"] as? Int ?? 0
            generated = (summary["generated"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
            phaseErrors = (summary["phase_errors"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
            self.enqueued = enqueued
        }
    }

    public var primingPasses: [Pass] = []
    public var follower: Pass?
    /// Requests the weather service received.
    public var weatherRequests = 0
    /// Requests the insight service received.
    public var insightCalls = 0
    /// Forecast pushes in the queue when the follower started.
    public var enqueuedBeforeEight = 0
    /// How long before 08:00 the follower was following the queue (its phases done); nil: not seen.
    public var followingBeforeEight: Double?
    public var apnsPushes = 0
    public var fcmPushes = 0
    /// Different devices the pushes went to.
    public var distinctDevices = 0
    /// Forecast rows recorded sent.
    public var sentRows = 0
    /// From 08:00 to the last push the fakes received (and accepted: they answer at once).
    public var secondsToLastPush: Double?

    public var pushes: Int { apnsPushes + fcmPushes }
    public var pushesPerSecond: Double? { secondsToLastPush.map { Double(pushes) / max($0, 0.001) } }
    /// The largest peak memory (VmHWM) of any herald process of the morning, in MB.
    public var peakMemoryMB: Double? { (primingPasses + [follower].compactMap { $0 }).compactMap(\.peakMemoryMB).max() }
}
