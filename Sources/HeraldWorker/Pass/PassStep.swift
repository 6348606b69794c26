import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The phases of a pass (`--only`, `phase_errors`), in the order a pass runs them. A phase is what an
/// operator selects and reads about; the code that runs one is its `PassStep`, and the generators'
/// workers are `…Generator`s (Generate/).
public enum Phase: String, CaseIterable, Sendable {
    /// Generators fill the queue from the data the apps write: pattern alerts, daily forecasts,
    /// prompts, reminders. `deliver` claims and sends. `receipts` checks push tickets; `events` and
    /// `statuses` learn what became of SMS, WhatsApp and email after the provider accepted them.
    case patterns, forecasts, prompts, reminders, deliver, receipts, events, statuses
}

/// What every step is given: the pass's connection and queue, its configuration, clock, log and
/// transport.
struct PassContext {
    let db: PGConnection
    let store: QueueStore
    let config: PassConfig
    let settings: Settings
    let clock: PassClock
    let logger: Logger
    let transport: HTTPTransport
    let outbox: Outbox
    /// Opens the pass's connections again when they end (HERALD_RECONNECT_SECONDS).
    let reconnector: Reconnector

    var options: PassOptions { config.options }
    var passId: String { store.passId }
}

/// One step of a pass: the code that runs one phase. The runner runs the step of each selected phase in
/// `Runner.steps`' order: an isolated one (every step but delivery's) in a savepoint of its own, so
/// that its failure is logged, counted in `phase_errors` and the pass goes on (exit 4); delivery's
/// failure is the pass's (exit 2).
///
/// Adding one: its case in `Phase`, a type conforming here, and its place in `Runner.steps`.
protocol PassStep: Sendable {
    var phase: Phase { get }
    /// False when a failure of this phase must end the pass.
    var isolated: Bool { get }
    /// Whether the phase has anything to do in this pass (a dry run writes nothing after delivery; a
    /// stop signal ends the generators; the truth phases need providers that have truth to tell).
    func runs(in pass: PassContext, summary: Summary) -> Bool
    /// Runs the phase and counts what it did in `summary`.
    func run(_ pass: PassContext, summary: inout Summary) throws
}

extension PassStep {
    var isolated: Bool { true }
}

/// The steps that learn after delivery (the truth steps) run only in a real pass that was not
/// interrupted.
protocol AfterDeliveryStep: PassStep {}

extension AfterDeliveryStep {
    func runs(in pass: PassContext, summary: Summary) -> Bool {
        !pass.options.dryRun && !summary.interrupted
    }
}

/// The `deliver` phase's step: claim, decide, send, record (see `DeliveryPass`). A dry run prints what
/// each due row would become.
struct DeliverStep: PassStep {
    var phase: Phase { .deliver }
    var isolated: Bool { false }

    func runs(in pass: PassContext, summary: Summary) -> Bool { true }

    func run(_ pass: PassContext, summary: inout Summary) throws {
        let delivery = DeliveryPass(pass: pass, summary: summary)
        defer { summary = delivery.summary }
        try delivery.run()
    }
}

/// `receipts`: the push tickets of providers that check acceptances later (Expo).
struct ReceiptsStep: AfterDeliveryStep {
    var phase: Phase { .receipts }

    func run(_ pass: PassContext, summary: inout Summary) throws {
        for checker in pass.config.routes[.push]?.receiptCheckers ?? [] where !summary.interrupted {
            let r = try ReceiptsTruth(db: pass.db, now: pass.clock.now(), logger: pass.logger,
                                      transport: pass.transport, checker: checker).run()
            summary.generated[.receiptsChecked] = (summary.generated[.receiptsChecked] ?? 0) + r.checked
            if r.deactivated > 0 {
                summary.generated[.tokensDeactivated] = (summary.generated[.tokensDeactivated] ?? 0) + r.deactivated
            }
        }
    }
}
