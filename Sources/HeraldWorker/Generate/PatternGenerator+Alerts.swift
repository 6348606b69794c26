import Foundation
import HeraldCore
import HeraldPostgres

/// The alerts of the patterns phase: when an episode's level rises, each admin of the member's
/// family is told on every channel they enabled.
extension PatternGenerator {
    /// An episode whose new level is to be told, with what the app gets (`alertPayload`).
    struct AlertNotice {
        var episode: UUID
        var member: UUID
        var level: Int
        var payload: [String: JSONValue]
    }

    /// The writes that carry a level to tell, with their episode's id (`ids`, by `Write.key`).
    static func notices(_ writes: [EpisodeStore.Write], ids: [String: UUID]) -> [AlertNotice] {
        writes.compactMap { w in
            guard let level = w.notifiedLevel, let id = ids[w.key] else { return nil }
            return AlertNotice(episode: id, member: w.user, level: level, payload: alertPayload(w))
        }
    }

    /// What the app gets with an alert: metric, pattern, level, severity, and day L's baseline,
    /// recent value and deviation (rounded to hundredths). The lock screen shows none of it by default.
    static func alertPayload(_ w: EpisodeStore.Write) -> [String: JSONValue] {
        let level = w.notifiedLevel ?? w.evaluation.level
        var payload: [String: JSONValue] = [
            "metric_type": .string(w.threshold.metric),
            "pattern_type": .string(w.threshold.pattern.rawValue),
            "level": .number(Double(level)),
            "severity": .string(Severity(level: level).rawValue),
            "active_since": .string(w.evaluation.activeSince.description),
        ]
        for (key, v) in [("baseline_value", w.evaluation.baseline), ("recent_value", w.evaluation.recent),
                         ("deviation_percent", w.evaluation.deviationPercent)] {
            payload[key] = .number((v * 100).rounded() / 100)
        }
        return payload
    }

    /// Enqueues one row per family admin (other than the member) per channel the admin has enabled;
    /// returns how many were new.
    func notifyAdmins(_ notices: [AlertNotice], db: PGConnection) throws -> Int {
        let admins = try admins(of: Array(Set(notices.map(\.member))), db: db)
        var rows: [NewNotification] = []
        for e in notices {
            for (admin, channels) in admins[e.member] ?? [] {
                for channel in channels {
                    var payload = e.payload
                    payload["member_user_id"] = .string(e.member.lowercased)
                    rows.append(NewNotification(
                        recipient: admin, member: e.member, alertStateId: e.episode, channel: channel.rawValue,
                        kind: Kind.patternAlert.rawValue, severity: Severity(level: e.level),
                        priority: Severity(level: e.level) == .critical ? .high : .normal,
                        payload: .object(payload), scheduledAt: now,
                        dedupeKey: "alert:\(e.episode.lowercased):\(e.level):\(admin.lowercased):\(channel.rawValue)",
                        reason: "pattern_level_\(e.level)",
                        // One notification per admin and level, whatever the number of channels.
                        group: "alert:\(e.episode.lowercased):\(e.level):\(admin.lowercased)"))
                }
            }
        }
        return try Enqueuer.insert(rows, db: db, passId: passId).count
    }

    /// Each member's family admins (other than the member), with the channels each has enabled for
    /// alerts about a family member (push as `PushConsent` reads it).
    private func admins(of members: [UUID], db: PGConnection) throws -> [UUID: [(admin: UUID, channels: [Channel])]] {
        var admins: [UUID: [(admin: UUID, channels: [Channel])]] = [:]
        for row in try db.query("""
            select distinct fm.user_id as member, a.user_id as admin,
                   \(PushConsent.isOn("p")) as notify_push, p.notify_in_app,
                   p.champion_notify_email, p.champion_notify_sms, p.notify_whatsapp
              from family_members fm
              join family_members a on a.family_id = fm.family_id and a.role = 'admin' and a.user_id <> fm.user_id
              join user_profiles p on p.user_id = a.user_id
             where fm.user_id = any(\(members)::uuid[])
            """) {
            guard let member = row["member"].uuid, let admin = row["admin"].uuid else { continue }
            var channels: [Channel] = []
            if row["notify_push"].bool == true { channels.append(.push) }
            if row["notify_in_app"].bool == true { channels.append(.inApp) }
            if row["champion_notify_email"].bool == true { channels.append(.email) }
            if row["champion_notify_sms"].bool == true { channels.append(.sms) }
            if row["notify_whatsapp"].bool == true { channels.append(.whatsapp) }
            admins[member, default: []].append((admin, channels))
        }
        return admins
    }
}
