import Foundation
import HeraldChannels
import HeraldCore

/// One send to one destination through one provider's adapter.
struct Job {
    /// The row's place in its batch's flights.
    var flight: Int
    var envelope: Envelope
    var adapter: any ProviderAdapter
    var maxAttempts: Int
    /// Times this destination went again after its connection ended before the answer.
    var resends = 0

    /// The row has a try left for this destination: its claim's attempt and each resend are tries.
    var mayResend: Bool { envelope.item.attempts + resends < maxAttempts }

    /// The destination belongs to its provider (a device token): it never moves to another.
    var pinned: Bool { envelope.destination.deviceTokenId != nil || adapter.provider.issuesDeviceTokens }
}

/// A row being sent: what the fold will need, gathered as its destinations answer.
struct InFlight {
    var sent: SentRow
    var expected: Int
    var inbox: InboxRecord?
    var done: Bool { sent.answers.count + sent.unsent.count >= expected }
    /// The row's destinations still without their last word.
    var awaiting: Int { expected - sent.answers.count - sent.unsent.count }

    /// Keeps a job's result as the answer policy decided it: a destination's last word as its outcome;
    /// an answer after which it moved on, or was sent again, as a delivery attempt.
    mutating func take(_ job: Job, _ outcome: AnswerPolicy.Outcome, _ step: AnswerPolicy.Step) {
        let destination = job.envelope.destination
        let provider = job.adapter.provider
        func answer(_ response: ClassifiedResponse) -> DestinationAnswer {
            DestinationAnswer(destination: destination, provider: provider, response: response, resends: job.resends)
        }
        switch (outcome, step) {
        case (.lost(let response), _):
            sent.lostAnswers.append(answer(response))
        case (.notSent, .failOver):
            break  // never sent: nothing to keep
        case (.answered(let response), .failOver), (.notMade(let response), .failOver):
            sent.failedOver.append(answer(response))
        case (.answered(let response), _), (.notMade(let response), _):
            sent.answers.append(answer(response))
        case (.notSent(let until, let reason), _):
            sent.unsent.append(UnsentDestination(destination: destination, until: until, reason: reason))
        }
    }
}

/// A batch's rows in the air: each row's answers so far, and the rows held for the configuration
/// verdict. Owned by one batch's delivery; the answer policy decides, this keeps.
struct Flights {
    private(set) var rows: [InFlight] = []
    /// Rows with a refusal that may be a configuration slip: recorded once the batch's sends are done.
    private(set) var held = Set<Int>()

    /// The index the next row added takes (its jobs' `flight`).
    var nextIndex: Int { rows.count }

    mutating func add(_ flight: InFlight) { rows.append(flight) }

    /// What the answer policy is told of a job's row.
    func facts(_ job: Job, order: [Provider]) -> AnswerPolicy.Facts {
        AnswerPolicy.Facts(provider: job.adapter.provider, order: order, pinned: job.pinned,
                           check: job.adapter.configurationCheck, awaiting: rows[job.flight].awaiting,
                           held: held.contains(job.flight))
    }

    /// Keeps a job's result as decided; returns its row when the row is to be recorded now.
    mutating func take(_ job: Job, _ outcome: AnswerPolicy.Outcome, _ step: AnswerPolicy.Step) -> InFlight? {
        rows[job.flight].take(job, outcome, step)
        switch step {
        case .hold: held.insert(job.flight)
        case .record: return rows[job.flight]
        case .failOver, .resend, .wait: break
        }
        return nil
    }

    /// The held rows in batch order, for when the verdict is in.
    var heldRows: [InFlight] { held.sorted().map { rows[$0] } }
}

/// A batch after planning: the rows with sends, and the sends.
struct BatchWork {
    var flights = Flights()
    var jobs: [Job] = []
}
