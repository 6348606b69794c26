import Foundation
import HeraldCore

/// What a pass did: printed on stdout as one JSON object (`ok`, `exit_code`, `processed`, `sent`,
/// `skipped`, `failed`, and the counts and timings of everything else it did). `ok` is true only when
/// the pass exits 0; a dry run's object also holds each due row's `decisions` and what it did `not_run`.
///
///     {"ok":true,"exit_code":0,"processed":5,"sent":2,"skipped":3,"failed":0,"deferred":0,"generated":{},…}
public struct Summary: Sendable {
    public var passId: String
    /// The pass exits 0 (set with `exitCode` as it ends).
    public var ok = true
    /// The exit code the process ends with.
    public var exitCode: Int32 = 0
    public var processed = 0
    public var sent = 0
    public var skipped = 0
    public var failed = 0
    public var deferred = 0
    /// Rows returned to the queue unsent (stop signal, a failed record flush, a throttled provider),
    /// with no attempt charged.
    public var released = 0
    /// Of `failed`, those that will be retried.
    public var retrying = 0
    /// Requests sent again at once after their connection ended with the answer lost.
    public var resent = 0
    /// Database connections opened again after they ended (a failover, a restart), each counted once.
    public var reconnects = 0
    public var batches = 0
    public var recovered = 0
    public var pruned = 0
    /// Due rows per channel that no adapter of this run serves (left pending).
    public var unroutable: [String: Int] = [:]
    /// Due rows per channel held back by an operator's pause (left pending).
    public var paused: [String: Int] = [:]
    public var skipReasons: [SkipReason: Int] = [:]
    /// Rows per channel (as the row names it) and what became of them.
    public var byChannel: [RowChannel: [RowOutcome: Int]] = [:]
    /// What the generators and the steps after delivery did, by what they count.
    public var generated: [GeneratedCount: Int] = [:]
    /// Phases and housekeeping steps that failed while the pass went on: their errors.
    public var phaseErrors: [ErrorSource: String] = [:]
    public var deliveries = 0
    /// Sends by channel, provider and outcome (`delivered`, `retry`, `permanent`, `destination_invalid`).
    public var sends: [SendKey: Int] = [:]
    /// Per provider: how long its requests took.
    public var latency: [Provider: LatencyHistogram] = [:]
    /// Per provider: destinations whose refusal was held back as a suspected configuration slip (retried,
    /// not deactivated; see `ProviderHealth`). Non-empty means an operator should look now.
    public var configSuspect: [Provider: Int] = [:]
    /// Providers whose circuit breaker opened in this pass.
    public var breakerOpen: Set<Provider> = []
    /// Providers that refused herald's own credentials or configuration in this pass (their breakers
    /// opened too): every message to them fails until an operator fixes the setting.
    public var credentialsRefused: Set<Provider> = []
    /// The queue as the pass left it, read when the pass reports metrics (a metrics file or a Pushgateway).
    public var queue: QueueGauges?
    public var interrupted = false
    /// What a follower did after the phases (`--follow`); nil without it.
    public var follow: FollowReport?
    public var dryRun = false
    /// A dry run's decision for each due row, in the order it would have been sent.
    public var decisions: [JSONValue] = []
    /// What a dry run did not run (`DryRunScope`): sends, housekeeping, the forecasts' weather fetches …
    public var notRun: [String] = []
    public var durationMs = 0
    /// The process's peak resident memory (VmHWM), when the system reports it.
    public var peakMemoryBytes: Int?
    public var error: String?

    public init(passId: String) {
        self.passId = passId
    }

    /// Counts one send to one destination.
    mutating func count(_ delivery: DeliveryRecord) {
        sends[SendKey(channel: delivery.channel, provider: delivery.provider, outcome: delivery.outcome), default: 0] += 1
        if let ms = delivery.latencyMs, delivery.provider != .log, delivery.provider != .inbox {
            latency[delivery.provider, default: LatencyHistogram()].observe(Double(ms) / 1000)
        }
    }

    /// Counts one recorded row, and under its channel as the row names it (`RowRecord.channelName`; a
    /// record made from an id alone counts in the totals only).
    mutating func count(_ record: RowRecord) {
        processed += 1
        let outcome = RowOutcome(record)
        switch outcome {
        case .sent: sent += 1
        case .skipped:
            skipped += 1
            if let reason = record.skipReason { skipReasons[reason, default: 0] += 1 }
        case .released: released += 1
        case .deferred: deferred += 1
        case .failed:
            failed += 1
            if !record.permanent { retrying += 1 }
        case .processing: break
        }
        if let channel = record.channelName { byChannel[RowChannel(channel), default: [:]][outcome, default: 0] += 1 }
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "ok": .bool(ok), "exit_code": .number(Double(exitCode)), "pass_id": .string(passId),
            "processed": .number(Double(processed)), "sent": .number(Double(sent)),
            "skipped": .number(Double(skipped)), "failed": .number(Double(failed)),
            "deferred": .number(Double(deferred)), "retrying": .number(Double(retrying)),
            "released": .number(Double(released)), "resent": .number(Double(resent)),
            "reconnects": .number(Double(reconnects)),
            "batches": .number(Double(batches)), "deliveries": .number(Double(deliveries)),
            "recovered": .number(Double(recovered)), "pruned": .number(Double(pruned)),
            "unroutable": .number(Double(unroutable.values.reduce(0, +))),
            "unroutable_by_channel": .object(unroutable.mapValues { .number(Double($0)) }),
            "paused": .number(Double(paused.values.reduce(0, +))),
            "paused_by_channel": .object(paused.mapValues { .number(Double($0)) }),
            "skip_reasons": .object(Dictionary(uniqueKeysWithValues: skipReasons.map { ($0.key.rawValue, .number(Double($0.value))) })),
            "by_channel": .object(Dictionary(uniqueKeysWithValues: byChannel.map { channel, counts in
                (channel.name, .object(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, .number(Double($0.value))) })))
            })),
            "generated": .object(Dictionary(uniqueKeysWithValues: generated.map { ($0.key.rawValue, .number(Double($0.value))) })),
            "phase_errors": .object(ErrorSource.byName(phaseErrors).mapValues { .string($0) }),
            "config_suspect": .object(Dictionary(uniqueKeysWithValues: configSuspect.map { ($0.key.rawValue, .number(Double($0.value))) })),
            "breaker_open": .array(breakerOpen.sorted().map { .string($0.rawValue) }),
            "credentials_refused": .array(credentialsRefused.sorted().map { .string($0.rawValue) }),
            "interrupted": .bool(interrupted), "dry_run": .bool(dryRun),
            "duration_ms": .number(Double(durationMs)),
        ]
        if let e = error { o["error"] = .string(e) }
        if dryRun {
            o["decisions"] = .array(decisions)
            o["not_run"] = .array(notRun.map { .string($0) })
        }
        if let queue { o["queue"] = queue.json }
        if let f = follow {
            o["follow"] = .object(["mode": .string(f.mode.rawValue), "wakes": .number(Double(f.wakes)),
                                   "notified": .number(Double(f.notified)), "generator_runs": .number(Double(f.generatorRuns))])
        }
        if let m = peakMemoryBytes { o["peak_memory_mb"] = .number((Double(m) / 1_048_576 * 10).rounded() / 10) }
        return .object(o)
    }
}

/// What became of a recorded row, as the summary counts it.
public enum RowOutcome: String, Sendable, CaseIterable {
    case sent, skipped, released, deferred, failed, processing

    init(_ record: RowRecord) {
        switch record.status {
        case .sent: self = .sent
        case .skipped: self = .skipped
        case .pending: self = record.event == .released ? .released : .deferred
        case .failed: self = .failed
        case .processing: self = .processing
        }
    }
}

/// One line of the sends counter.
public struct SendKey: Hashable, Sendable, Comparable {
    public var channel: String
    public var provider: Provider
    public var outcome: String

    public static func < (a: SendKey, b: SendKey) -> Bool {
        (a.channel, a.provider, a.outcome) < (b.channel, b.provider, b.outcome)
    }
}

/// Request durations in Prometheus histogram buckets (cumulative when written).
public struct LatencyHistogram: Sendable, Equatable {
    /// Upper bounds in seconds, as Prometheus' client libraries default them, up to a send timeout.
    public static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
    /// Observations per bucket (not cumulative); the last counts those above every bound.
    public private(set) var counts = [Int](repeating: 0, count: LatencyHistogram.bounds.count + 1)
    public private(set) var sum: Double = 0
    public private(set) var count = 0

    public init() {}

    public mutating func observe(_ seconds: Double) {
        guard seconds.isFinite, seconds >= 0 else { return }
        counts[Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count] += 1
        sum += seconds
        count += 1
    }
}
