/// HERALD_FOLLOW_LISTEN: how a follower (`herald run --follow`) learns that rows came due. `auto`
/// (the default) checks that a notification reaches its LISTEN connection and polls when none does
/// (a transaction pooler such as PgBouncer in transaction mode); `on` listens without checking;
/// `off` always polls, every HERALD_FOLLOW_POLL_MS.
public enum FollowListen: String, Sendable, CaseIterable {
    case auto, on, off
}

/// How a follower waits for work, as its log line and its summary's `follow.mode` say.
public enum FollowMode: String, Sendable {
    /// LISTEN on a connection of its own; woken by the queue's notifications and by the next due time.
    case listen
    /// A look at the queue every HERALD_FOLLOW_POLL_MS.
    case poll
}
