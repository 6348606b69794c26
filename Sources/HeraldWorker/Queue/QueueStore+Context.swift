import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {
    /// Loads the context of a claimed batch (`DeliveryContext`, what its decisions read) in a fixed
    /// number of queries, one per table for the whole batch, never one per row. `now` bounds the
    /// history window of the rate limits. `anyQuietOnceRead` false (no type is quiet once read, as the
    /// pass read the types): no copy can have been read elsewhere, and that query is not made.
    ///
    ///     let context = try store.loadContext(for: claimed.map(\.item), now: now)
    ///     context.profiles[item.recipientUserId]   // their preferences, if they have a profile
    public func loadContext(for items: [QueueItem], now: Date, anyQuietOnceRead: Bool = true) throws -> DeliveryContext {
        var ctx = DeliveryContext()
        guard !items.isEmpty else { return ctx }
        let recipients = Array(Set(items.map(\.recipientUserId)))
        let alertIds = Array(Set(items.compactMap(\.alertStateId)))
        let retried = items.filter { $0.attempts > 1 }.map(\.id)

        ctx.profiles = try profiles(of: recipients)
        if !alertIds.isEmpty { ctx.alerts = try alertStates(alertIds) }
        // Device tokens and the badge's unread count serve push rows only: read for their recipients.
        let pushed = Array(Set(items.filter { $0.channelRaw == Channel.push.rawValue }.map(\.recipientUserId)))
        if !pushed.isEmpty {
            try loadDeviceTokens(of: pushed, into: &ctx)
            ctx.unreadInApp = try unreadInApp(of: pushed)
        }
        ctx.history = try history(of: recipients, now: now)
        if !retried.isEmpty { ctx.delivered = try deliveredDestinations(of: retried) }
        let members = Array(Set(items.filter { $0.kind == .patternAlert && $0.isAboutAnotherMember }.compactMap(\.memberUserId)))
        if !members.isEmpty { ctx.familyAdmins = try familyAdmins(of: members) }
        if anyQuietOnceRead { ctx.readElsewhere = try readElsewhere(items) }
        return ctx
    }

    /// Each member's family admins (other than the member), from `family_members` as it is now.
    private func familyAdmins(of members: [UUID]) throws -> [UUID: Set<UUID>] {
        var admins: [UUID: Set<UUID>] = [:]
        for row in try db.query("""
            select distinct fm.user_id as member, a.user_id as admin
              from family_members fm
              join family_members a on a.family_id = fm.family_id and a.role = 'admin' and a.user_id <> fm.user_id
             where fm.user_id = any(\(members)::uuid[])
            """) {
            if let member = row["member"].uuid, let admin = row["admin"].uuid { admins[member, default: []].insert(admin) }
        }
        return admins
    }

    /// The recipients' preferences, from `user_profiles`; push as `PushConsent` reads it (a
    /// `notify_push` never set is on while the person has an active device token). Text is read within
    /// its CHECK's limit (sql/047_bounded_app_text.sql) whatever a row holds, so a value written before
    /// the limit cannot fill the pass's memory: a locale's or a zone's first characters (their language,
    /// or a zone no shorter name is), an address only whole.
    private func profiles(of recipients: [UUID]) throws -> [UUID: Preferences] {
        var profiles: [UUID: Preferences] = [:]
        profiles.reserveCapacity(recipients.count)
        // Read by position in preferences(_:): keep the two in the same order.
        for row in try db.query("""
            select user_id, left(timezone, 64) as timezone, left(locale, 35) as locale,
                   case when char_length(email) <= 254 then email end as email,
                   case when char_length(phone_e164) <= 16 then phone_e164 end as phone_e164,
                   notify_in_app, notify_push, \(PushConsent.isOn("p")) as push_on, notify_email,
                   notify_sms, notify_whatsapp, champion_notify_email, champion_notify_sms,
                   quiet_hours_start::text as qs, quiet_hours_end::text as qe,
                   quiet_hours_notification_level as ql, quiet_hours_action as qa,
                   quiet_hours_allow_critical, daily_reminder_enabled, dose_reminder_enabled,
                   washout_notifications_enabled, test_start_reminder_enabled,
                   forecast_notifications_enabled, prompt_notifications_enabled
              from user_profiles p where user_id = any(\(recipients)::uuid[])
            """) {
            if let prefs = Self.preferences(row) { profiles[prefs.userId] = prefs }
        }
        return profiles
    }

    /// One `user_profiles` row as preferences, read by position in `profiles(of:)`'s column order (a
    /// batch's rows are read without looking up a column's name in each cell); a column left null
    /// reads as its default. Nil without a user id.
    private static func preferences(_ row: PGRow) -> Preferences? {
        guard let id = row.uuid(at: 0) else { return nil }
        // The schema's checks keep these to known values; an unknown one reads as the default.
        let start = row.string(at: 13).flatMap(LocalTime.init)
        let end = row.string(at: 14).flatMap(LocalTime.init)
        let level = row.string(at: 15).flatMap(QuietLevel.init(rawValue:))
        let action = row.string(at: 16).flatMap(QuietAction.init(rawValue:))
        var prefs = Preferences(
            userId: id, timezone: row.string(at: 1) ?? "UTC", locale: row.string(at: 2) ?? "en",
            email: row.string(at: 3), phoneE164: row.string(at: 4),
            notifyInApp: row.bool(at: 5) ?? true, notifyPush: row.bool(at: 7) ?? false,
            notifyEmail: row.bool(at: 8) ?? false, notifySMS: row.bool(at: 9) ?? false,
            notifyWhatsApp: row.bool(at: 10) ?? false,
            championNotifyEmail: row.bool(at: 11) ?? true,
            championNotifySMS: row.bool(at: 12) ?? false,
            quietHoursStart: start, quietHoursEnd: end,
            quietLevel: level ?? .none, quietAction: action ?? .skip)
        prefs.pushNeverSet = row.isNull(at: 6)
        prefs.quietAllowCritical = row.bool(at: 17) ?? true
        prefs.dailyReminderEnabled = row.bool(at: 18) ?? true
        prefs.doseReminderEnabled = row.bool(at: 19) ?? true
        prefs.washoutNotificationsEnabled = row.bool(at: 20) ?? true
        prefs.testStartReminderEnabled = row.bool(at: 21) ?? true
        prefs.forecastNotificationsEnabled = row.bool(at: 22) ?? true
        prefs.promptNotificationsEnabled = row.bool(at: 23) ?? true
        return prefs
    }

    /// The alert episodes the batch's rows link, from `pattern_alert_state`.
    private func alertStates(_ ids: [UUID]) throws -> [UUID: AlertState] {
        var alerts: [UUID: AlertState] = [:]
        for row in try db.query("""
            select id, episode_status, current_level, last_notified_level, severity,
                   snooze_until::text as snooze_until, dismissed_at, resolved_at
              from pattern_alert_state where id = any(\(ids)::uuid[])
            """) {
            guard let id = row["id"].uuid else { continue }
            alerts[id] = AlertState(
                id: id, episodeStatus: row["episode_status"].string ?? "active",
                currentLevel: row["current_level"].int ?? 3,
                lastNotifiedLevel: row["last_notified_level"].int ?? 0,
                severity: row["severity"].string.flatMap(Severity.init(rawValue:)) ?? .watch,
                snoozeUntil: row["snooze_until"].string.flatMap(LocalDate.init),
                dismissedAt: row["dismissed_at"].date, resolvedAt: row["resolved_at"].date)
        }
        return alerts
    }

    /// The recipients' active push tokens (`deviceTokens`), and why the others cannot be used
    /// (`unusableTokens`). A row goes to at most `herald_device_limits.max_active_per_person` of a
    /// person's devices, the most recently used, however many active rows were written. A token longer
    /// than `longestTokenRead` is not read (no push could carry it), and a token's locale is read to 35
    /// characters, as its CHECK holds it.
    private func loadDeviceTokens(of recipients: [UUID], into ctx: inout DeliveryContext) throws {
        for row in try db.query("""
            select id, user_id, case when char_length(device_token) <= \(Self.longestTokenRead) then device_token end as device_token,
                   provider, left(locale, 35) as locale
              from (select t.*, row_number() over (partition by t.user_id
                                                   order by t.last_used_at desc nulls last, t.created_at desc, t.id) as n
                      from device_tokens t
                     where t.user_id = any(\(recipients)::uuid[]) and t.is_active) t
             where n <= coalesce((select max_active_per_person from herald_device_limits), 10)
             order by user_id, created_at, id
            """) {
            guard let user = row["user_id"].uuid else { continue }
            guard let token = row["device_token"].string else {
                ctx.unusableTokens[user, default: []].append(
                    "token longer than \(Self.longestTokenRead) characters (device_tokens.id \(row["id"].uuid?.lowercased ?? "?"))")
                continue
            }
            // An app's row: an unknown or non-push provider is not taken for APNs; the token is
            // left out, and named if the row ends with no destination.
            switch Provider.ofDeviceToken(row["provider"].string) {
            case .success(let provider):
                ctx.deviceTokens[user, default: []].append(Destination(
                    provider: provider, address: token, deviceTokenId: row["id"].uuid, locale: row["locale"].string))
            case .failure(let why):
                ctx.unusableTokens[user, default: []].append(
                    "\(why) (device_tokens.id \(row["id"].uuid?.lowercased ?? "?"))")
            }
        }
    }

    /// The longest device token a pass reads: twice what a push of 4,096 bytes could carry.
    static let longestTokenRead = 8192

    /// The recipients' unread notifications, counted per recipient as their list counts them (for a
    /// push's badge): delivered on any channel and not yet read.
    private func unreadInApp(of recipients: [UUID]) throws -> [UUID: Int] {
        var unread: [UUID: Int] = [:]
        for row in try db.query("""
            select user_id, unread as n from herald_unread_entries(\(recipients)::uuid[])
            """) {
            if let user = row["user_id"].uuid { unread[user] = row["n"].int ?? 0 }
        }
        return unread
    }

    /// The recipients' recent sends, for the rate limits (`recentSends`).
    private func history(of recipients: [UUID], now: Date) throws -> [SentRecord] {
        var history: [SentRecord] = []
        for row in try db.query(QueueStore.recentSends(in: queue, of: recipients, now: now)) {
            guard let user = row["recipient_user_id"].uuid, let at = row["sent_at"].date,
                  let channel = row["channel"].string.flatMap(Channel.init(rawValue:)) else { continue }
            let type = QueueItem.rateType(kind: row["kind"].string ?? "", reminderType: row["reminder_type"].string)
            history.append(SentRecord(recipient: user, channel: channel, kind: type, group: row["grp"].string, at: at))
        }
        return history
    }

    /// The destinations an earlier attempt of each retried row already delivered: the retry skips them.
    private func deliveredDestinations(of retried: [UUID]) throws -> [UUID: Set<String>] {
        var delivered: [UUID: Set<String>] = [:]
        for row in try db.query("""
            select queue_id, destination from notification_deliveries
             where queue_id = any(\(retried)::uuid[]) and outcome = 'delivered'
            """) {
            if let id = row["queue_id"].uuid, let dest = row["destination"].string {
                delivered[id, default: []].insert(dest)
            }
        }
        return delivered
    }

    /// The recent sends of `recipients` the rate limits count: 48 hours covers the recipient's whole
    /// local day in any time zone, and the shorter windows. The status is asked in a form no index
    /// takes, so `notification_queue_recipient_sent` (recipient, sent_at) serves the read whatever the
    /// statistics say (`sql/025_recent_sends_index.sql`): with statistics from before a burst,
    /// `status = 'sent'` made the planner walk every sent row at each batch.
    static func recentSends(in queue: SQL, of recipients: [UUID], now: Date) -> SQL {
        """
        select recipient_user_id, channel, kind, payload->>'reminder_type' as reminder_type,
               coalesce(notification_group, id::text) as grp, sent_at from \(queue)
         where (status = 'sent') is true and recipient_user_id = any(\(recipients)::uuid[])
           and sent_at > \(now.addingTimeInterval(-48 * 3600)) and sent_at <= \(now.addingTimeInterval(RateLimiter.clockSkew))
        """
    }
}
