import Foundation
import HeraldPostgres
import Logging

/// A follower's own connection, `LISTEN`ing on the channel the queue's triggers notify
/// (`QueueNotification.channel`) and, for a follower that runs generators, on the one an app's changes
/// to what they read notify (`GeneratorNotification.channel`). Claims never go through it: it only waits.
///
///     let (listener, why) = QueueListener.open(.auto, url: url, passId: passId, probeThrough: db)
///     let notified = try listener?.wait(seconds: 2.5)   // early on a notification or a stop
final class QueueListener {
    /// How long `auto` waits for its probe to come back: a notification between two connections to
    /// one server takes about a millisecond; through a transaction pooler it never comes.
    static let probeSeconds = 2.0

    let connection: PGConnection
    /// The channels it listens on.
    let channels: [String]

    private init(connection: PGConnection, channels: [String]) {
        self.connection = connection
        self.channels = channels
    }

    /// Opens the LISTEN connection as `setting` says, and why it did or did not (for the log). `auto`
    /// first listens on a channel of its own and notifies it from the pass's connection (`db`): a
    /// notification that does not come back within `probeSeconds` means something between herald and
    /// the server hands sessions around (PgBouncer in transaction mode runs each transaction on
    /// whichever server connection is free, and an idle client is tied to none, so notifications
    /// never reach it), and the follower polls instead. A connection or statement that fails does too.
    static func open(_ setting: FollowListen, url: String, passId: String, probeThrough db: PGConnection,
                     generators: Bool = false) -> (QueueListener?, why: String) {
        if setting == .off { return (nil, "HERALD_FOLLOW_LISTEN=off") }
        let connection: PGConnection
        do {
            connection = try PGConnection(url, applicationName: "herald \(passId) follow")
        } catch {
            return (nil, "no connection to LISTEN on: \(error)")
        }
        do {
            if setting == .auto, let why = try probe(connection, from: db) {
                connection.close()
                return (nil, why)
            }
            let channels = [QueueNotification.channel] + (generators ? [GeneratorNotification.channel] : [])
            for channel in channels { try connection.execute("LISTEN \(identifier: channel)") }
            return (QueueListener(connection: connection, channels: channels),
                    setting == .on ? "HERALD_FOLLOW_LISTEN=on" : "a notification from another connection arrived")
        } catch {
            connection.close()
            return (nil, "LISTEN failed: \(error)")
        }
    }

    /// Nil when a notification sent from `db` reaches `connection`; else why not. Listens on a channel
    /// no one else uses, so that a pooler's server connection left listening on it receives nothing more.
    private static func probe(_ connection: PGConnection, from db: PGConnection) throws -> String? {
        let probe = "herald_probe_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        try connection.execute("LISTEN \(identifier: probe)")
        try db.execute("select pg_notify(\(probe), '')")
        let arrived = try connection.waitForNotifications(timeout: probeSeconds, wake: StopSignal.wakeDescriptor)
            .contains { $0.channel == probe }
        try connection.execute("UNLISTEN \(identifier: probe)")
        return arrived ? nil : "a notification from another connection did not arrive within \(probeSeconds.formatted0) s "
            + "(a transaction pooler such as PgBouncer in transaction mode?)"
    }

    /// Notifications received so far, without waiting: read before each claim, so that one arriving
    /// after the claim wakes the next wait.
    func take() throws -> [PGNotification] {
        try connection.takeNotifications()
    }

    /// Waits up to `seconds` for notifications; returns those that came (none: the time passed, or a stop).
    func wait(seconds: Double) throws -> [PGNotification] {
        try connection.waitForNotifications(timeout: seconds, wake: StopSignal.wakeDescriptor)
    }

    /// Opens the connection again after `error` ended it, and listens again (`Reconnector`: throws
    /// once no database answered within its bound).
    func listenAgain(_ reconnector: Reconnector, after error: any Error) throws {
        try reconnector.restore(connection, "listen", after: error)
        try reconnector.retrying(connection, "listen") {
            for channel in channels { try connection.execute("LISTEN \(identifier: channel)") }
        }
    }

    func close() { connection.close() }
}
