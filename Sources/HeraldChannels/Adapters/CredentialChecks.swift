import Foundation
import HeraldHTTP

/// What `herald doctor` checks of each provider's credentials without sending a message
/// (`ProviderAdapter.credentialCheck`): a token signed or fetched as a pass gets it, or the keys' shapes
/// (providers.md §4.1, §5.1, §6.1). Every text names the key, never its value.
extension APNsAdapter {
    /// The `.p8` key signs an ES256 provider token.
    public var credentialCheck: CredentialCheck? {
        CredentialCheck { [tokens, environment] now, _ in
            _ = try tokens.token(now: now)
            return CredentialFinding(.ok, "the .p8 key signs an ES256 token (key \(tokens.keyId), team \(tokens.teamId), \(environment.rawValue))")
        }
    }
}

extension FCMAdapter {
    /// The service account gets an access token from its `token_uri` (the one request the doctor makes
    /// without `--online`).
    public var credentialCheck: CredentialCheck? {
        CredentialCheck { [self] now, transport in
            guard let transport else { return CredentialFinding(.fail, "no HTTP transport to reach \(account.tokenURI)") }
            try prepare(now: now, transport: transport)
            return CredentialFinding(.ok, "service account \(account.clientEmail) (project \(account.projectId)) got an access token from \(account.tokenURI)")
        }
    }
}

extension TwilioAdapter {
    /// The account SID (and messaging service SID) and the auth token have Twilio's shapes.
    public var credentialCheck: CredentialCheck? {
        .shapes({ [accountSid, authToken, messagingServiceSid] in
            ProviderKeyShapes.twilio(accountSid: accountSid, authToken: authToken, messagingServiceSid: messagingServiceSid)
        }, ok: "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN have Twilio's shapes")
    }
}

extension SendGridAdapter {
    /// The API key has SendGrid's shape.
    public var credentialCheck: CredentialCheck? {
        .shapes({ [apiKey] in ProviderKeyShapes.sendGrid(apiKey: apiKey) }, ok: "SENDGRID_API_KEY has SendGrid's shape")
    }
}

extension WhatsAppAdapter {
    /// The access token has Meta's shape.
    public var credentialCheck: CredentialCheck? {
        .shapes({ [token] in ProviderKeyShapes.whatsApp(token: token) }, ok: "WHATSAPP_TOKEN has Meta's shape")
    }
}

extension ExpoAdapter {
    /// Expo's access token, if any, has no published shape: Expo checks it on a push.
    public var credentialCheck: CredentialCheck? {
        .unchecked("herald doctor cannot check Expo's access token without sending a push")
    }
}

extension SMTPAdapter {
    /// The server checks the login in a session that sends.
    public var credentialCheck: CredentialCheck? {
        .unchecked("herald doctor cannot check the SMTP login without sending a mail")
    }
}

extension WebhookAdapter {
    /// The receiver checks the signatures: herald holds no credential of its own there.
    public var credentialCheck: CredentialCheck? {
        .unchecked("the webhook's receiver checks its signatures, which herald doctor cannot see without sending")
    }
}
