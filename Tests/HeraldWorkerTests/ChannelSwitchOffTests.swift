import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The one rule that switches a recipient's channel off, for a pass's records and the truth phases
/// alike (`herald_switch_off_channels`): only while the address the provider spoke of is still the
/// recipient's, only when the channel is on, with the reason; an earlier reason is kept.
@Suite struct ChannelSwitchOffTests {
    static func switchOff(_ db: PGConnection, _ user: UUID, _ channel: String, _ destination: String,
                          _ reason: String) throws -> Int {
        let offs = JSONValueText.array([["user_id": user.uuidString.lowercased(), "channel": channel,
                                         "destination": destination, "reason": reason]])
        return try db.query("select herald_switch_off_channels(\(offs)::jsonb) as n").first?["n"].int ?? -1
    }

    @Test func aWordAboutTheRecipientsOwnAddressSwitchesTheChannelOff() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let ada = try f.profile(email: "Ada@Example.com", phone: "+15550001111", emailOn: true, sms: true)

            #expect(try Self.switchOff(db, ada, "sms", "+15559999999", "twilio 21610: STOP") == 0, "an old number")
            #expect(try Self.switchOff(db, ada, "email", "ada@example.com", "sendgrid bounce") == 1, "case aside")
            #expect(try Self.switchOff(db, ada, "sms", "+15550001111", "twilio 21610: STOP") == 1)
            #expect(try Self.switchOff(db, ada, "sms", "+15550001111", "later word") == 0, "already off")
            let row = try #require(try db.query("""
                select notify_sms, notify_sms_disabled_reason as sms_reason, notify_email, champion_notify_email,
                       notify_email_disabled_reason as email_reason
                  from user_profiles where user_id = \(ada)
                """).first)
            #expect(row["notify_sms"].bool == false)
            #expect(row["sms_reason"].string == "twilio 21610: STOP", "the first reason is kept")
            #expect(row["notify_email"].bool == false && row["champion_notify_email"].bool == false)
            #expect(row["email_reason"].string == "sendgrid bounce")
        }
    }
}

/// JSON text of plain values, for a test's bound jsonb parameter.
enum JSONValueText {
    static func array(_ objects: [[String: String]]) -> String {
        let data = try! JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}
