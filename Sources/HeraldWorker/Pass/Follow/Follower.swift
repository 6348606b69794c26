import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// `herald run --follow`: once the phases have run, delivery goes on until `--deadline`, each round
/// started by the queue rather than by the next cron pass. Every round is the delivery phase's own
/// drain (`DeliveryPass.drainDue`: the same claim, leases, fenced records, pauses and rate limits as
/// any pass), so followers and batch passes share one queue with every guarantee. Before it, the
/// time-driven generators its `--only` selects run when they come due (`FollowGenerators`): what they
/// enqueue goes out in the same round.
///
/// Between rounds it waits, in one of two modes (`FollowMode`):
/// - `listen`: on its LISTEN connection (`QueueListener`) until a notification from the queue's
///   triggers or from an app's change to what a generator reads, the next due time
///   (`QueueStore.nextDue`, one indexed statement), a generator's next instant, or `resyncSeconds`;
///   while due rows are held by another pass, at most HERALD_FOLLOW_POLL_MS.
/// - `poll`: HERALD_FOLLOW_POLL_MS or less, to a generator's next instant; then a look at the
///   generators' changes and at the queue (one claim).
///
/// A stop signal ends any wait at once (`StopSignal.wakeDescriptor`) and the follower stops as a pass
/// does: in-flight sends finish and are recorded, the rest released, exit 3.
///
/// A connection that ends (a failover, a restart) is opened again through the same URL
/// (`Reconnector`), the LISTEN too, and the follower goes on until its deadline: it exits 2 only when
/// no database answers within HERALD_RECONNECT_SECONDS.
final class Follower {
    /// A listening follower's longest wait without a look at the queue: a safety net for a change no
    /// trigger reports (a row edited by hand in a way sql/034 does not watch).
    static let resyncSeconds = 60.0

    let pass: PassContext
    let delivery: DeliveryPass
    private var listener: QueueListener?
    private var report: FollowReport
    /// The time-driven generators it runs; nil with none selected.
    private let generators: FollowGenerators?
    private var generatorsStarted = false

    init(pass: PassContext, summary: Summary) {
        self.pass = pass
        delivery = DeliveryPass(pass: pass, summary: summary)
        generators = FollowGenerators(pass: pass)
        let (listener, why) = QueueListener.open(pass.options.followListen, url: pass.config.databaseURL, passId: pass.passId,
                                                 probeThrough: pass.db, generators: generators != nil)
        self.listener = listener
        report = FollowReport(mode: listener == nil ? .poll : .listen)
        pass.logger.info("following the queue", metadata: [
            "mode": .string(report.mode.rawValue), "why": .string(why),
            "poll_ms": "\(Int(pass.options.followPoll * 1000))", "deadline_s": "\(pass.options.deadline)",
            "generators": .string(generators?.schedule.generators.map(\.rawValue).joined(separator: ",") ?? "")])
    }

    /// Delivers round after round until the deadline or a stop; the summary gains what was delivered
    /// and the `follow` report.
    func run(_ summary: inout Summary) throws {
        defer {
            listener?.close()
            report.generatorRuns = generators?.runs ?? 0
            summary = delivery.summary
            summary.follow = report
        }
        while !StopSignal.requested && pass.clock.elapsed < pass.options.deadline {
            do {
                guard try round() else { break }
            } catch let error as PGError where error.isConnectionFailure {
                try pass.reconnector.restore(pass.db, "pass", after: error)  // then a round at once
            }
        }
        if StopSignal.requested { delivery.summary.interrupted = true }
        try delivery.onPassConnection { try delivery.countHeldBack() }  // what the follower leaves behind, as a pass reports it
        pass.logger.info("stopped following the queue", metadata: [
            "mode": .string(report.mode.rawValue), "wakes": "\(report.wakes)", "notified": "\(report.notified)",
            "interrupted": "\(delivery.summary.interrupted)"])
    }

    /// One round: the notifications come so far, the generators due, a drain, the wait for the next.
    /// False: the drain was interrupted.
    private func round() throws -> Bool {
        if let listener { note(try reading { try listener.take() }) }
        try generate()
        try delivery.loadTypes()  // each round decides with the types as they are now
        try delivery.drainDue()
        if delivery.summary.interrupted { return false }
        try generators?.refresh()  // what the generators made has gone: now their next instants
        let seconds = try nextWait()
        guard seconds > 0 else { return true }
        note(try wait(seconds))
        report.wakes += 1
        return true
    }

    /// Counts the queue's notifications, and notes the generators an app's change concerns.
    private func note(_ notifications: [PGNotification]) {
        report.notified += notifications.filter { $0.channel == QueueNotification.channel }.count
        generators?.noted(notifications)
    }

    /// The generators' part of a round: each noted as changed at the first, a polling follower's look at
    /// their changes at the next ones, then each generator due run.
    private func generate() throws {
        guard let generators, !StopSignal.requested else { return }
        if !generatorsStarted {
            try generators.start()
            generatorsStarted = true
        } else if listener == nil {
            try generators.look()
        }
        try generators.runDue(&delivery.summary)
    }

    /// How long to wait before the next round: to the deadline at most, and to a generator's next
    /// instant; when polling, the interval; when listening, until the next row comes due (or the
    /// resync, or the interval while due rows are held by another pass). Zero: look again now.
    private func nextWait() throws -> Double {
        let remaining = pass.options.deadline - pass.clock.elapsed
        guard remaining > 0 else { return 0 }
        let now = pass.clock.now()
        var seconds = remaining
        if let wake = generators?.nextWake { seconds = min(seconds, max(0, wake.timeIntervalSince(now))) }
        guard listener != nil else { return min(pass.options.followPoll, seconds) }
        seconds = min(seconds, Self.resyncSeconds)
        if delivery.leftDueRows { seconds = min(seconds, pass.options.followPoll) }
        if let next = try pass.store.nextDue(after: now, channels: delivery.routableChannels) {
            seconds = min(seconds, max(0, next.timeIntervalSince(now)))
        }
        return seconds
    }

    /// Waits `seconds` as the mode says, or less on a stop; returns the notifications received.
    private func wait(_ seconds: Double) throws -> [PGNotification] {
        pass.logger.debug("waiting for the queue", metadata: [
            "mode": .string(report.mode.rawValue), "seconds": "\(seconds)"])
        guard let listener else {
            StopSignal.sleep(seconds)
            return []
        }
        return try reading { try listener.wait(seconds: seconds) }
    }

    /// Runs a read of the LISTEN connection. A lost connection is opened again and listens again (the
    /// next round looks at the queue at once, and runs every generator, for what was notified
    /// meanwhile); with HERALD_RECONNECT_SECONDS=0 it sets the follower polling until the deadline
    /// instead.
    private func reading(_ body: () throws -> [PGNotification]) throws -> [PGNotification] {
        do {
            return try body()
        } catch let error as PGError where error.isConnectionFailure {
            if let listener, pass.reconnector.seconds > 0 {
                try listener.listenAgain(pass.reconnector, after: error)
                generators?.changedAll()
                return []
            }
            pass.logger.warning("the LISTEN connection was lost; polling until the deadline", metadata: [
                "error": .string("\(error)"), "poll_ms": "\(Int(pass.options.followPoll * 1000))"])
            listener?.close()
            listener = nil
            report.mode = .poll
            return []
        }
    }
}
