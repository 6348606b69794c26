import Foundation

/// Decides, row by row, what a pass does with a batch of claimed rows. One per batch: it carries the
/// rate limiter, so a send decided for one row counts against the next (the 11th row of a day is deferred).
///
///     var decider = Decider(options: DecisionOptions(now: now), history: recentlySent)
///     for (item, context) in batch {
///         let result = decider.decide(item, context)     // .send / .skip / .deferUntil / .fail + trail
///     }
///
/// Rules, in order; the first that applies wins:
/// 0. validation: unknown channel or notification type, payload not an object, no profile, unknown timezone,
///    linked episode missing → fail (`CheckedRow`)
/// 1. expired: older than `maxAge`, or a daily forecast for another local date; read_elsewhere: the
///    person read or acted on the notification (its entry) on another channel or device
/// 2. a family's alert whose recipient is no longer an admin of the member's family; alert episode:
///    dismissed, snoozed, resolved, superseded by a higher level
/// 3. the type's toggle is off (a reminder type, forecasts, prompts) → type_disabled
/// 4. the channel's toggle is off → channel_disabled
/// 5. no destination
/// 6. quiet hours (never for a `badge_sync` row, which shows nothing): a dose reminder whose dose is within the hour goes through when
///    `quiet_hours_allow_critical` (the dose override); otherwise the quiet level (`all`,
///    `critical_only`, `none`) decides; a held-back row is skipped or deferred to the window's end —
///    a critical reminder is always deferred, never skipped
/// 7. rate limits, unless critical → defer
/// 8. send
///
/// Rules 1 to 7 live in `Decider+Rules.swift`, rule 0 in `Decider+Validation.swift`.
public struct Decider: Sendable {
    public let options: DecisionOptions
    public private(set) var limiter: RateLimiter

    public init(options: DecisionOptions, history: [SentRecord]) {
        self.options = options
        self.limiter = RateLimiter(policy: options.types.ratePolicy, history: history)
    }

    /// The largest `level` a pattern-alert payload may carry (levels are 3, 7, 14 and 21 days).
    public static let maxLevel = 1_000

    /// Decides one row. A `.send` is counted into the rate limiter.
    public mutating func decide(_ item: QueueItem, _ context: DecisionContext) -> DecisionResult {
        var trail = Trail()
        // 0. Validation: a bad row fails permanently with a readable message; the pass goes on.
        let row: CheckedRow
        do throws(RowFailure) {
            row = try CheckedRow(item, context, types: options.types, trail: &trail)
        } catch {
            return trail.result(Verdict(decision: .fail(error.message), rule: error.rule))
        }
        let local = LocalView(row, now: options.now)
        local.note(row, in: &trail)

        if let verdict = holdBack(row, local, trail: &trail) { return trail.result(verdict) }   // 1–6
        if let verdict = rateLimit(row, local, trail: &trail) { return trail.result(verdict) }  // 7

        // 8. Send.
        limiter.record(SentRecord(recipient: item.recipientUserId, channel: row.channel, kind: item.rateType,
                                  group: item.group, at: options.now))
        return trail.result(.send)
    }
}

extension Decider {
    /// What a rule makes of a row: its decision, and the name the trail gives it (`rule`).
    ///
    ///     Verdict.skip(.expired)   // .skip(.expired), rule "expired"
    struct Verdict {
        var decision: Decision
        var rule: String

        static let send = Verdict(decision: .send, rule: "send")

        static func skip(_ reason: SkipReason) -> Verdict {
            Verdict(decision: .skip(reason), rule: reason.rawValue)
        }
    }

    /// The inputs that decided one row, gathered as the rules read them, and at the end the rule that
    /// decided it (see `DecisionResult` for its keys).
    ///
    ///     var trail = Trail()
    ///     trail["timezone"] = .string("Europe/London")
    ///     return trail.result(.skip(.expired))   // trail {"timezone": …, "rule": "expired"}
    struct Trail {
        private var fields: [String: JSONValue] = [:]

        init() {
            fields.reserveCapacity(16)  // a dozen keys at most: no rehash as they come
        }

        subscript(key: String) -> JSONValue? {
            get { fields[key] }
            set { fields[key] = newValue }
        }

        /// The decision, with the trail naming its rule.
        mutating func result(_ verdict: Verdict) -> DecisionResult {
            fields["rule"] = .string(verdict.rule)
            return DecisionResult(decision: verdict.decision, trail: .object(fields))
        }
    }

    /// An instant as the trail writes it: UTC, to the second, with a `Z`.
    static func iso(_ d: Date) -> String {
        let z = Zone.local(d, in: TimeZone(secondsFromGMT: 0)!)
        return "\(z)Z"
    }
}
