import Foundation
import Testing
@testable import HeraldCore

/// What is stored or said about URLs and payloads that may carry secrets or health details.
@Suite struct RedactionTests {
    @Test(arguments: [
        ("https://user:pass@hooks.example.com/x", "https://hooks.example.com/x"),
        ("https://hooks.example.com/x?token=abc", "https://hooks.example.com/x"),
        ("https://hooks.example.com/x#frag", "https://hooks.example.com/x"),
        ("https://user:p%40ss@hooks.example.com:8443/a/b?k=1#f", "https://hooks.example.com:8443/a/b"),
        ("http://user@127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("HTTPS://u:p@Hooks.Example.com/x", "HTTPS://Hooks.Example.com/x"),
        ("https://u:p@ss@hooks.example.com/x", "https://hooks.example.com/x"),     // the last @ ends the userinfo
        ("https://hooks.example.com/users/@me?x=1", "https://hooks.example.com/users/@me"),  // an @ in the path stays
        ("https://hooks.example.com?key=1", "https://hooks.example.com"),
        ("https://hooks.example.com/x", "https://hooks.example.com/x"),
    ])
    func urlLosesUserinfoQueryAndFragment(_ input: String, _ expected: String) {
        #expect(Redaction.url(input) == expected)
        #expect(Redaction.storableAddress(input) == expected)
        #expect(Destination(provider: .webhook, address: input).storableAddress == expected)
    }

    @Test(arguments: ["+15551234567", "ada@example.com", "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]",
                      "a1b2c3d4e5f6", "webhook", "00000000-0000-0000-0000-00000000000a", "ftp://u:p@x/y?z", ""])
    func otherAddressesAreUnchanged(_ address: String) {
        #expect(Redaction.url(address) == nil)
        #expect(Redaction.storableAddress(address) == address)
    }

    @Test func describeJSONSaysWhatNotWhat() {
        #expect(Redaction.describeJSON(#""secret health detail""#) == "a string of 22 bytes")
        #expect(Redaction.describeJSON("[1,2,3]") == "an array of 3 elements")
        #expect(Redaction.describeJSON("[\"x\"]") == "an array of 1 element")
        #expect(Redaction.describeJSON("42") == "a number")
        #expect(Redaction.describeJSON("true") == "a boolean")
        #expect(Redaction.describeJSON("null") == "null")
        #expect(Redaction.describeJSON("secret health detail") == "not JSON (20 bytes)")
        #expect(Redaction.describeJSON("") == "empty")
    }

    /// A payload that is not an object fails with a message that says what it is, never what it holds:
    /// the message becomes last_error and a warning.
    @Test(arguments: [#""secret health detail""#, #"["secret health detail"]"#, "secret health detail", "7"])
    func malformedPayloadIsNotQuoted(_ payload: String) {
        var s = Scenario(); s.payload = payload
        guard case .fail(let message) = s.decide().decision else { Issue.record("expected fail"); return }
        #expect(message.hasPrefix("malformed payload: not a JSON object ("), "\(message)")
        #expect(!message.contains("secret"), "\(message)")
    }

    @Test func forecastDateIsQuotedOnlyWhenItLooksLikeADate() {
        var s = Scenario(); s.kind = "daily_forecast"; s.linksAlert = false; s.alert = nil
        s.payload = #"{"date":"25/01/2026"}"#
        guard case .fail(let dated) = s.decide().decision else { Issue.record("expected fail"); return }
        #expect(dated == "malformed payload: daily_forecast date '25/01/2026' is not YYYY-MM-DD")
        s.payload = #"{"date":"my migraine diary"}"#
        guard case .fail(let worded) = s.decide().decision else { Issue.record("expected fail"); return }
        #expect(worded == "malformed payload: daily_forecast date (a string of 19 bytes) is not YYYY-MM-DD")
    }
}
