import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// Nothing private reaches the log: tokens, numbers, addresses, keys and bodies stay out of it,
/// whatever the providers answer.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct ProviderLogPrivacyPassTests: ProviderPassSuite {

    // MARK: - Nothing private reaches the log

    @Test func logsCarryNoTokensNumbersKeysOrBodies() throws {
        try withProviderLab(.apns, .fcm) { lab in
            let expoAccess = "expo-access-" + UUID().uuidString
            let expo = try FakeExpo(tls: lab.certificates, accessToken: expoAccess)
            defer { expo.shutdown() }
            let sid = "AC" + String(repeating: "fedcba9876543210", count: 2)
            let twilioAuth = "twilio-auth-" + UUID().uuidString
            let twilio = try FakeTwilio(tls: lab.certificates, accountSid: sid, authToken: twilioAuth)
            defer { twilio.shutdown() }
            let sendgridKey = "SG.log-test-" + UUID().uuidString
            let sendgrid = try FakeSendGrid(tls: lab.certificates, apiKey: sendgridKey)
            defer { sendgrid.shutdown() }

            let now = Self.now()
            let body = "Private body text \(UUID().uuidString)"
            let title = "Private title \(UUID().uuidString.prefix(8))"
            let payload = #"{"title":"\#(title)","body":"\#(body)"}"#
            let phoneDead = "+15555550177"
            let phoneBad = "+15555550178"
            let phoneBusy = "+15555550179"
            let email = "private.person@example.com"
            let bounced = "bounced.person@example.com"
            var secrets: [String] = [body, title, phoneDead, phoneBad, phoneBusy, email, bounced, expoAccess, twilioAuth,
                                     sendgridKey, lab.fcm.privateKeyPEM, lab.apns.keyPEM]

            // Push: every provider answers an error (dead, throttled, server error, unauthorized).
            let pushUser = try lab.f.profile(email: email, phone: phoneDead, emailOn: true, sms: true)
            let apnsDead = Self.apnsToken(), apnsThrottle = Self.apnsToken(), apnsBroken = Self.apnsToken()
            let fcmDead = "fcm-private-" + UUID().uuidString, fcmBusy = "fcm-busy-" + UUID().uuidString
            let expoDead = "ExponentPushToken[private-\(UUID().uuidString.prefix(8))]"
            let expoFine = "ExponentPushToken[fine-\(UUID().uuidString.prefix(8))]"
            for t in [apnsDead, apnsThrottle, apnsBroken] { try lab.f.token(pushUser, t) }
            for t in [fcmDead, fcmBusy] { try lab.f.token(pushUser, t, provider: "fcm") }
            for t in [expoDead, expoFine] { try lab.f.token(pushUser, t, provider: "expo") }
            secrets += [apnsDead, apnsThrottle, apnsBroken, fcmDead, fcmBusy, expoDead, expoFine]
            lab.apns.script(apnsDead, .unregistered(timestamp: 1_700_000_000_000))
            lab.apns.script(apnsThrottle, .error(429, "TooManyRequests", headers: [("retry-after", "60")]))
            lab.apns.script(apnsBroken, .raw(.text(500, "internal error for \(apnsBroken)")))
            lab.fcm.script(fcmDead, .fcmError(404, status: "NOT_FOUND", errorCode: "UNREGISTERED",
                                          message: "Requested entity \(fcmDead) was not found."))
            lab.fcm.script(fcmBusy, .fcmError(503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE",
                                          message: "unavailable for \(fcmBusy)", headers: [("retry-after", "60")]))
            expo.failTicket(token: expoDead, error: "DeviceNotRegistered")
            try lab.f.enqueue(to: pushUser, channel: "push", payload: payload, at: now.addingTimeInterval(-10))

            // SMS: unsubscribed, invalid number (Twilio quotes it), and a server error.
            let badUser = try lab.f.profile(phone: phoneBad, sms: true)
            let busyUser = try lab.f.profile(phone: phoneBusy, sms: true)
            twilio.fail(to: phoneDead, code: 21610, message: "Attempt to send to unsubscribed recipient \(phoneDead)")
            twilio.fail(to: phoneBad, code: 21211, message: "The 'To' number \(phoneBad) is not a valid phone number.")
            twilio.fail(to: phoneBusy, code: 30001, message: "Queue overflow for \(phoneBusy)", status: 503)
            for u in [pushUser, badUser, busyUser] {
                try lab.f.enqueue(to: u, channel: "sms", payload: payload, at: now.addingTimeInterval(-10))
            }

            // Email: one refused address, one accepted.
            let bounceUser = try lab.f.profile(email: bounced, emailOn: true)
            sendgrid.fail(email: bounced, status: 400, message: "Does not contain a valid address: \(bounced)",
                          field: "personalizations.0.to.0.email")
            try lab.f.enqueue(to: bounceUser, channel: "email", payload: payload, at: now.addingTimeInterval(-10))
            try lab.f.enqueue(to: pushUser, channel: "email", payload: payload, at: now.addingTimeInterval(-10))

            var settings = lab.base.merging(try lab.settings(lab.apns)) { $1 }.merging(try lab.settings(lab.fcm)) { $1 }
                .merging(lab.settings(expo, accessToken: expoAccess)) { $1 }
            settings["TWILIO_ACCOUNT_SID"] = sid
            settings["TWILIO_AUTH_TOKEN"] = twilioAuth
            settings["TWILIO_FROM"] = "+15005550006"
            settings["TWILIO_URL"] = twilio.baseURL
            settings["SENDGRID_API_KEY"] = sendgridKey
            settings["SENDGRID_URL"] = sendgrid.baseURL
            settings["EMAIL_FROM"] = "Herald <noreply@example.com>"

            let logPath = try lab.file("", name: "log")
            let handle = try #require(FileHandle(forWritingAtPath: logPath))
            let stream = LogStream(handle)
            let logger = Logger(label: "herald") { JSONLogHandler(label: $0, level: .info, stream: stream) }

            let (summary, code) = Self.pass(lab.url, settings, now: now, logger: logger)
            // A second pass: the FCM token endpoint fails, and Expo refuses the access token.
            lab.fcm.scriptTokenEndpoint(.json(400, #"{"error":"invalid_grant","error_description":"bad assertion"}"#))
            expo.enqueue(.json(401, #"{"errors":[{"code":"UNAUTHORIZED","message":"bad token \#(expoAccess)"}]}"#))
            let again = try lab.f.enqueue(to: pushUser, channel: "push", kind: "reminder", payload: payload,
                                      at: now.addingTimeInterval(110))
            let (summary2, code2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(120), logger: logger)
            try handle.close()
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(code2 == .degraded, "Expo refused herald's access token: \(summary2.error ?? "")")
            #expect(summary2.phaseErrors[.phase(.deliver)]?.contains(expoAccess) == false)
            #expect(summary.failed >= 3, "the providers' errors were recorded: \(summary.failed) failed")
            #expect(try lab.f.row(again)["status"].string == "failed")

            let log = try String(contentsOfFile: logPath, encoding: .utf8)
            #expect(log.contains("pass finished"), "the log was captured")
            #expect(log.contains("slow down"), "the throttle warning was logged")
            for secret in secrets {
                #expect(!log.contains(secret), "the log contains \(secret.prefix(40))")
            }
            // Each line is one JSON object.
            for line in log.split(separator: "\n") {
                #expect((try? JSONValue.parse(String(line))) != nil, "not JSON: \(line)")
            }
        }
    }
}
