import Crypto
import _CryptoExtras
import Foundation

/// Credentials for building adapters without a fake server (fuzz tests of classifiers).
public enum TestKeys {
    /// A fresh `.p8` APNs auth key (PEM PKCS#8 EC P-256).
    public static func apnsKeyPEM() -> String {
        P256.Signing.PrivateKey().pemRepresentation
    }

    /// A fresh `.p8` cut short: its armor intact, its body a fragment of the first line, so it cannot
    /// parse (a key file copied in part).
    public static func truncatedAPNsKeyPEM() -> String {
        let lines = apnsKeyPEM().split(separator: "\n")
        return [lines[0], lines[1].prefix(16), lines[lines.count - 1]].joined(separator: "\n") + "\n"
    }

    /// A service-account key file (RSA 2048) for project `herald-test`.
    public static func serviceAccountJSON(tokenURI: String = "https://oauth2.googleapis.com/token") throws -> String {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let account: [String: String] = [
            "type": "service_account",
            "project_id": "herald-test",
            "private_key_id": "0123456789abcdef0123456789abcdef01234567",
            "private_key": key.pkcs8PEMRepresentation,
            "client_email": "herald-push@herald-test.iam.gserviceaccount.com",
            "token_uri": tokenURI,
        ]
        let data = try JSONSerialization.data(withJSONObject: account, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}
