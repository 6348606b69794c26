import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// An envelope for a push to `token`, with a fixed queue id.
func pushEnvelope(token: String, provider: Provider, now: Date = Date(), title: String = "Sleep pattern",
                  body: String = "Open the app for details.", kind: Kind = .patternAlert,
                  severity: Severity? = .attention, priority: Priority = .normal,
                  id: UUID = UUID(), alertStateId: UUID? = UUID(),
                  data: [String: JSONValue]? = nil) -> Envelope {
    let item = QueueItem(id: id, recipientUserId: UUID(), alertStateId: alertStateId, channelRaw: "push",
                         kindRaw: kind.rawValue, severity: severity, priority: priority,
                         scheduledAt: now.addingTimeInterval(-30))
    let rendered = RenderedNotification(
        title: title, body: body,
        data: data ?? ["kind": .string(kind.rawValue), "queue_id": .string(id.lowercased),
                       "deep_link": "herald://alerts/1", "level": 7],
        deepLink: "herald://alerts/1", category: "ALERT_CATEGORY", badge: 3)
    return Envelope(item: item, rendered: rendered,
                    destination: Destination(provider: provider, address: token), now: now)
}

extension Result {
    var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}

/// Fails the test when any secret appears in the outcome's message or code.
func expectNoSecrets(_ outcome: DeliveryOutcome, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    let text = (outcome.message ?? "") + " " + (outcome.code ?? "")
    for secret in secrets where !secret.isEmpty {
        #expect(!text.contains(secret), "a secret leaked into \(outcome)", sourceLocation: sourceLocation)
        // A PEM's base64 lines leak too, even without the armour.
        for line in secret.split(separator: "\n") where line.count > 20 && !line.hasPrefix("-----") {
            #expect(!text.contains(line), "a key line leaked into \(outcome)", sourceLocation: sourceLocation)
        }
    }
}

/// The JSON object at the top of a request body.
func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

/// A base URL on loopback where a connection is refused.
func closedBaseURL() throws -> String { "https://localhost:\(RefusingPort.port)" }
