import CLibPQ
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Notifications: `LISTEN` on a connection of its own, then wait on its socket (libpq's `PQsocket`,
/// `PQconsumeInput`, `PQnotifies`) with a timeout and a descriptor that wakes the wait early.
///
///     try listener.execute("LISTEN herald_queue")
///     let got = try listener.waitForNotifications(timeout: 2.5, wake: StopSignal.wakeDescriptor)
extension PGConnection {
    /// The notifications libpq has already read, after reading what the socket holds, without
    /// blocking. Throws a connection failure when the connection is lost.
    public func takeNotifications() throws -> [PGNotification] {
        let connection = try liveHandle()
        guard PQconsumeInput(connection) == 1 else { throw lostWhileListening(connection) }
        return Self.drainNotifies(connection)
    }

    /// Waits until a notification arrives, `wake` becomes readable, or `timeout` seconds pass, and
    /// returns the notifications received (none on a timeout or a wake). Throws a connection failure
    /// when the connection is lost meanwhile.
    public func waitForNotifications(timeout: Double, wake: Int32? = nil) throws -> [PGNotification] {
        let connection = try liveHandle()
        let pending = Self.drainNotifies(connection)  // read during an earlier statement
        if !pending.isEmpty { return pending }
        let socket = PQsocket(connection)
        guard socket >= 0 else { throw lostWhileListening(connection) }
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, min(timeout, 86_400)) * 1e9)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < end else { return [] }
            var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            if let wake { fds.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
            let milliseconds = Int32(min((end - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw PGError(message: "waiting for notifications: poll failed (errno \(errno))")
            }
            if fds.count > 1, fds[1].revents != 0 { return [] }
            guard fds[0].revents != 0 else { continue }
            let received = try takeNotifications()
            if !received.isEmpty { return received }
            // Something else came (a parameter status, a notice): wait on.
        }
    }

    private func lostWhileListening(_ connection: OpaquePointer) -> PGError {
        PGError(isConnectionFailure: true,
                message: scrub(Self.trimmed(PQerrorMessage(connection)) ?? "the listening connection was lost"))
    }

    private static func drainNotifies(_ connection: OpaquePointer) -> [PGNotification] {
        var out: [PGNotification] = []
        while let notify = PQnotifies(connection) {
            out.append(PGNotification(channel: String(cString: notify.pointee.relname),
                                      payload: notify.pointee.extra.map { String(cString: $0) } ?? "",
                                      senderPid: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return out
    }
}
