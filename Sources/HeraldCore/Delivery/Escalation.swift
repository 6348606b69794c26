import Foundation

/// Escalation for critical notifications: one that cannot reach its recipient on its channel — no
/// destination, every destination invalid, or failed for good — is enqueued again on the next channel
/// of the chain that the recipient has enabled, once per channel, linked to the original.
///
///     let policy = EscalationPolicy()                       // push → sms → email
///     policy.next(after: .push, kind: "pattern_alert", prefs: prefs, aboutAnotherMember: true)  // .sms, if enabled
public struct EscalationPolicy: Sendable, Equatable {
    /// The chain for every kind without its own (`HERALD_ESCALATION`); empty turns escalation off.
    public var chain: [Channel]
    /// Chains per kind (`HERALD_ESCALATION_<KIND>`), e.g. reminders: push → sms.
    public var perKind: [String: [Channel]]

    public static let defaultChain: [Channel] = [.push, .sms, .email]

    public init(chain: [Channel] = EscalationPolicy.defaultChain, perKind: [String: [Channel]] = [:]) {
        self.chain = chain
        self.perKind = perKind
    }

    /// Parses a chain setting: channel names separated by commas, or `off`/`none` for no escalation.
    public static func parseChain(_ text: String) -> [Channel]? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "off" || trimmed == "none" { return [] }
        var out: [Channel] = []
        for name in trimmed.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            guard let c = Channel(rawValue: name), !out.contains(c) else { return nil }
            out.append(c)
        }
        return out.isEmpty ? nil : out
    }

    public func chain(for kind: String) -> [Channel] { perKind[kind] ?? chain }

    /// Whether a row may escalate at all: critical severity, on a channel of its kind's chain.
    public func applies(to severity: Severity?, channel: Channel?, kind: String) -> Bool {
        guard severity == .critical, let channel else { return false }
        return chain(for: kind).contains(channel)
    }

    /// The first channel after `channel` in the kind's chain that the recipient has enabled, or nil.
    public func next(after channel: Channel, kind: String, prefs: Preferences, aboutAnotherMember: Bool) -> Channel? {
        let chain = chain(for: kind)
        guard let at = chain.firstIndex(of: channel) else { return nil }
        return chain[(at + 1)...].first { Decider.channelEnabled($0, prefs, aboutAnotherMember: aboutAnotherMember) }
    }

    /// The dedupe key of the escalated row: one per original and channel, so concurrent passes (and
    /// retries of the same record) escalate once.
    public static func dedupeKey(from original: UUID, to channel: Channel) -> String {
        "escalation:\(original.lowercased):\(channel.rawValue)"
    }

    /// The dedupe key of `item`'s escalation to `channel`. A row of a notification group (one logical
    /// notification's copies on several channels) escalates under the group's key for that channel —
    /// the key the pattern phase gives its own copy there (`<group>:<channel>`) — so a critical alert
    /// whose push reached no one does not go out twice by SMS when the alert already has an SMS copy.
    public static func dedupeKey(of item: QueueItem, to channel: Channel) -> String {
        item.notificationGroup.map { "\($0):\(channel.rawValue)" } ?? dedupeKey(from: item.id, to: channel)
    }
}

/// iOS interruption levels (APNs `aps.interruption-level`, Expo `interruptionLevel`): critical
/// notifications are time-sensitive (they break through Focus), low priority ones passive, the rest active.
public enum InterruptionLevel: String, Sendable {
    case passive, active
    case timeSensitive = "time-sensitive"

    public static func of(severity: Severity?, priority: Priority) -> InterruptionLevel {
        if severity == .critical { return .timeSensitive }
        return priority == .low ? .passive : .active
    }
}

/// A critical row enqueued again on the next channel: what the worker inserts, linked to the original.
public struct EscalationStep: Sendable, Equatable {
    /// The next channel of the chain that the recipient has enabled.
    public var channel: Channel
    /// One per original and channel (`EscalationPolicy.dedupeKey`).
    public var dedupeKey: String
    /// Why, for the trail: `escalated_` and the original's reason (`escalated_no_destination`).
    public var reason: String
}

extension EscalationPolicy {
    /// The step that takes `item` to the next channel of its chain, when it is critical and the
    /// recipient has a next channel enabled; nil otherwise. `why` is the original row's reason.
    public func escalation(of item: QueueItem, prefs: Preferences, because why: String) -> EscalationStep? {
        guard applies(to: item.severity, channel: item.channel, kind: item.kindRaw),
              let channel = item.channel,
              let next = next(after: channel, kind: item.kindRaw, prefs: prefs,
                              aboutAnotherMember: item.isAboutAnotherMember) else { return nil }
        return EscalationStep(channel: next, dedupeKey: Self.dedupeKey(of: item, to: next), reason: "escalated_\(why)")
    }
}
