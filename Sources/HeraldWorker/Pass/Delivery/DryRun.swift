import Foundation
import HeraldCore
import HeraldHTTP

extension DeliveryPass {
    /// `--dry-run`: what each due row would become, in the summary's `decisions`; nothing is sent.
    func dryRun(_ batch: [Claimed]) throws {
        var planner = try planner(for: batch)
        for claimed in batch {
            let row = planner.plan(PlanInput(item: claimed.item, maxAttempts: claimed.maxAttempts))
            printDryRun(row.item, row.result, destinations: row.destinations.count)
        }
    }

    func printDryRun(_ item: QueueItem, _ result: DecisionResult, destinations: Int) {
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
