import CLibPQ

/// Notifications (`LISTEN`/`NOTIFY`): the channels of the notifications this connection has received.
/// herald's passes do not listen; `herald doctor` asks whether a deployment could.
///
///     try a.execute("listen herald_doctor")
///     try b.execute("select pg_notify('herald_doctor', '')")
///     try a.receivedNotifications()   // ["herald_doctor"], once the server has sent it
extension PGConnection {
    /// Reads what the server has sent so far without waiting, and returns the channel of every
    /// notification received since the last call (libpq keeps those a statement's result carried too).
    public func receivedNotifications() throws -> [String] {
        let connection = try liveHandle()
        guard PQconsumeInput(connection) == 1 else {
            throw PGError(isConnectionFailure: true,
                          message: scrub(Self.trimmed(PQerrorMessage(connection)) ?? "the connection was lost"))
        }
        var channels: [String] = []
        while let notification = PQnotifies(connection) {
            channels.append(String(cString: notification.pointee.relname))
            PQfreemem(notification)
        }
        return channels
    }
}
