import Foundation
import HeraldCore
import HeraldHTTP
import Logging

/// The one place the delivery changes its summary: the steps return what they did, and the driver
/// counts it here.
extension DeliveryPass {
    /// Due rows the pass will not claim: their channel has no route, or an operator paused them.
    func countHeldBack() throws {
        summary.unroutable = try store.countUnroutable(now: clock.now(), channels: routableChannels)
        if !summary.unroutable.isEmpty {
            logger.warning("due rows wait for channels with no adapter; they stay pending", metadata: [
                "unroutable": .dictionary(summary.unroutable.mapValues { .stringConvertible($0) }),
                "hint": "configure the channel's provider, or set HERALD_CHANNEL_<CHANNEL>=log",
            ])
        }
        summary.paused = try store.countPaused(now: clock.now())
        if !summary.paused.isEmpty {
            logger.notice("due rows held back by an operator's pause; they stay pending", metadata: [
                "paused": .dictionary(summary.paused.mapValues { .stringConvertible($0) })])
        }
    }

    /// Counts written flushes; rows the fenced update did not record are reported.
    func count(_ flushes: [WrittenFlush]) {
        for flush in flushes {
            var lost = 0
            for row in flush.records.rows {
                if flush.recorded.contains(row.id) { summary.count(row) } else { lost += 1 }
            }
            if lost > 0 {
                logger.warning("rows were taken over by another pass after this pass's lease expired; their outcome was not recorded here",
                               metadata: ["rows": "\(lost)"])
            }
            summary.deliveries += flush.records.deliveries.count
            for d in flush.records.deliveries where flush.recorded.contains(d.queueId) { summary.count(d) }
        }
    }

    /// Counts what the sends did: resends, breakers opened, credentials refused, answers the
    /// configuration verdict rewrote.
    func count(_ sends: SendCounts) {
        summary.resent += sends.resent
        summary.breakerOpen.formUnion(sends.breakerOpen)
        summary.credentialsRefused.formUnion(sends.credentialsRefused)
        if let refusal = sends.refusal { summary.phaseErrors[.phase(.deliver)] = refusal }
        for (provider, n) in sends.configSuspect { summary.configSuspect[provider, default: 0] += n }
    }

    /// `--dry-run`: what a due row would become, in the summary's `decisions`.
    func countDryRun(_ item: QueueItem, _ result: DecisionResult, destinations: Int) {
        var line: [String: JSONValue] = [
            "id": .string(item.id.uuidString.lowercased()),
            "channel": .string(item.channelRaw), "kind": .string(item.kindRaw),
            "destinations": .number(Double(destinations)), "trail": result.trail,
        ]
        switch result.decision {
        case .send: line["decision"] = "send"; summary.sent += 1
        case .skip(let r): line["decision"] = "skip"; line["reason"] = .string(r.rawValue); summary.skipped += 1
        case .deferUntil(let d, let r):
            line["decision"] = "defer"; line["reason"] = .string(r.rawValue)
            line["until"] = .string(ISO8601.string(d)); summary.deferred += 1
        case .fail(let m): line["decision"] = "fail"; line["error"] = .string(m); summary.failed += 1
        }
        summary.processed += 1
        summary.decisions.append(.object(line))
    }

    /// A drain's progress on stderr (a terminal), at most five times a second.
    func showProgress() {
        guard options.progress else { return }
        let t = clock.elapsed
        guard t - lastProgress > 0.2 else { return }
        lastProgress = t
        let rate = t > 0 ? Double(summary.processed) / t : 0
        let line = "\rherald: \(summary.processed) rows (\(summary.sent) sent, \(summary.skipped) skipped, "
            + "\(summary.deferred) deferred, \(summary.failed) failed), \(Int(rate)) rows/s   "
        BestEffortOutput.standardError(line)
    }
}
