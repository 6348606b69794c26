import Foundation
import HeraldChannels
import HeraldCore
import Logging

extension DeliveryPass {
    /// A row's records once every destination has answered: the configuration watch's verdict applied
    /// to the answers, then `DeliveryFold`; the escalation it names becomes a new row.
    func finish(_ flight: InFlight) -> RecordBatch {
        var sent = flight.sent
        sent.answers = sent.answers.map { answer in
            var a = answer
            a.response = verdict(a.response, from: a.provider, destination: a.destination)
            return a
        }
        let folded = DeliveryFold.fold(sent, escalation: options.escalation, now: clock.now(),
                                       random: Double.random(in: 0..<1, using: &rng))
        var out = RecordBatch()
        out.rows = [folded.row]
        out.deliveries = folded.deliveries
        out.tickets = folded.tickets
        out.deactivations = folded.deactivations
        out.optOuts = folded.optOuts
        out.forecastsSent = folded.forecastSent.map { [$0] } ?? []
        if let inbox = flight.inbox { out.inbox.append(inbox) }
        if let step = folded.escalation { out.escalations.append(newNotification(escalating: sent.item, step)) }
        return out
    }

    /// An answer as the configuration watch's verdict has it; the first such rewrite of a provider's
    /// answers in the pass is logged, and each is counted in the summary.
    func verdict(_ answer: ClassifiedResponse, from provider: Provider, destination: Destination) -> ClassifiedResponse {
        let (final, firstReport) = watch.verdict(answer, from: provider, destination: destination)
        guard final != answer else { return answer }
        if firstReport, let check = watch.check(provider) {
            let t = watch.health.tally(provider)
            logger.error("most of a provider's destinations were refused at once: a configuration slip is suspected; they are retried, not deactivated", metadata: [
                "provider": .string(provider.rawValue), "answers": "\(t.answers)", "refused": "\(t.suspicious)",
                "code": .string(t.commonCode ?? "?"), "check": .string(check.hint),
            ])
        }
        summary.configSuspect[provider, default: 0] += 1
        return final
    }

    /// The row an escalation enqueues: the same notification on the next channel, linked to the original.
    /// Its preferences, quiet hours and limits apply to it as to any row; its dedupe key makes it once
    /// per channel.
    func newNotification(escalating item: QueueItem, _ step: EscalationStep) -> NewNotification {
        var n = NewNotification(
            recipient: item.recipientUserId, member: item.memberUserId, alertStateId: item.alertStateId,
            channel: step.channel.rawValue, kind: item.kindRaw, severity: item.severity, priority: item.priority,
            payload: .object(item.payload ?? [:]), scheduledAt: clock.now(), dedupeKey: step.dedupeKey, reason: step.reason)
        n.escalatedFrom = item.id
        n.group = item.notificationGroup  // still one notification for the rate limits
        return n
    }
}
