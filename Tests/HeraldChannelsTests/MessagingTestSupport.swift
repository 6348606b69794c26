import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// Certificates and a transport trusting them, for the messaging adapters' tests.
final class MessagingRig {
    let certificates: TestCertificates
    private var _transport: HTTPTransport?
    var transport: HTTPTransport { _transport! }

    init() throws {
        certificates = try TestCertificates.make()
        _transport = try HTTPTransport(options: .init(caFile: certificates.caFile, connectTimeout: 3))
    }

    func remove() { certificates.remove() }

    /// Closes the transport's connections. Call before shutting a fake down: a server shutting down
    /// with client connections still open waits for them (seconds).
    func closeTransport() { _transport = nil }

    /// An https base URL where a connection is refused.
    func closedBaseURL() throws -> String { "https://localhost:\(RefusingPort.port)" }
}

/// A rendered notification on its way to `address`.
func messagingEnvelope(provider: Provider, address: String, kind: String = "reminder", priority: Priority = .normal,
                       severity: Severity? = nil, title: String = "Reminder",
                       body: String = "Time for your evening walk", locale: String = "en",
                       category: String? = nil, sound: String? = "default", id: UUID = UUID()) -> Envelope {
    let item = QueueItem(id: id, recipientUserId: UUID(), channelRaw: "push", kindRaw: kind, severity: severity,
                         priority: priority, scheduledAt: Date())
    let link = "herald://reminders/\(id.lowercased)"
    let rendered = RenderedNotification(
        title: title, body: body,
        data: ["kind": .string(kind), "queue_id": .string(id.lowercased), "deep_link": .string(link)],
        deepLink: link, category: category, badge: 3, locale: locale, sound: sound)
    return Envelope(item: item, rendered: rendered,
                    destination: Destination(provider: provider, address: address, locale: locale), now: Date())
}

/// Records an issue when a secret shows in an outcome's message or code.
func expectNoSecret(_ outcomes: [DeliveryOutcome], _ secrets: [String],
                    sourceLocation: SourceLocation = #_sourceLocation) {
    for outcome in outcomes {
        let text = (outcome.message ?? "") + " " + (outcome.code ?? "")
        for secret in secrets where text.contains(secret) {
            Issue.record("secret leaked in \(outcome)", sourceLocation: sourceLocation)
        }
    }
}

extension DeliveryOutcome {
    var retryAfter: Double? {
        if case .retry(let after, _, _) = self { return after }
        return nil
    }

    var messageId: String? {
        if case .delivered(let id) = self { return id }
        return nil
    }
}

extension HTTPRequest {
    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// JSON of a fake request's body.
func jsonBody(_ request: FakeRequest) throws -> JSONValue {
    try JSONValue.parse(Data(request.body))
}
