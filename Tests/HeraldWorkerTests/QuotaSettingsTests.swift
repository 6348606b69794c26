import Foundation
import HeraldCore
import Testing
@testable import HeraldWorker

/// Each provider's quota is a setting whose default is the published figure; a value that is not a
/// rate a second or a minute, a concurrency, or `off` exits 1 naming the variable.
@Suite struct QuotaSettingsTests {
    static func load(_ settings: [String: String]) throws -> PassOptions {
        try PassConfig.load(Settings(settings.merging(["DATABASE_URL": "postgresql://localhost/herald"]) { a, _ in a }),
                            options: PassOptions()).options
    }

    /// The registry's defaults, read as settings, are `Quota.published`: FCM 600000/min, Expo 600/s,
    /// WhatsApp 80/s, APNs 500 in flight and no rate, the others off.
    @Test func theDefaultsAreThePublishedFigures() throws {
        var defaults: [String: String] = [:]
        for provider in ProviderCatalog.defaultOrder {
            let key = QuotaSettings.key(provider)
            defaults[key] = try #require(Settings.spec(key)?.defaultValue, "\(key) is not declared with a default")
        }
        defaults["HERALD_APNS_CONCURRENCY"] = Settings.spec("HERALD_APNS_CONCURRENCY")?.defaultValue
        #expect(try Self.load(defaults).quotas == Quota.published)
        #expect(try Self.load([:]).quotas == Quota.published)
        #expect(try Self.load([:]).quotaShares == 1)
        #expect(Quota.published[.fcm] == Quota(limit: 600_000, window: 60))
        #expect(Quota.published[.expo] == Quota(limit: 600, window: 1))
        #expect(Quota.published[.whatsapp] == Quota(limit: 80, window: 1))
        #expect(Quota.published[.apns] == Quota(concurrency: 500))
    }

    /// `50/s`, `3000/min`, `off`; the concurrency and the shares as numbers.
    @Test func ratesConcurrencyAndSharesAreRead() throws {
        let options = try Self.load(["HERALD_FCM_QUOTA": "50/s", "HERALD_SENDGRID_QUOTA": " 3000 / minute ",
                                     "HERALD_EXPO_QUOTA": "off", "HERALD_APNS_CONCURRENCY": "off",
                                     "HERALD_WEBHOOK_QUOTA": "10/min", "HERALD_QUOTA_SHARES": "4"])
        #expect(options.quotas[.fcm] == Quota(limit: 50, window: 1))
        #expect(options.quotas[.sendgrid] == Quota(limit: 3000, window: 60))
        #expect(options.quotas[.expo] == nil)
        #expect(options.quotas[.apns] == nil)
        #expect(options.quotas[.webhook] == Quota(limit: 10, window: 60))
        #expect(options.quotaShares == 4)
    }

    /// Zero, negative, a bare number, an hour, NaN, exponents, too many digits, over a billion, a
    /// concurrency of 0 or over 100,000, shares of 0 or over 1,000: exit 1, naming the variable.
    @Test(arguments: [
        ("HERALD_FCM_QUOTA", "0/s"), ("HERALD_FCM_QUOTA", "-5/s"), ("HERALD_FCM_QUOTA", "fast"),
        ("HERALD_FCM_QUOTA", "50"), ("HERALD_FCM_QUOTA", "50/h"), ("HERALD_FCM_QUOTA", "nan/s"),
        ("HERALD_FCM_QUOTA", "1e3/s"), ("HERALD_WHATSAPP_QUOTA", "99999999999999999999/s"),
        ("HERALD_EXPO_QUOTA", "1000000001/s"), ("HERALD_TWILIO_QUOTA", "/s"), ("HERALD_SMTP_QUOTA", "5/s/s"),
        ("HERALD_APNS_CONCURRENCY", "0"), ("HERALD_APNS_CONCURRENCY", "-1"), ("HERALD_APNS_CONCURRENCY", "many"),
        ("HERALD_APNS_CONCURRENCY", "100001"), ("HERALD_QUOTA_SHARES", "0"), ("HERALD_QUOTA_SHARES", "1001"),
        ("HERALD_QUOTA_SHARES", "two"),
    ])
    func aValueThatIsNoQuotaExitsNamingTheVariable(key: String, value: String) {
        do {
            _ = try Self.load([key: value])
            Issue.record("\(key)=\(value) was taken")
        } catch {
            #expect("\(error)".contains(key), "\(error)")
        }
    }
}
