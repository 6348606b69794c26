import Crypto
import Foundation
import HeraldCore
import _CryptoExtras

/// Compact JWS (JWT) assembly for provider tokens: APNs (ES256) and Google service accounts (RS256).
///
///     let jwt = try JWT.es256(header: ["alg": "ES256", "kid": "ABC123DEFG"],
///                             claims: ["iss": "DEF123GHIJ", "iat": 1_700_000_000], key: key)
enum JWT {
    /// base64url without padding (RFC 7515 §2).
    static func base64URL<D: DataProtocol>(_ bytes: D) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// `base64url(header).base64url(claims)`: the bytes that are signed. Keys are serialised sorted
    /// (JSONValue.jsonText), which JOSE allows.
    static func signingInput(header: JSONValue, claims: JSONValue) -> String {
        base64URL(Array(header.jsonText.utf8)) + "." + base64URL(Array(claims.jsonText.utf8))
    }

    /// ES256: ECDSA P-256 with SHA-256; the signature is the raw 64-byte `r‖s` (not DER).
    static func es256(header: JSONValue, claims: JSONValue, key: P256.Signing.PrivateKey) throws -> String {
        let input = signingInput(header: header, claims: claims)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + base64URL(signature.rawRepresentation)
    }

    /// RS256: RSASSA-PKCS1-v1_5 with SHA-256.
    static func rs256(header: JSONValue, claims: JSONValue, key: _RSA.Signing.PrivateKey) throws -> String {
        let input = signingInput(header: header, claims: claims)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }
}
