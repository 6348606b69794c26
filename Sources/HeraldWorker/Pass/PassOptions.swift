import Foundation
import HeraldCore

/// How one `herald run` behaves. The defaults suit a pass started by cron every five minutes: batches
/// of 50, and no new batch claimed after 240 s.
public struct PassOptions: Sendable {
    public var batchSize = 50
    /// `--shard K/N`: claim, read and record in the queue's partition K only; nil: the whole queue.
    public var shard: Shard?
    /// Batches to claim; nil with `drain` means until nothing is due or the deadline passes.
    public var maxBatches: Int? = 1
    public var drain = false
    /// Seconds after which no new batch is claimed (inside the cron interval).
    public var deadline: Double = 240
    /// `--follow`: once the phases have run, keep delivering until the deadline, woken as rows come
    /// due (implies `drain`).
    public var follow = false
    /// How a follower learns that rows came due (HERALD_FOLLOW_LISTEN).
    public var followListen = FollowListen.auto
    /// A polling follower's interval in seconds (HERALD_FOLLOW_POLL_MS); a listening one's longest
    /// wait while due rows are held by another pass.
    public var followPoll: Double = 0.5
    /// How long a pass whose database connection ended tries to connect again before it gives up
    /// (HERALD_RECONNECT_SECONDS; 0: it gives up at once, exit 2).
    public var reconnectSeconds: Double = 30
    /// Overrides the clock for every decision (tests, backfills, replays).
    public var now: Date?
    /// Time moved forward by a test (`ClockShift`): the pass's clock reads it (`PassClock`). Nil:
    /// the real time only, as `herald run` has it.
    public var clockShift: ClockShift?
    public var phases: [Phase] = Phase.allCases
    public var dryRun = false
    /// Pending rows older than this are skipped as `expired`.
    public var maxAge: TimeInterval = 24 * 3600
    /// A claimed row's lease; it must outlast the deadline plus one send timeout.
    public var leaseSeconds = 600
    public var retentionDays = 30
    /// How long the trail and deliveries are kept, whatever became of the queue rows (HERALD_AUDIT_RETENTION_DAYS).
    public var auditRetentionDays = 400
    /// Rows recorded per flush while sends are still in flight.
    public var recordChunk = 200
    public var metricsFile: String?
    /// Push the pass's metrics to this Prometheus Pushgateway (`--pushgateway`, HERALD_PUSHGATEWAY_URL).
    public var pushgateway: String?
    /// Show progress on stderr (set when stderr is a terminal and the pass drains).
    public var progress = false
    /// Pattern alerts are evaluated and stored but nothing is enqueued (HERALD_SHADOW_MODE).
    public var shadowMode = false
    public var thresholdsVersion = "v1"
    /// Users evaluated per pattern transaction; each chunk's metrics are read while the one before is evaluated.
    public var patternChunk = 1000
    /// Connections that read the next chunks' metrics while the pass writes (the bench compares 1 and 2).
    public var patternReaders = 2
    /// The Open-Meteo-style weather API for missing forecasts (WEATHER_URL).
    public var weatherURL: String? = "https://api.open-meteo.com"
    /// The longest the forecasts phase starts weather requests for: the generators run before delivery,
    /// so a weather service that does not answer must not hold delivery back. Users not fetched in time
    /// stay candidates for the next pass.
    public var weatherBudget: TimeInterval = 60
    /// How long before a person's notification time their forecast is made (HERALD_FORECAST_LEAD_MINUTES):
    /// the weather is fetched, and fetched again on each pass until it comes, within it.
    public var forecastLead: TimeInterval = 3600
    /// The side of the weather's place cells in degrees (HERALD_WEATHER_CELL_DEGREES): people whose
    /// coordinates fall in one cell share one weather request.
    public var weatherCellSize = WeatherCells.defaultSize
    /// How long a cell's weather answer serves the forecasts of later passes (HERALD_WEATHER_REUSE_MINUTES).
    public var weatherReuse: TimeInterval = 3600
    /// People whose forecasts the forecasts phase makes, words and enqueues together: a pass's memory
    /// is one chunk's however many people are due at once.
    public var forecastChunk = 2_000
    /// The team's forecast insight service (HERALD_FORECAST_INSIGHT_URL); nil: herald's own words.
    public var forecastInsight: ForecastInsightService?
    public var render = RenderOptions()
    /// Where a critical notification goes when its channel cannot reach the recipient (HERALD_ESCALATION).
    public var escalation = EscalationPolicy()
    /// Each provider's quota (HERALD_<PROVIDER>_QUOTA, HERALD_APNS_CONCURRENCY): the published figures
    /// unless the settings say otherwise.
    public var quotas: [Provider: Quota] = Quota.published
    /// The passes and followers that send at once, each pacing itself to this share of every quota
    /// (HERALD_QUOTA_SHARES).
    public var quotaShares = 1

    public init() {}
}
