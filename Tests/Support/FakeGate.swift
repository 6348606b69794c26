import Foundation
import NIOCore

/// Answers that a fake server holds until the test lets them go: a receiver whose pace the test sets,
/// so that what a test checks follows from the rule under test, not from how fast the machine is.
/// A held answer blocks nothing: the server goes on receiving (and holding) other requests.
///
///     let gate = FakeGate()
///     let server = try FakeHTTPServer { _ in FakeResponse(status: 204, gate: gate) }
///     // … a pass sending to server.baseURL, on a thread of its own …
///     #expect(gate.waitUntilHeld(4))   // four requests arrived and wait for their answers
///     gate.release(1)                   // the oldest one is answered
///     gate.open()                       // every held answer goes, and every later one at once
///
/// Answers still held when their server shuts down are never sent.
public final class FakeGate: @unchecked Sendable {  // every var is read and written under `condition`
    private struct Held {
        let promise: EventLoopPromise<Void>
        let server: UUID
    }

    private let condition = NSCondition()
    private var waiting: [Held] = []
    private var permits = 0
    private var isOpen = false
    private var arrivals = 0
    private var abandoned: Set<UUID> = []

    public init() {}

    /// Requests that reached the gate so far, answered or not.
    public var arrived: Int { condition.withLock { arrivals } }

    /// Requests waiting at the gate now.
    public var held: Int { condition.withLock { waiting.count } }

    /// Lets the `count` oldest held answers go; when fewer are held, the next ones to arrive go at once
    /// until `count` have gone.
    public func release(_ count: Int = 1) {
        let going: [Held] = condition.withLock {
            permits += count
            let n = min(permits, waiting.count)
            permits -= n
            defer { waiting.removeFirst(n) }
            return Array(waiting.prefix(n))
        }
        for h in going { h.promise.succeed(()) }
    }

    /// Lets every held answer go, and every later one at once.
    public func open() {
        let going: [Held] = condition.withLock {
            isOpen = true
            defer { waiting = [] }
            return waiting
        }
        for h in going { h.promise.succeed(()) }
    }

    /// Waits until at least `count` requests are held at once; false if that has not happened within
    /// `timeout` seconds.
    public func waitUntilHeld(_ count: Int, timeout: TimeInterval = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while waiting.count < count {
                if !condition.wait(until: deadline) { return waiting.count >= count }
            }
            return true
        }
    }

    /// On `server`'s event loop: `promise` succeeds when this answer may go.
    func hold(_ promise: EventLoopPromise<Void>, server: UUID) {
        let goes: Bool? = condition.withLock {
            if abandoned.contains(server) { return nil }
            arrivals += 1
            defer { condition.broadcast() }
            if isOpen { return true }
            if permits > 0 {
                permits -= 1
                return true
            }
            waiting.append(Held(promise: promise, server: server))
            return false
        }
        switch goes {
        case true?: promise.succeed(())
        case nil: promise.fail(FakeGateAbandoned())
        case false?: break
        }
    }

    /// The answers `server` holds here are never sent: it is shutting down.
    func abandon(server: UUID) {
        let dropped: [Held] = condition.withLock {
            abandoned.insert(server)
            let mine = waiting.filter { $0.server == server }
            waiting.removeAll { $0.server == server }
            return mine
        }
        for h in dropped { h.promise.fail(FakeGateAbandoned()) }
    }
}

/// A held answer whose server shut down.
struct FakeGateAbandoned: Error {}
