import HeraldCore
import HeraldPostgres

extension QueueStore {
    /// Every notification type and its defaults (`notification_types`), read once a pass. A value the
    /// table's checks would refuse cannot be there; one that is anyway reads as the column's default.
    public func loadTypes() throws -> NotificationTypes {
        let rows = try db.query("""
            select type, priority, android_channel_id, ios_category, critical, daily_cap, min_spacing_seconds,
                   per_minute_cap, rate_exempt, quiet_once_read
              from notification_types
            """)
        return NotificationTypes(rows.compactMap { row -> NotificationType? in
            guard let name = row["type"].string else { return nil }
            let limits = RateLimits(
                perDay: row["daily_cap"].int.flatMap { $0 > 0 ? $0 : nil },
                sameTypeSpacing: Double(max(0, row["min_spacing_seconds"].int ?? 0)),
                perMinute: row["per_minute_cap"].int.flatMap { $0 > 0 ? $0 : nil },
                exempt: row["rate_exempt"].bool ?? false)
            var type = NotificationType(
                name, priority: row["priority"].string.flatMap(Priority.init(rawValue:)) ?? .normal,
                androidChannelId: row["android_channel_id"].string, iosCategory: row["ios_category"].string,
                critical: row["critical"].bool ?? false, limits: limits)
            type.quietOnceRead = row["quiet_once_read"].bool ?? false
            return type
        })
    }
}
