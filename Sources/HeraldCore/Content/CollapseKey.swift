/// The key under which a device keeps one copy of a notification: a push sent again — its answer lost
/// with its connection, so herald cannot know whether the first arrived — replaces the first on the
/// device instead of showing twice. APNs `apns-collapse-id` (at most 64 bytes), FCM's `collapse_key`
/// (Android) and `apns-collapse-id` (its iOS devices), Expo's `collapseId`.
///
/// A pattern alert's key is its episode's ("alert-<alert_state_id>"), so a later alert of the same episode
/// also replaces the earlier one; any other notification's is its own queue id.
///
///     CollapseKey.of(item)   // "alert-7c1d…" or "0190f3a2-…"
public enum CollapseKey {
    /// APNs' limit for `apns-collapse-id`; a longer one is refused (400 BadCollapseId).
    public static let maxBytes = 64

    public static func of(_ item: QueueItem) -> String {
        if item.kind == .patternAlert, let alert = item.alertStateId { return "alert-" + alert.lowercased }
        return item.id.lowercased
    }
}
