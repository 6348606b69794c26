import HeraldHTTP

/// A read-only, authenticated request that tells whether a provider takes herald's credentials,
/// without sending a message: what `herald doctor --online` asks each provider that has one
/// (`ProviderAdapter.credentialProbe`). The adapter builds it, so the credentials never leave it; the
/// verdict's text carries no secret.
///
///     if let probe = adapter.credentialProbe, case .success(let answer) = transport.perform(probe.request) {
///         let verdict = probe.read(answer)   // .accepted("account AC… is active")
///     }
public struct CredentialProbe: Sendable {
    public var request: HTTPRequest
    /// What the provider's answer says about the credentials.
    public var read: @Sendable (HTTPResponse) -> Verdict

    public init(request: HTTPRequest, read: @escaping @Sendable (HTTPResponse) -> Verdict) {
        self.request = request
        self.read = read
    }

    /// The provider's word on the credentials.
    public enum Verdict: Sendable, Equatable {
        /// It took them; the text says what it showed (an account's state, a key's scope).
        case accepted(String)
        /// It refused them, or they cannot do what herald needs; the text says why.
        case refused(String)
        /// An answer that says neither (a 5xx, a proxy's page): the text describes it.
        case unclear(String)
    }
}
