import Foundation
import HeraldChannels
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A provider or a channel declared but not registered everywhere it must be fails here: a provider's
/// registration, its settings in the registry, its name in the database's checks; a channel's toggle and
/// opt-out columns, the app's grant on its toggle, the switch-off rule.
@Suite struct RegistrationTests {
    /// Every provider that sends has a registration in the catalog, whose settings are all declared.
    @Test(arguments: Provider.allCases.filter { $0.channel != nil && $0 != .inbox && $0 != .log })
    func everyProviderIsRegisteredWithDeclaredSettings(_ provider: Provider) throws {
        let registration = try #require(ProviderCatalog.registration(provider), "\(provider) has no registration")
        #expect(registration.provider == provider)
        #expect(!registration.keys.isEmpty, "\(provider) declares no settings")
        for key in registration.keys {
            let name = key.hasSuffix("_") ? key + "X" : key
            #expect(Settings.spec(name) != nil, "\(provider) reads \(key), which Settings.registry does not declare")
        }
    }

    /// Every provider that sends declares what `herald doctor` checks of its credentials without sending
    /// (`ProviderAdapter.credentialCheck`: a token signed or fetched, its keys' shapes, or why nothing can
    /// be checked), so the doctor checks a new provider with no change of its own.
    @Test(arguments: Provider.allCases.filter { $0.channel != nil && $0 != .inbox && $0 != .log })
    func everyProviderDeclaresTheDoctorsCheckOfItsCredentials(_ provider: Provider) throws {
        let registration = try #require(ProviderCatalog.registration(provider), "\(provider) has no registration")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-registration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let configured = try registration.load(Settings(try Self.everyProvider(files: dir)))
        let adapter = try #require(configured, "RegistrationTests.everyProvider does not configure \(provider): add its settings")
        #expect(adapter.credentialCheck != nil, "\(provider)'s adapter declares no credentialCheck for herald doctor")
    }

    /// Settings that configure every provider, with keys made for the test (key files written to `files`).
    static func everyProvider(files: URL) throws -> [String: String] {
        let apnsKey = files.appendingPathComponent("apns.p8")
        let serviceAccount = files.appendingPathComponent("fcm.json")
        try TestKeys.apnsKeyPEM().write(to: apnsKey, atomically: true, encoding: .utf8)
        try TestKeys.serviceAccountJSON().write(to: serviceAccount, atomically: true, encoding: .utf8)
        return [
            "APNS_KEY_FILE": apnsKey.path, "APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "DEF123GHIJ",
            "APNS_TOPIC": "com.example.herald", "FCM_SERVICE_ACCOUNT_FILE": serviceAccount.path, "HERALD_EXPO": "on",
            "TWILIO_ACCOUNT_SID": "AC" + String(repeating: "0", count: 32), "TWILIO_AUTH_TOKEN": String(repeating: "a", count: 32),
            "TWILIO_FROM": "+15555550100", "WHATSAPP_TOKEN": "EAAGtoken", "WHATSAPP_PHONE_NUMBER_ID": "106540352242922",
            "EMAIL_FROM": "Herald <noreply@example.com>", "SENDGRID_API_KEY": "SG.id.secret",
            "SMTP_URL": "smtps://herald:pw@smtp.example.com:465", "WEBHOOK_URL": "https://hooks.example.com/herald",
            "WEBHOOK_SECRET": "whsec_" + Data(repeating: 7, count: 32).base64EncodedString(),
        ]
    }

    /// The database's checks name exactly the providers the code has: push providers in
    /// device_tokens.provider, the providers that post events in provider_events.provider.
    @Test func theDatabasesChecksNameTheProvidersTheCodeHas() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            func allowed(_ table: String) throws -> Set<String> {
                let defs = try db.query("""
                    select pg_get_constraintdef(oid) as def from pg_constraint
                     where conrelid = \(table)::regclass and contype = 'c' and pg_get_constraintdef(oid) like '%provider%'
                    """).compactMap { $0["def"].string }.joined(separator: " ")
                let regex = try NSRegularExpression(pattern: "'([a-z_]+)'::text")
                let range = NSRange(defs.startIndex..., in: defs)
                return Set(regex.matches(in: defs, range: range).compactMap { Range($0.range(at: 1), in: defs).map { String(defs[$0]) } })
            }
            let push = Set(Provider.allCases.filter { $0.channel == .push }.map(\.rawValue))
            #expect(try allowed("device_tokens") == push)
            #expect(try allowed("provider_events") == Set(ProviderEvents.providers.map(\.rawValue)))
        }
    }

    /// Every channel's toggle and opt-out switch are columns of user_profiles; the app's users may change
    /// their own toggles; the switch-off rule handles exactly the channels with an opt-out switch.
    /// The database is prepared as Supabase prepares one (the app roles exist before migrating), so the
    /// grant is always checked, whatever other tests did to the server's roles first.
    @Test func everyChannelsColumnsExistAndTheRulesKnowThem() throws {
        try SecurityTests.supabase { tdb, db in
            let columns = Set(try db.query("""
                select column_name from information_schema.columns where table_name = 'user_profiles'
                """).compactMap { $0["column_name"].string })
            let rule = try db.query("""
                select pg_get_functiondef('herald_switch_off_channels(jsonb)'::regprocedure) as def
                """).first?["def"].string ?? ""
            for channel in Channel.allCases {
                if let toggle = channel.toggleColumn {
                    #expect(columns.contains(toggle), "\(channel)'s toggle \(toggle) is not a column")
                    let mayUpdate = try db.query("""
                        select has_column_privilege('authenticated', 'user_profiles', \(toggle), 'UPDATE') as ok
                        """).first?["ok"].bool
                    #expect(mayUpdate == true, "the app's users may not change \(toggle)")
                }
                if let off = channel.optOutSwitch {
                    #expect(columns.contains(off), "\(channel)'s opt-out switch \(off) is not a column")
                    #expect(rule.contains(off) && rule.contains("'\(channel.rawValue)'"), "the switch-off rule skips \(channel)")
                } else {
                    #expect(!rule.contains("'\(channel.rawValue)'"), "the switch-off rule handles \(channel), which has no opt-out")
                }
            }
        }
    }
}
