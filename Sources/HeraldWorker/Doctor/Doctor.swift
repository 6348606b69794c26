import Foundation
import HeraldHTTP
import HeraldPostgres

/// What `herald doctor` may do besides reading.
public struct DoctorOptions: Sendable {
    /// Also make each provider's read-only authenticated request (`provider.<name>.online`).
    public var online = false
    /// How long `database.listen` waits for its notification, in seconds.
    public var listenWait: Double = 2

    public init() {}
}

/// `herald doctor`: checks a deployment without sending anything — the settings (`SettingsCheck`), the
/// CA file (`CAFileCheck`), the database (`DatabaseCheck`) and the clocks (`ClockCheck`), each
/// configured provider's credentials (`ProviderCredentialCheck`) — into one `DoctorReport`. Nothing is
/// written: catalog queries, one `LISTEN`/`NOTIFY` on a channel of its own, and for FCM one token
/// request at the service account's `token_uri`.
///
///     let report = Doctor.run(environment: ProcessInfo.processInfo.environment)
///     print(report.text)
///     exit(report.exitCode.rawValue)
public enum Doctor {
    /// `flags`: settings given on the command line (`--log-level` is `HERALD_LOG_LEVEL`).
    public static func run(environment: [String: String], flags: [String: String] = [:],
                           options: DoctorOptions = DoctorOptions()) -> DoctorReport {
        var checks: [DoctorCheck] = []
        var settings: Settings
        do {
            settings = try Settings.load(environment: environment)
        } catch {
            // Without its config file herald would not start; the rest is checked from the environment.
            checks.append(DoctorCheck("settings.HERALD_CONFIG", .fail, "\(error)"))
            settings = Settings(environment.filter { $0.key != "HERALD_CONFIG" })
        }
        for (key, value) in flags { settings.setFlag(key, value) }
        checks += SettingsCheck(settings: settings).checks()
        checks.append(CAFileCheck.check(settings))
        checks += database(settings, options: options)
        let transportOptions = (try? PassConfig.transportOptions(settings)) ?? TransportOptions()
        let transport = (try? HTTPTransport(options: transportOptions)) ?? (try? HTTPTransport())
        checks += ProviderCredentialCheck(settings: settings, transport: transport, online: options.online, now: Date()).checks()
        return DoctorReport(checks, secrets: secrets(settings))
    }

    /// `database.*` and `clock.skew`, on one connection (and a second one for the notification).
    static func database(_ settings: Settings, options: DoctorOptions) -> [DoctorCheck] {
        let url: String
        do {
            url = try settings.databaseURL() ?? ""
        } catch {
            return [DoctorCheck("database.connect", .fail, "\(error)")]
        }
        let db: PGConnection
        do {
            db = try PGConnection(url, applicationName: "herald-doctor")
        } catch {
            return [DoctorCheck("database.connect", .fail,
                                "cannot reach the database: \(error); \(ConnectionHint.for("\(error)", urlSet: !url.isEmpty))")]
        }
        defer { db.close() }
        do {
            let facts = try DatabaseFacts.read(db, url: url, listenWait: options.listenWait)
            return DatabaseCheck.checks(facts) + [ClockCheck.measure(db)]
        } catch {
            return [DoctorCheck("database.connect", .fail, "connected, but a catalog query failed: \(error)")]
        }
    }

    /// The values of the secret settings that are set, directly or in the files their `_FILE` variants name.
    static func secrets(_ settings: Settings) -> [String] {
        Settings.registry.filter(\.secret).flatMap { spec in
            settings.keys.filter { spec.matches($0) }.flatMap { key -> [String] in
                let base = key.hasSuffix("_FILE") ? String(key.dropLast(5)) : key
                return [key == base ? settings[key] : nil, try? settings.secret(base)].compactMap { $0 }
            }
        }
    }
}
