import Foundation

/// A claimed row as the plan takes it: the row and how many attempts it may use.
public struct PlanInput: Sendable {
    public var item: QueueItem
    public var maxAttempts: Int

    public init(item: QueueItem, maxAttempts: Int) {
        self.item = item
        self.maxAttempts = maxAttempts
    }
}

/// What the decisions of one batch read, loaded by the worker in a fixed number of queries
/// (`QueueStore.loadContext`); the plan only reads it, so it stays pure.
public struct DeliveryContext: Sendable {
    public var profiles: [UUID: Preferences] = [:]
    public var alerts: [UUID: AlertState] = [:]
    /// Active push tokens per user.
    public var deviceTokens: [UUID: [Destination]] = [:]
    /// Per user, why active tokens could not be used (`Provider.ofDeviceToken`: an unknown or non-push
    /// provider): never sent to, named in `last_error` when the row has no other destination.
    public var unusableTokens: [UUID: [String]] = [:]
    public var unreadInApp: [UUID: Int] = [:]
    /// Recent sends of the batch's recipients, for the rate limits.
    public var history: [SentRecord] = []
    /// Destinations already delivered by an earlier attempt of a row (stored addresses).
    public var delivered: [UUID: Set<String>] = [:]
    /// For the batch's family alerts (pattern alerts about another member): each member's current
    /// family admins, read when the batch is sent.
    public var familyAdmins: [UUID: Set<UUID>] = [:]
    /// The batch's rows whose notification the person has read or acted on (skipped `read_elsewhere`).
    public var readElsewhere: Set<UUID> = []

    public init() {}

    /// Whether `item` may go to its recipient as far as the family is concerned: a pattern alert about
    /// another member only while its recipient is an admin of a family of that member.
    public func recipientIsFamilyAdmin(_ item: QueueItem) -> Bool {
        guard item.kind == .patternAlert, item.isAboutAnotherMember, let member = item.memberUserId else { return true }
        return familyAdmins[member]?.contains(item.recipientUserId) == true
    }
}

/// How one channel is served in this run, as far as the plan cares.
public struct RouteFacts: Sendable, Equatable {
    public enum Mode: Sendable, Equatable {
        /// Printed as a JSON line.
        case log
        /// Written to the inbox table.
        case inbox
        /// Sent through providers, in `providers`' order.
        case providers
    }

    public var mode: Mode
    /// The providers configured for the channel, in failover order (empty for log and inbox).
    public var providers: [Provider]
    /// The provider's own address, for a channel that reaches its provider's address (webhook URL).
    public var providerAddress: String?

    public init(mode: Mode, providers: [Provider] = [], providerAddress: String? = nil) {
        self.mode = mode
        self.providers = providers
        self.providerAddress = providerAddress
    }

    /// The provider that serves destinations with no provider of their own (phones, addresses, URLs);
    /// nil when a provider route has none.
    public var provider: Provider? {
        switch mode {
        case .log: .log
        case .inbox: .inbox
        case .providers: providers.first
        }
    }

    /// Whether this route can reach a destination issued by `provider` (a push token's provider).
    public func serves(_ provider: Provider) -> Bool { mode != .providers || providers.contains(provider) }
}

/// The plan for one claimed row: its decision, its destinations, and what the worker does with it.
public struct PlannedRow: Sendable {
    public var item: QueueItem
    public var maxAttempts: Int
    public var result: DecisionResult
    /// Every destination the decision saw.
    public var destinations: [Destination]
    public var prefs: Preferences?
    public var unreadInApp: Int
    public var action: Action

    public enum Action: Sendable {
        /// Recorded at once, before any network I/O (failed, skipped, deferred), with the next channel
        /// when a critical row has nowhere to go on its own.
        case record(RowRecord, escalation: EscalationStep?)
        /// Sent to `todo` (each through `destination.provider`); the destinations an earlier attempt
        /// delivered are left out.
        case send(todo: [Destination], previouslyDelivered: Bool)
    }
}

/// Delivery as a pure plan: given a claimed batch, its context, the routes and the time, what each row
/// becomes — the decision, the destinations, the provider of each, and the records known before any
/// request. The worker's deliver phase sends the plan's `.send` rows and folds the answers with
/// `DeliveryFold`.
///
///     let plan = DeliveryPlanner.plan(rows, context: ctx, routes: routes, options: options, escalation: policy)
///     var planner = DeliveryPlanner(context: ctx, routes: routes, options: options, escalation: policy)
///     let next = planner.plan(row)                      // a row at a time, as the worker does
public struct DeliveryPlanner: Sendable {
    let context: DeliveryContext
    let routes: [Channel: RouteFacts]
    let escalation: EscalationPolicy
    /// One decider for the batch: a send decided for one row counts against the next.
    var decider: Decider

    public init(context: DeliveryContext, routes: [Channel: RouteFacts], options: DecisionOptions,
                escalation: EscalationPolicy) {
        self.context = context
        self.routes = routes
        self.escalation = escalation
        self.decider = Decider(options: options, history: context.history)
    }

    /// The whole batch at once.
    public static func plan(_ rows: [PlanInput], context: DeliveryContext, routes: [Channel: RouteFacts],
                            options: DecisionOptions, escalation: EscalationPolicy) -> [PlannedRow] {
        var planner = DeliveryPlanner(context: context, routes: routes, options: options, escalation: escalation)
        return rows.map { planner.plan($0) }
    }

    /// The next row of the batch, in claim order. The worker plans a row at a time, so a large batch
    /// never holds every row's plan at once.
    public mutating func plan(_ row: PlanInput) -> PlannedRow {
        let ctx = context
        let item = row.item
        let prefs = ctx.profiles[item.recipientUserId]
        let route = item.channel.flatMap { routes[$0] }
        let unread = ctx.unreadInApp[item.recipientUserId] ?? 0
        let destinations = prefs.map { Self.destinationsOf(item, prefs: $0, route: route, tokens: ctx.deviceTokens) } ?? []
        let decisionContext = DecisionContext(
            preferences: prefs, alert: item.alertStateId.flatMap { ctx.alerts[$0] },
            destinations: destinations, unreadInApp: unread, recipientIsFamilyAdmin: ctx.recipientIsFamilyAdmin(item),
            readElsewhere: ctx.readElsewhere.contains(item.id))
        let result = decider.decide(item, decisionContext)
        let action = Self.action(item, result, prefs: prefs, route: route, destinations: destinations,
                                 delivered: ctx.delivered[item.id] ?? [], escalation: escalation,
                                 unusable: item.channel?.reach == .deviceTokens ? ctx.unusableTokens[item.recipientUserId] ?? [] : [])
        return PlannedRow(item: item, maxAttempts: row.maxAttempts, result: result, destinations: destinations,
                          prefs: prefs, unreadInApp: unread, action: action)
    }

    /// The unusable tokens named in `last_error`: the first few, then how many more (an app may have
    /// written thousands).
    static func unusableTokensText(_ reasons: [String], naming limit: Int = 3) -> String {
        let named = reasons.prefix(limit).joined(separator: "; ")
        return reasons.count > limit ? "\(named); and \(reasons.count - limit) more unusable tokens" : named
    }

    /// What becomes of a decided row.
    static func action(_ item: QueueItem, _ result: DecisionResult, prefs: Preferences?, route: RouteFacts?,
                       destinations: [Destination], delivered: Set<String>,
                       escalation: EscalationPolicy, unusable: [String] = []) -> PlannedRow.Action {
        switch result.decision {
        case .fail(let message):
            var r = RowRecord(item: item, status: .failed, event: .failed)
            r.permanent = true
            r.lastError = message
            r.reason = "invalid_row"
            r.details = result.trail
            return .record(r, escalation: nil)
        case .skip(let reason):
            var r = RowRecord(item: item, status: .skipped, event: reason == .superseded ? .superseded : .skipped)
            r.skipReason = reason
            r.reason = reason.rawValue
            r.details = result.trail
            if reason == .noDestination, !unusable.isEmpty { r.lastError = Self.unusableTokensText(unusable) }
            // A critical notification with nowhere to go on its channel tries the next one.
            let next = reason == .noDestination ? prefs.flatMap { escalation.escalation(of: item, prefs: $0, because: reason.rawValue) } : nil
            return .record(r, escalation: next)
        case .deferUntil(let until, let reason):
            var r = RowRecord(item: item, status: .pending, event: .deferred)
            r.runAfter = until
            r.attemptsDelta = -1
            r.reason = reason.rawValue
            r.details = result.trail
            return .record(r, escalation: nil)
        case .send:
            guard prefs != nil, route != nil else {
                // decide() fails rows without a profile or a known channel; never leave one leased.
                var r = RowRecord(item: item, status: .failed, event: .failed)
                r.permanent = true
                r.lastError = "no route for channel '\(item.channelRaw)'"
                return .record(r, escalation: nil)
            }
            let todo = destinations.filter { !delivered.contains($0.storableAddress) }
            return .send(todo: todo, previouslyDelivered: !delivered.isEmpty)
        }
    }

    /// Where a row's channel reaches its recipient (`Channel.reach`). Decided before sending, so a
    /// recipient without any is skipped as `no_destination`.
    public static func destinationsOf(_ item: QueueItem, prefs: Preferences, route: RouteFacts?,
                                      tokens: [UUID: [Destination]]) -> [Destination] {
        guard let channel = item.channel, let route else { return [] }
        switch channel.reach {
        case .deviceTokens:
            // Every active token whose provider this run can reach (all of them on the log adapter).
            return (tokens[item.recipientUserId] ?? []).filter { route.serves($0.provider) }
        case .profileAddress:
            guard let provider = route.provider else { return [] }
            return channel.address(in: prefs).map { [Destination(provider: provider, address: $0)] } ?? []
        case .providerAddress:
            guard let provider = route.provider else { return [] }
            return [Destination(provider: provider, address: route.providerAddress ?? channel.rawValue)]
        case .inbox:
            return [Destination(provider: .inbox, address: item.recipientUserId.lowercased)]
        }
    }
}
