import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP

/// Each configured provider's credentials, sending nothing: the adapter is built as a pass builds it
/// (`ProviderCatalog`), then `provider.<name>` runs the check of its credentials the adapter declares
/// (`ProviderAdapter.credentialCheck`: a token signed or fetched, the keys' shapes), and with `online`,
/// `provider.<name>.online` makes the provider's read-only authenticated request
/// (`ProviderAdapter.credentialProbe`). No provider is named here: a new one needs no change.
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

    /// What the credentials of `adapter` show without sending: the check the adapter declares.
    func credentials(_ adapter: any ProviderAdapter) -> CredentialFinding {
        guard let check = adapter.credentialCheck else {
            return CredentialFinding(.warn, "\(adapter.provider.rawValue) declares no check of its credentials")
        }
        return check.run(now: now, transport: transport)
    }

    /// The provider's answer to its read-only request.
    func probe(_ probe: CredentialProbe) -> CredentialFinding {
        guard let transport else { return CredentialFinding(.fail, "no HTTP transport to reach the provider") }
        let host = URL(string: probe.request.url)?.host ?? "the provider"
        switch transport.perform(probe.request) {
        case .failure(let error):
            return CredentialFinding(.fail, "could not reach \(host): \(error.asOutcome.message ?? "transport error")")
        case .success(let answer):
            switch probe.read(answer) {
            case .accepted(let text): return CredentialFinding(.ok, text)
            case .refused(let text): return CredentialFinding(.fail, text)
            case .unclear(let text): return CredentialFinding(.fail, "an answer that says nothing of the credentials: \(text)")
            }
        }
    }
}

extension DoctorCheck {
    init(_ name: String, _ finding: CredentialFinding) {
        let status: Status = switch finding.status {
        case .ok: .ok
        case .warn: .warn
        case .fail: .fail
        }
        self.init(name, status, finding.text)
    }
}
