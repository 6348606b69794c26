import Foundation
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker

/// A deployment for `herald doctor` to check, as an operator would set it up: a real database whose URL
/// carries a password and is read through `DATABASE_URL_FILE`, a config file (`HERALD_CONFIG`), the
/// fake FCM (with its OAuth token endpoint), Twilio, SendGrid and WhatsApp on loopback TLS, an APNs key
/// file, and the test CA as `HERALD_CA_FILE`. `cleanup()` removes it all.
final class DoctorLab: @unchecked Sendable {
    let certificates: TestCertificates
    let database: TestDB
    let fcm: FakeFCM
    let twilio: FakeTwilio
    let sendgrid: FakeSendGrid
    let whatsapp: FakeWhatsApp
    let apnsKeyPEM = TestKeys.apnsKeyPEM()
    private var files: [String] = []
    private var databases: [TestDB] = []
    private var roles: [String] = []
    private let lock = NSLock()

    static let databasePassword = "doctor-pw-" + hex(12)
    static let twilioSid = "AC" + hex(32)
    static let twilioToken = hex(32)
    static let sendgridKey = "SG." + base64URL(22) + "." + base64URL(43)
    static let whatsappToken = "EAAG" + base64URL(120)
    static let whatsappNumber = "106540352242922"

    init() throws {
        certificates = try TestCertificates.make()
        database = try TestDatabase.create()
        fcm = try FakeFCM(certificates: certificates)
        twilio = try FakeTwilio(tls: certificates, accountSid: Self.twilioSid, authToken: Self.twilioToken)
        sendgrid = try FakeSendGrid(tls: certificates, apiKey: Self.sendgridKey)
        whatsapp = try FakeWhatsApp(tls: certificates, token: Self.whatsappToken, phoneNumberId: Self.whatsappNumber)
    }

    /// Every setting of the good deployment.
    func environment() throws -> [String: String] {
        [
            "HERALD_CONFIG": try file("APNS_ENV=sandbox\nEMAIL_FROM='Herald <noreply@example.com>'\n", name: "herald.env"),
            "DATABASE_URL_FILE": try file(Self.withPassword(database.url), name: "database-url"),
            "HERALD_CA_FILE": certificates.caFile,
            "APNS_KEY_FILE": try file(apnsKeyPEM, name: "apns.p8"), "APNS_KEY_ID": "ABC123DEFG",
            "APNS_TEAM_ID": "DEF123GHIJ", "APNS_TOPIC": "com.example.herald",
            "FCM_SERVICE_ACCOUNT_FILE": try file(fcm.serviceAccountJSON, name: "fcm.json"), "FCM_URL": fcm.baseURL,
            "TWILIO_ACCOUNT_SID": Self.twilioSid, "TWILIO_AUTH_TOKEN_FILE": try file(Self.twilioToken, name: "twilio"),
            "TWILIO_FROM": "+15555550100", "TWILIO_URL": twilio.baseURL,
            "SENDGRID_API_KEY": Self.sendgridKey, "SENDGRID_URL": sendgrid.baseURL,
            "WHATSAPP_TOKEN": Self.whatsappToken, "WHATSAPP_PHONE_NUMBER_ID": Self.whatsappNumber,
            "WHATSAPP_URL": whatsapp.baseURL,
        ]
    }

    /// What must never be printed: the credentials, a line of each private key, the access tokens FCM issued.
    var secrets: [String] {
        let keyLine = { (pem: String) in pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem }
        return [Self.databasePassword, Self.twilioToken, Self.sendgridKey, Self.whatsappToken,
                keyLine(apnsKeyPEM), keyLine(fcm.privateKeyPEM)] + fcm.issuedTokens
    }

    /// Writes `text` to a new temporary file (mode 0600) and returns its path.
    func file(_ text: String, name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-doctor-\(name)-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw ConfigError("could not write \(path)")
        }
        lock.withLock { files.append(path) }
        return path
    }

    /// Drops `db` with the lab.
    func adopt(_ db: TestDB) { lock.withLock { databases.append(db) } }

    /// Drops the role `name` with the lab, once its databases are gone (its grants go with them).
    func adopt(role name: String) { lock.withLock { roles.append(name) } }

    func cleanup() {
        for path in lock.withLock({ files }) { try? FileManager.default.removeItem(atPath: path) }
        for server in [fcm.server, twilio.server, sendgrid.server, whatsapp.server] { server.shutdown() }
        for db in [database] + lock.withLock({ databases }) { db.drop() }
        if let server = try? PGConnection(try TestDatabase.serverURL(), applicationName: "herald-tests") {
            for role in lock.withLock({ roles }) { _ = try? server.execute("drop role if exists \(identifier: role)") }
            server.close()
        }
        certificates.remove()
    }

    /// `url` with the lab's password (trust authentication on the test server ignores it).
    static func withPassword(_ url: String, user: String? = nil) -> String {
        var components = URLComponents(string: url)!
        if let user { components.user = user }
        components.password = databasePassword
        return components.string!
    }

    static func hex(_ count: Int) -> String {
        String((0..<count).map { _ in "0123456789abcdef".randomElement()! })
    }

    static func base64URL(_ count: Int) -> String {
        String((0..<count).map { _ in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".randomElement()! })
    }
}
