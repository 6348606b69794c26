import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Quiet everywhere once read (sql/058_quiet_once_read.sql): a notification is one entry across its
/// channels and devices. Reading or acting on it anywhere withdraws its copies not yet sent (skipped
/// `read_elsewhere`) and corrects the badge on the person's devices with one silent push each, however
/// many reads come at once. End to end: the app's RPCs as the signed-in person, real passes, the APNs
/// fake over HTTP/2 and TLS and the Twilio fake (harness: `ReadElsewhereScene`).
@Suite struct ReadElsewherePassTests {

    /// Reading the push withdraws the SMS copy waiting for later, in the read's own transaction, and
    /// each of the person's two devices gets one silent badge update (APNs background, priority 5,
    /// `aps` only `content-available`, the unread count in `data.badge`); the SMS never goes.
    @Test func readingThePushWithdrawsTheSMSCopyAndSilentlyCorrectsEachDevicesBadge() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            #expect(try s.f.row(n.push)["status"].string == "sent")
            #expect(s.apns.requests.count == 2, "the push, to both devices")

            let answer = try s.read([n.push])
            #expect(answer["updated_count"]?.intValue == 1)
            // Withdrawn by the read itself, before any pass.
            let sms = try s.f.row(n.sms)
            #expect(sms["status"].string == "skipped")
            #expect(sms["skip_reason"].string == "read_elsewhere")
            #expect(try s.events(n.sms).map(\.1) == ["read_elsewhere"])
            #expect(try s.badgeRows("pending") == 1)
            let due = try s.count("select extract(epoch from run_after - now())::int from notification_queue where kind = 'badge_sync'")
            #expect((3...6).contains(due), "due a few seconds after the read, got \(due) s")

            s.pass(now.addingTimeInterval(30))
            s.pass(now.addingTimeInterval(700))  // the SMS's own time: nothing left to send
            #expect(s.twilio.accepted.isEmpty)
            let silent = s.silentPushes
            #expect(silent.count == 2)
            #expect(Set(ProviderPass.paths(silent)) == Set(s.phones), "one silent update per device")
            for push in silent {
                #expect(push.header("apns-priority") == "5")
                let b = try ReadElsewhereScene.badge(of: push)
                #expect(b.badge == 0, "nothing unread is left")
                #expect(b.aps == ["content-available": 1])
                #expect(b.type == "badge_sync")
            }
            #expect(try s.badgeRows("sent") == 1)
            // The correction is not a notification of its own: the list holds the one entry, read.
            #expect(try s.count("select count(*) from inbox where user_id = \(s.person)") == 1)
            #expect(try s.count("select count(*) from inbox where user_id = \(s.person) and not is_read") == 0)
        }
    }

    /// A read written straight into `inbox` (a backend with the service role, past the app's RPCs)
    /// withdraws nothing at once, but the SMS copy is skipped `read_elsewhere` when it comes due, so it
    /// never goes either.
    @Test func aReadWrittenStraightIntoTheListStopsTheSMSCopyWhenItComesDue() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            try s.db.execute("update inbox set is_read = true, read_at = now() where user_id = \(s.person)")
            #expect(try s.f.row(n.sms)["status"].string == "pending")

            s.pass(now.addingTimeInterval(700))
            #expect(s.twilio.accepted.isEmpty)
            let sms = try s.f.row(n.sms)
            #expect(sms["status"].string == "skipped")
            #expect(sms["skip_reason"].string == "read_elsewhere")
        }
    }

    /// Quiet once read is the type's choice (`notification_types.quiet_once_read`, off by default): a
    /// type without it is read as before, its SMS copy still sent at its time (neither the read nor the
    /// pass withdraws it) and no badge correction asked for.
    @Test func aTypeNotQuietOnceReadStillSendsItsOtherCopiesAndNoBadgeUpdate() throws {
        try ReadElsewhereScene.with { s in
            try s.db.execute("update notification_types set quiet_once_read = false where type = 'system'")
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            _ = try s.read([n.push])
            #expect(try s.f.row(n.sms)["status"].string == "pending")
            #expect(try s.badgeRows("pending") == 0)

            s.pass(now.addingTimeInterval(700))
            #expect(try s.f.row(n.sms)["status"].string == "sent")
            #expect(s.twilio.accepted.count == 1)
            #expect(s.silentPushes.isEmpty)
        }
    }

    /// A type turned quiet once read quiets the notifications written after, not those written before:
    /// the read of an earlier one withdraws nothing, and the pass that claims its SMS copy sends it, as
    /// the read's trigger decided.
    @Test func turningATypeQuietOnceReadLeavesItsEarlierNotificationsAsTheyWere() throws {
        try ReadElsewhereScene.with { s in
            try s.db.execute("update notification_types set quiet_once_read = false where type = 'system'")
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            try s.db.execute("update notification_types set quiet_once_read = true where type = 'system'")
            _ = try s.read([n.push])
            #expect(try s.f.row(n.sms)["status"].string == "pending")
            #expect(try s.badgeRows("pending") == 0)

            s.pass(now.addingTimeInterval(700))
            #expect(try s.f.row(n.sms)["status"].string == "sent")
            #expect(s.twilio.accepted.count == 1)
        }
    }

    /// An action recorded on the notification (here `dismissed`, through `record_notification_action`)
    /// withdraws the other copies as a read does, and asks for the badge correction.
    @Test func anActionOnTheNotificationWithdrawsItsOtherCopies() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            try s.act(n.push, "dismissed")
            let sms = try s.f.row(n.sms)
            #expect(sms["status"].string == "skipped")
            #expect(sms["skip_reason"].string == "read_elsewhere")
            #expect(try s.badgeRows("pending") == 1)
        }
    }

    /// A badge correction shows nothing and plays nothing: quiet hours (here all day, at the level that
    /// lets nothing through) do not hold it, while they would hold a notification.
    @Test func quietHoursDoNotHoldTheSilentBadgeCorrection() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            try s.db.execute("""
                update user_profiles set quiet_hours_start = '00:00', quiet_hours_end = '23:59:59',
                       quiet_hours_notification_level = 'none', quiet_hours_action = 'skip'
                 where user_id = \(s.person)
                """)
            try s.read([n.push])
            s.pass(now.addingTimeInterval(30))
            #expect(try s.badgeRows("sent") == 1)
            #expect(s.silentPushes.count == 2)
        }
    }

    /// Twenty reads one after another, each its own request, send one silent update per device, due
    /// a few seconds after the first: the one waiting correction absorbs the rest. It carries the
    /// count as it is when sent (one of the twenty left unread).
    @Test func aBurstOfTwentyReadsSendsOneSilentUpdatePerDevice() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            var pushes: [UUID] = []
            for _ in 0..<21 { pushes.append(try s.notification(now: now, smsIn: 600).push) }
            s.pass(now)
            #expect(s.apns.requests.count == 42)

            for id in pushes.dropFirst() { try s.read([id]) }
            #expect(try s.badgeRows("pending") == 1)
            #expect(try s.count("select count(*) from notification_queue where channel = 'sms' and skip_reason = 'read_elsewhere'") == 20)

            s.pass(now.addingTimeInterval(30))
            let silent = s.silentPushes
            #expect(silent.count == 2)
            #expect(Set(ProviderPass.paths(silent)) == Set(s.phones))
            #expect(try silent.map { try ReadElsewhereScene.badge(of: $0).badge } == [1, 1])
            #expect(s.twilio.accepted.isEmpty)
        }
    }

    /// A copy a pass holds under its lease when the read commits is that pass's to decide: the read
    /// leaves it as it is (no second hand on it), and the pass that holds it — here the one that takes
    /// it over once the first pass's lease ran out — skips it `read_elsewhere` through its fenced record.
    @Test func aCopyClaimedByAPassInFlightIsDecidedByThatPassNotTheRead() throws {
        try ReadElsewhereScene.with { s in
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)

            let inFlight = QueueStore(db: try s.tdb.connect(), passId: "pass-in-flight")
            let claimed = try inFlight.claimRows(limit: 10, now: now.addingTimeInterval(700), channels: [.sms], leaseSeconds: 60)
            #expect(claimed.map(\.item.id) == [n.sms])
            try s.read([n.push])
            var sms = try s.f.row(n.sms)
            #expect(sms["status"].string == "pending", "held by the pass in flight")
            #expect(sms["locked_by"].string == "pass-in-flight")
            #expect(try s.events(n.sms).isEmpty)

            // The pass in flight dies; its lease runs out, and the next pass decides the copy.
            try s.db.execute("update notification_queue set locked_until = now() - interval '1 second' where id = \(n.sms)")
            s.pass(now.addingTimeInterval(700))
            sms = try s.f.row(n.sms)
            #expect(sms["status"].string == "skipped")
            #expect(sms["skip_reason"].string == "read_elsewhere")
            let decided = try s.db.query("""
                select count(*) filter (where pass_id is not null) as by_pass, count(*) as events
                  from notification_events where queue_id = \(n.sms) and reason = 'read_elsewhere'
                """).first!
            #expect(decided["events"].int == 1)
            #expect(decided["by_pass"].int == 1, "recorded by the pass, fenced on its lease")
            #expect(s.twilio.accepted.isEmpty)
        }
    }

    /// One notification with every kind of copy still to come: a push to two devices, an SMS copy due
    /// later, and a follow-up step its type's policy enqueued when the push went. Reading the push
    /// quiets all of it in the read's own transaction: the SMS copy is withdrawn, the step cancelled,
    /// and each device gets one silent badge update; no SMS ever goes.
    @Test func aReadQuietsTheOtherChannelsCopyAndThePendingFollowUpAndCorrectsBothBadges() throws {
        try ReadElsewhereScene.with { s in
            try s.db.execute("""
                update notification_types set follow_up = '{"loops": 1, "steps": [
                  {"after_seconds": 300, "channels": ["sms"], "to": "same", "until": "read"}]}'
                 where type = 'system'
                """)
            let now = ProviderPass.now()
            let n = try s.notification(now: now, smsIn: 600)
            s.pass(now)
            #expect(s.apns.requests.count == 2, "the push, to both devices")
            let steps = "select count(*) from notification_queue where follow_up_of is not null"
            #expect(try s.count("\(unescaped: steps) and status = 'pending'") == 1, "the push's send enqueued its step")

            try s.read([n.push])
            #expect(try s.f.row(n.sms)["skip_reason"].string == "read_elsewhere")
            #expect(try s.count("\(unescaped: steps) and status = 'pending'") == 0, "the read cancelled the step")
            #expect(try s.badgeRows("pending") == 1)

            for later in [30.0, 400, 700] { s.pass(now.addingTimeInterval(later)) }
            #expect(s.twilio.accepted.isEmpty, "neither the SMS copy nor the step went")
            #expect(try s.count("\(unescaped: steps) and status = 'sent'") == 0)
            #expect(Set(ProviderPass.paths(s.silentPushes)) == Set(s.phones), "one silent update per device")
            #expect(s.silentPushes.count == 2)
        }
    }
}
