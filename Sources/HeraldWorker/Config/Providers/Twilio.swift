import Foundation
import HeraldChannels
import HeraldCore

extension ProviderRegistration {
    /// TWILIO_ACCOUNT_SID TWILIO_AUTH_TOKEN (TWILIO_FROM | TWILIO_MESSAGING_SERVICE_SID) [TWILIO_URL]
    /// [TWILIO_STATUS_CALLBACK_URL]
    static let twilio = ProviderRegistration(
        provider: .twilio, keys: ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "TWILIO_FROM", "TWILIO_MESSAGING_SERVICE_SID", "TWILIO_URL", "TWILIO_STATUS_CALLBACK_URL"]
    ) { settings in
        guard let v = try required(settings, ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"], for: "Twilio"),
              let sid = v["TWILIO_ACCOUNT_SID"], let token = v["TWILIO_AUTH_TOKEN"] else {
            if settings["TWILIO_FROM"] != nil || settings["TWILIO_MESSAGING_SERVICE_SID"] != nil {
                throw ConfigError("TWILIO_ACCOUNT_SID is not set: Twilio needs TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN")
            }
            return nil
        }
        var adapter = try TwilioAdapter(accountSid: sid, authToken: token, from: settings["TWILIO_FROM"],
                                        messagingServiceSid: settings["TWILIO_MESSAGING_SERVICE_SID"],
                                        baseURL: settings["TWILIO_URL"])
        if let callback = settings["TWILIO_STATUS_CALLBACK_URL"] {
            guard let u = URL(string: callback), u.scheme == "https" || u.scheme == "http", u.host != nil else {
                throw ConfigError("TWILIO_STATUS_CALLBACK_URL must be the http(s) URL of the provider-events endpoint, got '\(callback)'")
            }
            adapter.statusCallback = callback
        }
        return adapter
    }
}
