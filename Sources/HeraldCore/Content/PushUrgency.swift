/// How urgently a push goes out, the one rule every push provider maps to its own words: critical
/// severity or high priority is immediate (APNs 10, FCM `HIGH`, Expo `high`); low priority is low (Expo
/// `normal`); the rest is normal (APNs 5, FCM `NORMAL`, Expo `default`).
public enum PushUrgency: Sendable, Equatable {
    case immediate, normal, low

    public static func of(severity: Severity?, priority: Priority) -> PushUrgency {
        if severity == .critical || priority == .high { return .immediate }
        return priority == .low ? .low : .normal
    }

    public static func of(_ item: QueueItem) -> PushUrgency { of(severity: item.severity, priority: item.priority) }
}
