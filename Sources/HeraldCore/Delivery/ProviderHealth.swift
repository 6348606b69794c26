/// Per-pass bookkeeping of each provider's answers, to tell a configuration slip from dead destinations.
///
/// A wrong `APNS_ENV` makes every APNs token answer `BadDeviceToken`, a service account of another
/// Firebase project makes every FCM token answer `SENDER_ID_MISMATCH`, an SMTP server that knows only
/// its own mailboxes refuses every outside address. Acting on those answers would deactivate every
/// token or switch email off for everybody. So a provider becomes **suspect** in a pass once it has given
/// at least `minimumInvalid` (10) answers that a configuration slip could explain, and they are more than
/// half of all its answers so far in the pass. Once suspect, it stays suspect for the rest of the pass.
///
///     var health = ProviderHealth()
///     health.record(.apns, suspicious: true)      // one answer per destination, as it arrives
///     health.isSuspect(.apns)                  // the verdict, asked once a batch's sends are done
///
/// Only answers the provider actually gave count (not transport failures, nor sends the pass held back).
/// The type is pure: the pass decides what a suspect provider's answers become.
public struct ProviderHealth: Sendable, Equatable {
    /// The fewest suspicious answers that make a provider suspect.
    public static let minimumInvalid = 10

    /// One provider's answers so far in the pass.
    public struct Tally: Sendable, Equatable {
        public var answers = 0
        /// Destination-invalid answers that a configuration slip could explain.
        public var suspicious = 0
        /// How often each suspicious code was given.
        public var codes: [String: Int] = [:]
        /// Sticky: set the first time the threshold is met.
        public var suspect = false

        public init() {}

        /// The most frequent suspicious code ("BadDeviceToken"), ties broken by name.
        public var commonCode: String? {
            codes.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key
        }
    }

    public private(set) var tallies: [Provider: Tally] = [:]

    public init() {}

    /// Counts one answer of `provider`; `suspicious` when it refused the destination in a way a
    /// configuration slip could explain (with the provider's `code`). Returns true when this answer made
    /// the provider suspect.
    @discardableResult
    public mutating func record(_ provider: Provider, suspicious: Bool, code: String? = nil) -> Bool {
        var t = tallies[provider] ?? Tally()
        t.answers += 1
        if suspicious {
            t.suspicious += 1
            t.codes[code ?? "?", default: 0] += 1
        }
        let turned = !t.suspect && Self.isSuspect(answers: t.answers, suspicious: t.suspicious)
        if turned { t.suspect = true }
        tallies[provider] = t
        return turned
    }

    /// The verdict for `provider` so far in the pass.
    public func isSuspect(_ provider: Provider) -> Bool { tallies[provider]?.suspect ?? false }

    public func tally(_ provider: Provider) -> Tally { tallies[provider] ?? Tally() }

    /// The threshold: at least `minimumInvalid` suspicious answers, and more than half of all answers.
    public static func isSuspect(answers: Int, suspicious: Int) -> Bool {
        suspicious >= minimumInvalid && suspicious * 2 > answers
    }

    /// The error a held-back destination gets, naming what to check:
    /// "apns: 40 of 42 answers this pass were BadDeviceToken — check APNS_ENV (sandbox/production) and
    /// APNS_TOPIC; tokens were not deactivated".
    public func message(_ provider: Provider, hint: String, kept: String) -> String {
        let t = tally(provider)
        let what = t.codes.count == 1 ? (t.commonCode ?? "destination invalid")
            : "destination-invalid (mostly \(t.commonCode ?? "?"))"
        return "\(provider.rawValue): \(t.suspicious) of \(t.answers) answers this pass were \(what) — \(hint); \(kept)"
    }
}
