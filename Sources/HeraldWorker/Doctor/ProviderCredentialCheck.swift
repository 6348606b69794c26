import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP

/// Each configured provider's credentials, sending nothing: the adapter is built as a pass builds it
/// (`ProviderCatalog`), then `provider.<name>` checks what can be checked of its credentials — APNs'
/// `.p8` signs an ES256 token, FCM's service account gets an access token at its `token_uri`, the
/// keys of Twilio, SendGrid and WhatsApp have their shapes — and with `online`,
/// `provider.<name>.online` makes the provider's read-only authenticated request
/// (`ProviderAdapter.credentialProbe`).
///
///     ProviderCredentialCheck(settings: settings, transport: transport, online: false, now: Date()).checks()
struct ProviderCredentialCheck {
    let settings: Settings
    /// The transport for FCM's token and the probes; nil when none could be made.
    let transport: HTTPTransport?
    let online: Bool
    let now: Date

    func checks() -> [DoctorCheck] {
        ProviderCatalog.all.flatMap(check)
    }

    func check(_ registration: ProviderRegistration) -> [DoctorCheck] {
        let name = "provider." + registration.provider.rawValue
        let adapter: any ProviderAdapter
        do {
            guard let configured = try registration.load(settings) else { return [] }
            adapter = configured
        } catch {
            return [DoctorCheck(name, .fail, "\(error)")]
        }
        let credentials = DoctorCheck(name, credentials(adapter))
        guard online, credentials.status != .fail, let probe = adapter.credentialProbe else { return [credentials] }
        return [credentials, DoctorCheck(name + ".online", self.probe(probe))]
    }

    /// What the credentials of `adapter` show without sending.
    func credentials(_ adapter: any ProviderAdapter) -> ProviderKeyShapes.Finding {
        do {
            switch adapter {
            case let apns as APNsAdapter:
                _ = try apns.tokens.token(now: now)
                return (.ok, "the .p8 key signs an ES256 token (key \(apns.tokens.keyId), team \(apns.tokens.teamId), \(apns.environment.rawValue))")
            case let fcm as FCMAdapter:
                guard let transport else { return (.fail, "no HTTP transport to reach \(fcm.account.tokenURI)") }
                try fcm.prepare(now: now, transport: transport)
                return (.ok, "service account \(fcm.account.clientEmail) (project \(fcm.account.projectId)) got an access token from \(fcm.account.tokenURI)")
            case is TwilioAdapter:
                return verdict(ProviderKeyShapes.twilio(
                    accountSid: try value("TWILIO_ACCOUNT_SID"), authToken: try value("TWILIO_AUTH_TOKEN"),
                    messagingServiceSid: settings["TWILIO_MESSAGING_SERVICE_SID"]), ok: "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN have Twilio's shapes")
            case is SendGridAdapter:
                return verdict(ProviderKeyShapes.sendGrid(apiKey: try value("SENDGRID_API_KEY")), ok: "SENDGRID_API_KEY has SendGrid's shape")
            case is WhatsAppAdapter:
                return verdict(ProviderKeyShapes.whatsApp(token: try value("WHATSAPP_TOKEN")), ok: "WHATSAPP_TOKEN has Meta's shape")
            default:
                return (.ok, "configured; herald doctor cannot check its credentials without sending")
            }
        } catch {
            return (.fail, "\(error)")
        }
    }

    /// The provider's answer to its read-only request.
    func probe(_ probe: CredentialProbe) -> ProviderKeyShapes.Finding {
        guard let transport else { return (.fail, "no HTTP transport to reach the provider") }
        let host = URL(string: probe.request.url)?.host ?? "the provider"
        switch transport.perform(probe.request) {
        case .failure(let error):
            return (.fail, "could not reach \(host): \(error.asOutcome.message ?? "transport error")")
        case .success(let answer):
            switch probe.read(answer) {
            case .accepted(let text): return (.ok, text)
            case .refused(let text): return (.fail, text)
            case .unclear(let text): return (.fail, "an answer that says nothing of the credentials: \(text)")
            }
        }
    }

    /// A secret as the adapter read it (trimmed).
    func value(_ key: String) throws -> String {
        (try settings.secret(key) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The worst of `findings`, or ok.
    func verdict(_ findings: [ProviderKeyShapes.Finding], ok: String) -> ProviderKeyShapes.Finding {
        findings.first { $0.status == .fail } ?? findings.first ?? (.ok, ok)
    }
}

extension DoctorCheck {
    init(_ name: String, _ finding: ProviderKeyShapes.Finding) {
        self.init(name, finding.status, finding.text)
    }
}
