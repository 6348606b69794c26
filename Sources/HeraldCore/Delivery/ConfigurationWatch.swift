/// The pass's watch for a configuration slip (see `ProviderHealth`): each provider's answers are counted
/// as they arrive; a row whose destination was refused in a way a slip could explain waits until the
/// batch's sends are done; then the verdict applies — a suspect provider's such refusals become retries
/// that name what to check, so no token is deactivated and no channel switched off because of them.
///
///     var watch = ConfigurationWatch()
///     let hold = watch.note(answer, from: .apns, check: adapter.configurationCheck)   // as it arrives
///     let (final, firstReport) = watch.verdict(answer, from: .apns, destination: d)  // once sends are done
public struct ConfigurationWatch: Sendable, Equatable {
    public private(set) var health = ProviderHealth()
    /// What each provider's adapter says to check.
    private var checks: [Provider: ConfigurationCheck] = [:]
    /// Providers whose suspicion was already reported in this pass.
    private var reported: Set<Provider> = []

    public init() {}

    /// Counts one answer of `provider`. True when the answer refused its destination in a way a
    /// configuration slip could explain: its row must wait for the verdict before it is recorded. A
    /// transport failure is no answer and is not counted.
    public mutating func note(_ answer: ClassifiedResponse, from provider: Provider, check: ConfigurationCheck?) -> Bool {
        guard answer.httpStatus != nil else { return false }
        let check = checks[provider] ?? check
        if let check { checks[provider] = check }
        let suspicious = check?.mayBeConfiguration(answer.outcome) ?? false
        health.record(provider, suspicious: suspicious, code: answer.outcome.code)
        return suspicious
    }

    /// A destination's answer as the verdict has it: unchanged, unless its provider is suspect and the
    /// answer is one a slip could explain — then a retry (`config_suspect`) that names the configuration.
    /// `firstReport` is true the first time a provider's answer is so rewritten in the pass: report it.
    public mutating func verdict(_ answer: ClassifiedResponse, from provider: Provider,
                                 destination: Destination) -> (answer: ClassifiedResponse, firstReport: Bool) {
        guard health.isSuspect(provider), let check = checks[provider], check.mayBeConfiguration(answer.outcome)
        else { return (answer, false) }
        let kept = destination.deviceTokenId != nil ? "tokens were not deactivated" : "the channel was not switched off"
        let message = health.message(provider, hint: check.hint, kept: kept)
        let first = reported.insert(provider).inserted
        var rewritten = answer
        rewritten.outcome = .retry(after: nil, code: "config_suspect",
                                   message: message + " (\(answer.outcome.message ?? answer.outcome.code ?? "refused"))")
        return (rewritten, first)
    }

    /// What to check for `provider`, once its adapter declared it.
    public func check(_ provider: Provider) -> ConfigurationCheck? { checks[provider] }
}
