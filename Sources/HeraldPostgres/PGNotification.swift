/// A notification a `LISTEN`ing session received (`NOTIFY` or `pg_notify`).
public struct PGNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
    /// The server process that sent it.
    public var senderPid: Int32
}
