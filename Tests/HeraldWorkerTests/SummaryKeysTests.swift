import Foundation
import HeraldCore
import Testing
@testable import HeraldWorker

/// The summary's maps are keyed by types (`GeneratedCount`, `ErrorSource`, `RowChannel`), and print under the
/// names its JSON and metrics file have always had: a dashboard, an alert or a script reading them needs
/// no change. The names are written out here, not derived from the types.
@Suite struct SummaryKeysTests {
    static let generatedNames = [
        "audit_partitions_dropped", "episodes_opened", "episodes_resolved", "forecast_insight_failed",
        "forecast_insights", "forecast_templated_words", "forecasts", "forecasts_missed",
        "forecasts_unknown_zone_users", "forecasts_unplaced_users", "patterns", "patterns_failed_users",
        "patterns_users", "prompts", "prompts_replanned", "prompts_unknown_zone_users", "prompts_withdrawn",
        "provider_events", "provider_events_applied", "provider_events_ignored", "provider_events_invalid",
        "provider_events_rejected", "provider_events_unmatched", "provider_events_unverified", "receipts_checked",
        "reminders", "reminders_pruned", "reminders_unknown_zone_users", "statuses_checked", "statuses_expired",
        "statuses_final", "tokens_deactivated", "truth_channels_off", "truth_from_events", "weather_failed",
        "weather_fetched", "weather_not_fetched", "weather_reused",
    ]

    /// Every count of `generated` prints under its name, and provider events under
    /// `provider_events_<outcome>` as the metric's `outcome` label.
    @Test func everyGeneratedCountPrintsUnderTheNameItAlwaysHad() {
        var s = Summary(passId: "p")
        for (n, key) in GeneratedCount.allCases.enumerated() { s.generated[key] = n + 1 }
        #expect(s.json["generated"]?.objectValue?.keys.sorted() == Self.generatedNames)
        #expect(s.json["generated"]?["provider_events_rejected"]?.intValue == s.generated[.providerEvents(.rejected)])
        let metrics = Metrics.text(s)
        for outcome in ["applied", "ignored", "invalid", "rejected", "unmatched", "unverified"] {
            #expect(metrics.contains("herald_pass_provider_events{outcome=\"\(outcome)\"} "), "\(outcome)")
        }
        #expect(!metrics.contains("herald_pass_provider_events{outcome=\"\"}"))
    }

    /// A failed phase prints under its name and a failed housekeeping step under its own; the
    /// housekeeping step `reminders` and the phase `reminders` share the name, and both errors are kept.
    @Test func everyFailedStepPrintsUnderItsPhaseOrStepName() {
        var s = Summary(passId: "p")
        for phase in Phase.allCases { s.phaseErrors[.phase(phase)] = "phase \(phase.rawValue) failed" }
        for step in HousekeepingStep.allCases { s.phaseErrors[.housekeeping(step)] = "step \(step.rawValue) failed" }
        let errors = s.json["phase_errors"]?.objectValue
        #expect(errors?.keys.sorted() == ["audit", "changes", "deliver", "events", "forecasts", "links", "patterns", "prompts",
                                          "prune", "receipts", "recover", "reminders", "statuses"])
        #expect(errors?["prune"]?.stringValue == "step prune failed")
        #expect(errors?["reminders"]?.stringValue == "step reminders failed; phase reminders failed")
        let metrics = Metrics.text(s)
        #expect(metrics.components(separatedBy: "herald_pass_phase_errors{phase=\"reminders\"} 1").count == 2)
        #expect(metrics.contains("herald_pass_phase_errors{phase=\"recover\"} 1"))
    }

    /// A recorded row counts under its channel as the row was written, one herald knows or not; a row
    /// recorded from its id alone counts in the totals only.
    @Test func rowsCountUnderTheirChannelAsWritten() {
        func row(_ channel: String?, _ status: QueueStatus) -> RowRecord {
            var r = RowRecord(id: UUID(), status: status, event: status == .sent ? .sent : .failed)
            r.channelName = channel
            return r
        }
        var s = Summary(passId: "p")
        for r in [row("push", .sent), row("carrier_pigeon", .failed), row("push", .sent), row("push", .sent),
                  row("push", .failed), row(nil, .sent), row("push", .sent)] { s.count(r) }
        #expect(s.processed == 7 && s.sent == 5 && s.failed == 2)
        let byChannel = s.json["by_channel"]?.objectValue
        #expect(byChannel?.keys.sorted() == ["carrier_pigeon", "push"])
        #expect(byChannel?["push"]?["sent"]?.intValue == 4)
        #expect(byChannel?["push"]?["failed"]?.intValue == 1)
        #expect(byChannel?["carrier_pigeon"]?["failed"]?.intValue == 1)
        #expect(RowChannel("push").channel == .push && RowChannel("carrier_pigeon").channel == nil)
        #expect(Metrics.text(s).contains("herald_pass_rows_by_channel{channel=\"carrier_pigeon\",outcome=\"failed\"} 1"))
    }

    /// A claimed row's record carries its recipient and its channel as written.
    @Test func aClaimedRowsRecordNamesItsRecipientAndChannel() {
        let item = QueueItem(id: UUID(), recipientUserId: UUID(), channelRaw: "carrier_pigeon", kindRaw: "system",
                             scheduledAt: Date(timeIntervalSince1970: 0))
        let r = RowRecord(item: item, status: .skipped, event: .skipped)
        #expect(r.id == item.id && r.recipient == item.recipientUserId && r.channelName == "carrier_pigeon")
    }
}
