import HeraldCore

/// The keys of the summary's maps, each typed: the JSON and the metrics file carry their names, which
/// stay as they were when the maps were keyed by strings.
///
///     summary.generated[.patternsUsers] = 12           // "generated": {"patterns_users": 12}
///     summary.phaseErrors[.housekeeping(.prune)] = "…"  // "phase_errors": {"prune": "…"}

/// What a phase counts in the summary's `generated` (and the metrics file): the keys the JSON carries.
public enum GeneratedCount: String, CaseIterable, Sendable {
    case auditPartitionsDropped = "audit_partitions_dropped"
    case episodesOpened = "episodes_opened"
    case episodesResolved = "episodes_resolved"
    case forecastInsightFailed = "forecast_insight_failed"
    case forecastInsights = "forecast_insights"
    case forecastTemplatedWords = "forecast_templated_words"
    case forecasts
    case forecastsMissed = "forecasts_missed"
    case forecastsUnknownZoneUsers = "forecasts_unknown_zone_users"
    case forecastsUnplacedUsers = "forecasts_unplaced_users"
    case patterns
    case patternsFailedUsers = "patterns_failed_users"
    case patternsUsers = "patterns_users"
    case prompts
    case promptsReplanned = "prompts_replanned"
    case promptsUnknownZoneUsers = "prompts_unknown_zone_users"
    case promptsWithdrawn = "prompts_withdrawn"
    case providerEvents = "provider_events"
    case providerEventsApplied = "provider_events_applied"
    case providerEventsIgnored = "provider_events_ignored"
    case providerEventsInvalid = "provider_events_invalid"
    case providerEventsRejected = "provider_events_rejected"
    case providerEventsUnmatched = "provider_events_unmatched"
    case providerEventsUnverified = "provider_events_unverified"
    case receiptsChecked = "receipts_checked"
    case reminders
    case remindersPruned = "reminders_pruned"
    case remindersUnknownZoneUsers = "reminders_unknown_zone_users"
    case statusesChecked = "statuses_checked"
    case statusesExpired = "statuses_expired"
    case statusesFinal = "statuses_final"
    case tokensDeactivated = "tokens_deactivated"
    case truthChannelsOff = "truth_channels_off"
    case truthFromEvents = "truth_from_events"
    case weatherFailed = "weather_failed"
    case weatherFetched = "weather_fetched"
    case weatherNotFetched = "weather_not_fetched"
    case weatherReused = "weather_reused"
}

extension GeneratedCount {
    /// The count of provider events that ended with `outcome` (`provider_events_<outcome>`).
    static func providerEvents(_ outcome: ProviderEventOutcome) -> GeneratedCount {
        switch outcome {
        case .applied: .providerEventsApplied
        case .ignored: .providerEventsIgnored
        case .invalid: .providerEventsInvalid
        case .rejected: .providerEventsRejected
        case .unmatched: .providerEventsUnmatched
        case .unverified: .providerEventsUnverified
        }
    }

    /// The outcome this key counts provider events of; nil for the other counts.
    var providerEventOutcome: ProviderEventOutcome? {
        ProviderEventOutcome.allCases.first { Self.providerEvents($0) == self }
    }
}

/// What became of a provider event (`provider_events.outcome`, whose check names the same six).
public enum ProviderEventOutcome: String, CaseIterable, Sendable {
    /// A final status applied to herald's delivery.
    case applied
    /// No final status in it.
    case ignored
    /// Malformed, or could not be recorded.
    case invalid
    /// Its signature failed: forged, or a wrong key.
    case rejected
    /// No delivery of herald's has its message id.
    case unmatched
    /// Its provider's key is not configured.
    case unverified
}

/// A part of a pass whose failure the pass outlives (`phase_errors`, the metric
/// `herald_pass_phase_errors{phase=…}`): one of its phases, or a housekeeping step before them.
public enum ErrorSource: Hashable, Sendable {
    case phase(Phase)
    case housekeeping(HousekeepingStep)

    /// The name the JSON and the metrics give it: the phase's (`patterns`) or the step's (`prune`).
    public var name: String {
        switch self {
        case .phase(let phase): phase.rawValue
        case .housekeeping(let step): step.rawValue
        }
    }

    /// `errors` by name; the phase `reminders` and the housekeeping step of the same name share theirs,
    /// joined in the order the pass runs them (housekeeping first).
    static func byName(_ errors: [ErrorSource: String]) -> [String: String] {
        let ordered = errors.sorted { a, b in
            switch (a.key, b.key) {
            case (.housekeeping, .phase): true
            case (.phase, .housekeeping): false
            default: a.key.name < b.key.name
            }
        }
        return Dictionary(ordered.map { ($0.key.name, $0.value) }, uniquingKeysWith: { "\($0); \($1)" })
    }
}

/// The housekeeping steps a pass runs before its phases, each isolated (Pass/Housekeeping.swift).
public enum HousekeepingStep: String, CaseIterable, Sendable {
    /// Rows whose lease expired go back to the queue.
    case recover
    /// Terminal rows past retention are deleted.
    case prune
    /// Reminders long over are deleted.
    case reminders
    /// The app changes a follower woke for, past an hour, are deleted.
    case changes
    /// The app's deep-link scheme is published.
    case links
    /// The audit trail's coming months are made and those past retention dropped.
    case audit
}

/// The channel a recorded row is counted under (`by_channel`, the metric's `channel` label): its name as
/// the row was written, and the `Channel` herald knows by that name, if any (a row written with an
/// unknown channel is counted under its own name).
public struct RowChannel: Hashable, Sendable, Comparable {
    /// The channel herald knows by `name`; nil for a name it does not know.
    public let channel: Channel?
    /// The row's `channel` as written.
    public let name: String

    public init(_ name: String) {
        self.name = name
        self.channel = Channel(rawValue: name)
    }

    public init(_ channel: Channel) {
        self.init(channel.rawValue)
    }

    public static func < (a: RowChannel, b: RowChannel) -> Bool { a.name < b.name }
}
