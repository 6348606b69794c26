/// The channel sql/034_queue_notify.sql's triggers notify, without a payload, once per transaction
/// that makes queue rows wait (an insert, a retry, a reschedule, a release…) or lifts a pause: what a
/// follower (`herald run --follow`) LISTENs on.
///
///     try listener.execute("LISTEN \(identifier: QueueNotification.channel)")
public enum QueueNotification {
    public static let channel = "herald_queue"
}
