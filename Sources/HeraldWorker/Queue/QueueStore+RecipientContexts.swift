import Foundation
import HeraldCore
import HeraldPostgres

/// A batch's context when one recipient's cannot be loaded: that recipient's rows fail, their
/// batch-mates' are decided and sent.
public struct RecipientContexts: Sendable {
    public var context: DeliveryContext
    /// The recipients whose context could not be loaded, each with why (the database's error, cut to
    /// `QueueStore.unloadableErrorLength` characters).
    public var unloadable: [UUID: String]
}

extension DeliveryContext {
    /// Adds another load's context (of other recipients) to this one.
    mutating func merge(_ other: DeliveryContext) {
        profiles.merge(other.profiles) { mine, _ in mine }
        alerts.merge(other.alerts) { mine, _ in mine }
        deviceTokens.merge(other.deviceTokens) { mine, _ in mine }
        unusableTokens.merge(other.unusableTokens) { mine, _ in mine }
        unreadInApp.merge(other.unreadInApp) { mine, _ in mine }
        history += other.history
        delivered.merge(other.delivered) { mine, _ in mine }
        familyAdmins.merge(other.familyAdmins) { mine, theirs in mine.union(theirs) }
        readElsewhere.formUnion(other.readElsewhere)
    }
}

extension QueueStore {
    /// The longest error text kept in a row's `last_error` when its recipient could not be loaded.
    static let unloadableErrorLength = 300

    /// The batch's context (`loadContext`), in one set of queries. When that load fails, each recipient's
    /// context is loaded on its own, and a recipient whose own load fails is named in `unloadable`
    /// (its rows are failed; the others go on). A failure no single recipient explains is thrown as it
    /// was: a lost connection, or every recipient of the batch failing alike (more than one of them).
    ///
    ///     let loaded = try store.loadContexts(for: claimed.map(\.item), now: now)
    ///     loaded.unloadable[item.recipientUserId]   // why this row's recipient could not be loaded
    public func loadContexts(for items: [QueueItem], now: Date, anyQuietOnceRead: Bool = true) throws -> RecipientContexts {
        let batchError: Error
        do {
            return RecipientContexts(context: try loadContext(for: items, now: now, anyQuietOnceRead: anyQuietOnceRead), unloadable: [:])
        } catch {
            batchError = error
        }
        if Self.isConnectionFailure(batchError) { throw batchError }
        let byRecipient = Dictionary(grouping: items, by: \.recipientUserId)
        var loaded = RecipientContexts(context: DeliveryContext(), unloadable: [:])
        for (recipient, rows) in byRecipient {
            do {
                loaded.context.merge(try loadContext(for: rows, now: now, anyQuietOnceRead: anyQuietOnceRead))
            } catch {
                if Self.isConnectionFailure(error) { throw error }
                loaded.unloadable[recipient] = String(Self.describe(error).prefix(Self.unloadableErrorLength))
            }
        }
        if byRecipient.count > 1 && loaded.unloadable.count == byRecipient.count { throw batchError }
        return loaded
    }

    /// A lost connection is nobody's row: the batch waits for its lease to end, as any pass that dies.
    static func isConnectionFailure(_ error: Error) -> Bool {
        (error as? PGError)?.isConnectionFailure ?? false
    }

    /// The database's message (and SQLSTATE), without its detail: a detail may quote a stored value.
    static func describe(_ error: Error) -> String {
        guard let pg = error as? PGError else { return "\(error)" }
        return pg.sqlState.map { "\($0): \(pg.message)" } ?? pg.message
    }

    /// The record of a row whose recipient's context could not be loaded: failed, tried again after the
    /// backoff while it has tries left (the cause may pass), then for good.
    static func unloadable(_ claimed: Claimed, why: String, now: Date) -> RowRecord {
        let item = claimed.item
        var r = RowRecord(item: item, status: .failed, event: .failed)
        r.reason = "recipient_unloadable"
        r.lastError = "the recipient's preferences and devices could not be read: \(why)"
        if item.attempts >= claimed.maxAttempts {
            r.permanent = true
        } else {
            r.runAfter = now.addingTimeInterval(Backoff.delay(attempt: item.attempts, retryAfter: nil, random: 0.5))
        }
        r.details = ["attempt": .number(Double(item.attempts))]
        return r
    }
}
