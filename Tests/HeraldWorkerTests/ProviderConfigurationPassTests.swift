import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// A provider configuration error stops the pass before any row is claimed and names the variable,
/// never quoting a secret.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct ProviderConfigurationPassTests: ProviderPassSuite {

    // MARK: - Configuration errors stop the pass before any row is touched

    @Test func configurationErrorsNameTheVariableAndTouchNothing() throws {
        try withProviderLab(.apns) { lab in
            let now = Self.now()
            let user = try lab.f.profile(email: "ana@example.com", emailOn: true)
            try lab.f.token(user, Self.apnsToken())
            let push = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let mail = try lab.f.enqueue(to: user, channel: "email", at: now.addingTimeInterval(-10))

            let keyFile = try lab.file(lab.apns.keyPEM, name: "apns.p8")
            let sendgridKey = "SG.secret-" + UUID().uuidString
            let smtpPassword = "smtp-pw-" + UUID().uuidString
            let cases: [(String, [String: String], [String])] = [
                ("APNS_KEY_ID alone", ["APNS_KEY_ID": lab.apns.keyId], ["APNS_KEY_FILE", "APNS_TEAM_ID", "APNS_TOPIC"]),
                ("APNs without a topic", ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": lab.apns.keyId, "APNS_TEAM_ID": lab.apns.teamId],
                 ["APNS_TOPIC"]),
                ("unreadable APNS_KEY_FILE", ["APNS_KEY_FILE": "/nonexistent/herald/AuthKey.p8", "APNS_KEY_ID": lab.apns.keyId,
                                              "APNS_TEAM_ID": lab.apns.teamId, "APNS_TOPIC": lab.apns.topic],
                 ["APNS_KEY_FILE"]),
                ("service account missing a field",
                 ["FCM_SERVICE_ACCOUNT_FILE": try lab.file(#"{"type":"service_account","project_id":"p"}"#, name: "fcm.json")],
                 ["FCM_SERVICE_ACCOUNT_FILE", "client_email"]),
                ("service account not JSON",
                 ["FCM_SERVICE_ACCOUNT_FILE": try lab.file("this is not json", name: "fcm.json")],
                 ["FCM_SERVICE_ACCOUNT_FILE"]),
                ("SENDGRID_API_KEY without EMAIL_FROM", ["SENDGRID_API_KEY": sendgridKey], ["EMAIL_FROM"]),
                // SendGrid and SMTP together are a failover order now (FailoverTests); naming an unknown one is not.
                ("an unknown email provider", ["SENDGRID_API_KEY": sendgridKey,
                                               "SMTP_URL": "smtp://herald:\(smtpPassword)@localhost:2525",
                                               "EMAIL_FROM": "noreply@example.com", "HERALD_EMAIL_PROVIDERS": "sendgrid,mailgun"],
                 ["HERALD_EMAIL_PROVIDERS"]),
            ]
            for (name, settings, mentions) in cases {
                let (summary, code) = Self.pass(lab.url, lab.base.merging(settings) { $1 }, now: now)
                #expect(code == .configuration, "\(name): exit \(code)")
                #expect(summary.ok == false, "\(name)")
                let error = summary.error ?? ""
                #expect(mentions.contains { error.contains($0) }, "\(name): \(error)")
                #expect(!error.contains(sendgridKey) && !error.contains(smtpPassword), "\(name) quotes a secret: \(error)")
            }
            // The malformed service account names the variable as well as the field.
            let (s, _) = Self.pass(lab.url, lab.base.merging(cases[3].1) { $1 }, now: now)
            #expect((s.error ?? "").contains("FCM_SERVICE_ACCOUNT_FILE"), "\(s.error ?? "")")
            #expect((s.error ?? "").contains("client_email"), "\(s.error ?? "")")

            // Nothing was touched: no pass recorded, rows pending and never claimed, no request sent.
            for id in [push, mail] {
                let row = try lab.f.row(id)
                #expect(row["status"].string == "pending")
                #expect(row["attempts"].int == 0)
                #expect(row["locked_by"].string == nil)
            }
            #expect(try lab.f.count("select count(*)::int from herald_passes") == 0)
            #expect(try lab.f.count("select count(*)::int from notification_trail where event <> 'enqueued'") == 0)
            #expect(try lab.f.count("select count(*)::int from notification_deliveries") == 0)
            #expect(lab.apns.requests.isEmpty)
        }
    }
}
