import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A fake push provider `withProviderLab` starts over TLS: APNs (HTTP/2, ES256 provider tokens), FCM
/// (OAuth token exchange) or Expo (tickets and receipts).
enum LabFake: Sendable { case apns, fcm, expo }

/// What a provider pass test works in: the certificates and secret files (`ProviderPass.Lab`), the
/// fakes it asked for, a fresh database, a connection to it and its fixtures. `settings` configures a
/// pass for every fake asked for, as an operator would.
final class ProviderLab: @unchecked Sendable {
    let files: ProviderPass.Lab
    let tdb: TestDB
    let db: PGConnection
    let f: Fixtures
    private(set) var apns: FakeAPNs!
    private(set) var fcm: FakeFCM!
    private(set) var expo: FakeExpo!
    /// `HERALD_CA_FILE` and the settings of every fake asked for.
    private(set) var settings: [String: String]

    fileprivate init(_ fakes: [LabFake], files: ProviderPass.Lab, tdb: TestDB) throws {
        self.files = files
        self.tdb = tdb
        db = try tdb.connect()
        f = Fixtures(db: db)
        settings = files.base
        do {
            for fake in fakes {
                switch fake {
                case .apns: apns = try FakeAPNs(certificates: files.certificates); settings.merge(try files.apns(apns)) { $1 }
                case .fcm: fcm = try FakeFCM(certificates: files.certificates); settings.merge(try files.fcm(fcm)) { $1 }
                case .expo: expo = try FakeExpo(tls: files.certificates); settings.merge(files.expo(expo)) { $1 }
                }
            }
        } catch {
            shutdown()
            throw error
        }
    }

    var url: String { tdb.url }
    var certificates: TestCertificates { files.certificates }
    /// `HERALD_CA_FILE` alone: the start of settings for fakes a test makes itself.
    var base: [String: String] { files.base }

    /// The settings of a fake a test made itself.
    func settings(_ fake: FakeAPNs) throws -> [String: String] { try files.apns(fake) }
    func settings(_ fake: FakeFCM) throws -> [String: String] { try files.fcm(fake) }
    func settings(_ fake: FakeExpo, accessToken: String? = nil) -> [String: String] {
        files.expo(fake, accessToken: accessToken)
    }
    /// Writes `text` to a new temporary file (mode 0600), removed with the lab, and returns its path.
    func file(_ text: String, name: String = "secret") throws -> String { try files.file(text, name: name) }

    fileprivate func shutdown() {
        apns?.shutdown()
        fcm?.shutdown()
        expo?.shutdown()
        db.close()
    }
}

/// A provider lab for `body` — certificates, the fakes asked for, a fresh database and its fixtures —
/// taken apart when `body` returns or throws: the one line a provider pass test starts with.
///
///     try withProviderLab(.apns, .fcm) { lab in
///         let user = try lab.f.profile()
///         let (summary, code) = Self.pass(lab.url, lab.settings, now: Self.now())
///     }
@discardableResult
func withProviderLab<R>(_ fakes: LabFake..., body: (ProviderLab) throws -> R) throws -> R {
    let files = try ProviderPass.Lab()
    defer { files.cleanup() }
    return try withTestDatabase { tdb in
        let lab = try ProviderLab(fakes, files: files, tdb: tdb)
        defer { lab.shutdown() }
        return try body(lab)
    }
}
