import Foundation
import HeraldChannels
import HeraldCore
import Logging

/// The pass's side of `ProviderHealth`: count each provider's answers as they arrive, hold back the rows
/// whose destinations were refused in a way a configuration slip could explain until the batch's sends
/// are done, then apply the verdict — a suspect provider's refusals become retries that name what to
/// check, and no token is deactivated and no channel switched off because of them.
struct PassHealth {
    var health = ProviderHealth()
    /// What each provider's adapter says to check, learnt from the jobs.
    var checks: [Provider: ConfigurationCheck] = [:]
    /// Providers whose suspicion was already logged in this pass.
    var reported: Set<Provider> = []
}

extension DeliveryPass {
    /// Counts one answer of a provider. True when the answer refused its destination in a way a
    /// configuration slip could explain: its row must wait for the verdict before it is recorded.
    func noteAnswer(_ job: Job, _ answer: ClassifiedResponse) -> Bool {
        let provider = job.adapter.provider
        guard answer.httpStatus != nil else { return false }   // not an answer: transport failure, held back
        let check = passHealth.checks[provider] ?? job.adapter.configuration
        passHealth.checks[provider] = check
        let suspicious = check.mayBeConfiguration(answer.outcome)
        passHealth.health.record(provider, suspicious: suspicious, code: answer.outcome.code)
        return suspicious
    }

    /// A destination's answer as the verdict has it: unchanged, unless its provider is suspect and the
    /// answer is one a configuration slip could explain — then a retry that names the configuration.
    func applyVerdict(provider: Provider, destination: Destination, _ response: ClassifiedResponse) -> ClassifiedResponse {
        guard passHealth.health.isSuspect(provider), let check = passHealth.checks[provider],
              check.mayBeConfiguration(response.outcome) else { return response }
        let kept = destination.deviceTokenId != nil ? "tokens were not deactivated" : "the channel was not switched off"
        let message = passHealth.health.message(provider, hint: check.hint, kept: kept)
        if !passHealth.reported.contains(provider) {
            passHealth.reported.insert(provider)
            let t = passHealth.health.tally(provider)
            logger.error("most of a provider's destinations were refused at once: a configuration slip is suspected; they are retried, not deactivated", metadata: [
                "provider": .string(provider.rawValue), "answers": "\(t.answers)", "refused": "\(t.suspicious)",
                "code": .string(t.commonCode ?? "?"), "check": .string(check.hint),
            ])
        }
        summary.configSuspect[provider, default: 0] += 1
        var r = response
        r.outcome = .retry(after: nil, code: "config_suspect",
                           message: message + " (\(response.outcome.message ?? response.outcome.code ?? "refused"))")
        return r
    }
}
