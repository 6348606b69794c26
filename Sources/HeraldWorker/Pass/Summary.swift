import Foundation
import HeraldCore

/// What a pass did: printed on stdout as one JSON object (the seed's response, extended).
///
///     {"ok":true,"processed":5,"sent":2,"skipped":3,"failed":0,"deferred":0,"generated":{},"duration_ms":41,…}
public struct Summary: Sendable {
    public var passId: String
    public var ok = true
    public var processed = 0
    public var sent = 0
    public var skipped = 0
    public var failed = 0
    public var deferred = 0
    /// Of `failed`, those that will be retried.
    public var retrying = 0
    public var batches = 0
    public var recovered = 0
    public var pruned = 0
    /// Due rows per channel that no adapter of this run serves (left pending).
    public var unroutable: [String: Int] = [:]
    public var skipReasons: [String: Int] = [:]
    public var byChannel: [String: [String: Int]] = [:]
    public var generated: [String: Int] = [:]
    public var deliveries = 0
    /// Per provider: destinations whose refusal was held back as a suspected configuration slip (retried,
    /// not deactivated; see `ProviderHealth`). Non-empty means an operator should look now.
    public var configSuspect: [String: Int] = [:]
    public var interrupted = false
    public var dryRun = false
    public var durationMs = 0
    /// The process's peak resident memory (VmHWM), when the system reports it.
    public var peakMemoryBytes: Int?
    public var error: String?

    public init(passId: String) {
        self.passId = passId
    }

    mutating func count(_ record: RowRecord, channel: String) {
        processed += 1
        let key: String
        switch record.status {
        case .sent: sent += 1; key = "sent"
        case .skipped:
            skipped += 1; key = "skipped"
            skipReasons[record.skipReason ?? "?", default: 0] += 1
        case .pending: deferred += 1; key = "deferred"
        case .failed:
            failed += 1; key = "failed"
            if !record.permanent { retrying += 1 }
        case .processing: key = "processing"
        }
        byChannel[channel, default: [:]][key, default: 0] += 1
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "ok": .bool(ok), "pass_id": .string(passId),
            "processed": .number(Double(processed)), "sent": .number(Double(sent)),
            "skipped": .number(Double(skipped)), "failed": .number(Double(failed)),
            "deferred": .number(Double(deferred)), "retrying": .number(Double(retrying)),
            "batches": .number(Double(batches)), "deliveries": .number(Double(deliveries)),
            "recovered": .number(Double(recovered)), "pruned": .number(Double(pruned)),
            "unroutable": .number(Double(unroutable.values.reduce(0, +))),
            "unroutable_by_channel": .object(unroutable.mapValues { .number(Double($0)) }),
            "skip_reasons": .object(skipReasons.mapValues { .number(Double($0)) }),
            "by_channel": .object(byChannel.mapValues { .object($0.mapValues { .number(Double($0)) }) }),
            "generated": .object(generated.mapValues { .number(Double($0)) }),
            "config_suspect": .object(configSuspect.mapValues { .number(Double($0)) }),
            "interrupted": .bool(interrupted), "dry_run": .bool(dryRun),
            "duration_ms": .number(Double(durationMs)),
        ]
        if let e = error { o["error"] = .string(e) }
        if let m = peakMemoryBytes { o["peak_memory_mb"] = .number((Double(m) / 1_048_576 * 10).rounded() / 10) }
        return .object(o)
    }
}
