import Foundation
import Testing
@testable import HeraldCore

@Suite struct ProviderTests {
    @Test func everyProviderHasItsChannel() {
        #expect(Provider.allCases.filter { $0.channel == .push } == [.apns, .fcm, .expo])
        #expect(Provider.allCases.filter(\.issuesDeviceTokens) == [.apns, .fcm, .expo])
        #expect(Provider.twilio.channel == .sms)
        #expect(Provider.smtp.channel == .email && Provider.sendgrid.channel == .email)
        #expect(Provider.inbox.channel == .inApp)
        #expect(Provider.log.channel == nil)
        // The raw values are what the database stores.
        #expect(Provider.allCases.map(\.rawValue)
                == ["apns", "fcm", "expo", "twilio", "whatsapp", "sendgrid", "smtp", "webhook", "inbox", "log"])
    }

    /// `device_tokens.provider` is an app's text: only a push provider is a push destination.
    @Test(arguments: [
        ("apns", Provider.apns as Provider?), ("fcm", .fcm), ("expo", .expo),
        ("APNS", nil), ("", nil), ("huawei", nil), ("twilio", nil), ("log", nil), ("inbox", nil),
        ("apns\u{0}", nil), (String(repeating: "x", count: 500), nil),
    ])
    func aDeviceTokensProviderIsReadStrictly(_ raw: String, _ expect: Provider?) {
        switch Provider.ofDeviceToken(raw) {
        case .success(let p): #expect(p == expect)
        case .failure(let why):
            #expect(expect == nil)
            #expect(why.description.contains("push providers: apns, fcm, expo"))
            #expect(why.description.count < 200, "an app's long text is clipped")
            #expect(!why.description.contains("\u{0}"))
        }
    }

    @Test func aTokenWithoutAProviderIsNotTakenForAPNs() {
        guard case .failure(let why) = Provider.ofDeviceToken(nil) else { Issue.record("nil became a provider"); return }
        #expect(why.description == "the device token has no provider")
    }

    @Test func aNonPushProviderIsNamedAsSuch() {
        guard case .failure(let why) = Provider.ofDeviceToken("twilio") else { Issue.record("twilio taken for push"); return }
        #expect(why.description.contains("'twilio' is not a push provider"))
        guard case .failure(let unknown) = Provider.ofDeviceToken("huawei") else { Issue.record("huawei taken for push"); return }
        #expect(unknown.description.contains("'huawei' is unknown"))
    }
}
