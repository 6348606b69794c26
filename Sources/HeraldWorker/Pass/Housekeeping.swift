import Foundation
import HeraldPostgres
import Logging

/// What a pass does before its phases, each step in isolation (a failure is logged, counted in
/// `phase_errors` under its name, and the pass goes on): rows whose lease expired go back to the queue
/// (`recover`), terminal rows past their retention are deleted (`prune`), so are reminders cancelled
/// or finished as long ago (`reminders`), so are the records of apps' changes that polling followers
/// look at, after an hour (`changes`), the audit trail's partitions are kept (`audit`), and the
/// app's deep link scheme is written where the app's list reads it (`links`).
struct Housekeeping {
    let pass: PassContext

    func run(_ summary: inout Summary) {
        let (db, logger, store, options) = (pass.db, pass.logger, pass.store, pass.options)
        Runner.isolated(.housekeeping(.recover), db: db, logger: logger, summary: &summary) { summary in
            summary.recovered = try store.recoverExpiredLeases(now: pass.clock.now())
            if summary.recovered > 0 {
                logger.warning("returned rows whose lease expired to the queue", metadata: ["rows": "\(summary.recovered)"])
            }
        }
        Runner.isolated(.housekeeping(.prune), db: db, logger: logger, summary: &summary) { summary in
            summary.pruned = try store.pruneTerminal(retentionDays: options.retentionDays, now: pass.clock.now())
        }
        Runner.isolated(.housekeeping(.reminders), db: db, logger: logger, summary: &summary) { summary in
            let pruned = try store.pruneReminders(retentionDays: options.retentionDays)
            if pruned > 0 { summary.generated[.remindersPruned] = pruned }
        }
        Runner.isolated(.housekeeping(.changes), db: db, logger: logger, summary: &summary) { _ in
            try store.pruneGeneratorChanges()
        }
        Runner.isolated(.housekeeping(.links), db: db, logger: logger, summary: &summary) { _ in
            try store.publishDeepLinkScheme(options.render.deepLinkScheme)
        }
        Runner.isolated(.housekeeping(.audit), db: db, logger: logger, summary: &summary) { summary in
            let dropped = try store.maintainAuditTrail(retentionDays: options.auditRetentionDays)
            if dropped > 0 { summary.generated[.auditPartitionsDropped] = dropped }
        }
    }
}
