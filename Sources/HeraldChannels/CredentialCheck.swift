import Foundation
import HeraldHTTP

/// What herald can tell of a provider's credentials without sending anything: what `herald doctor` shows
/// as `provider.<name>` for each configured provider, before `--online` asks the provider itself
/// (`credentialProbe`). The adapter declares it (`ProviderAdapter.credentialCheck`), so the doctor never
/// tells providers apart: APNs' `.p8` signs an ES256 token, FCM's service account gets an access token at
/// its `token_uri`, the keys of Twilio, SendGrid and WhatsApp have their shapes (`ProviderKeyShapes`), and
/// a provider whose credentials show only when it sends says so (`unchecked`). No text quotes a secret.
///
///     let finding = adapter.credentialCheck?.run(now: Date(), transport: transport)
///     // CredentialFinding(.ok, "the .p8 key signs an ES256 token (key ABC123DEFG, team DEF123GHIJ, sandbox)")
public struct CredentialCheck: Sendable {
    let body: @Sendable (Date, HTTPTransport?) throws -> CredentialFinding

    /// `body` checks at `now`, with the transport a token exchange needs (nil when none could be made); what
    /// it throws is a failed check.
    public init(_ body: @escaping @Sendable (_ now: Date, _ transport: HTTPTransport?) throws -> CredentialFinding) {
        self.body = body
    }

    /// The finding: the body's, or a failure naming what it threw.
    public func run(now: Date, transport: HTTPTransport?) -> CredentialFinding {
        do {
            return try body(now, transport)
        } catch {
            return CredentialFinding(.fail, "\(error)")
        }
    }

    /// A check of shapes: the first failure among `findings`, else the first warning, else `ok`.
    public static func shapes(_ findings: @escaping @Sendable () -> [CredentialFinding], ok: String) -> CredentialCheck {
        CredentialCheck { _, _ in
            let all = findings()
            return all.first { $0.status == .fail } ?? all.first ?? CredentialFinding(.ok, ok)
        }
    }

    /// The provider's credentials show only when it sends: `why` says what the doctor cannot see.
    public static func unchecked(_ why: String) -> CredentialCheck {
        CredentialCheck { _, _ in CredentialFinding(.ok, "configured; " + why) }
    }
}

/// One thing a credential check saw, without the secret.
public struct CredentialFinding: Sendable, Equatable {
    /// A warning is worth reading (a shape only seen in practice); a failure is refused at the first send.
    public enum Status: String, Sendable, Equatable {
        case ok
        case warn
        case fail
    }

    public var status: Status
    public var text: String

    public init(_ status: Status, _ text: String) {
        self.status = status
        self.text = text
    }
}
