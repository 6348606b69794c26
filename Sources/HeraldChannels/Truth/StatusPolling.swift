import Foundation
import HeraldCore
import HeraldHTTP

/// What a provider said when asked about one message it accepted earlier.
public enum StatusPoll: Sendable, Equatable {
    /// The message's status (final or not).
    case report(TruthReport)
    /// The provider does not know the message: closed as `unknown`.
    case notFound
    /// The credentials cannot read messages; an operator must look.
    case forbidden(String)
    /// A transport error, 429 or 5xx, or an unreadable answer: ask again next time.
    case later(String)
}

/// A provider that answers "what became of message X" (Twilio's Message resource): the `statuses`
/// phase polls the deliveries it accepted until a final status, for every configured provider that
/// adopts this, the way the receipts phase asks `ReceiptChecking` providers.
///
///     if let poller = routes[.sms]?.adapter(for: .twilio)?.statusPoller,
///        poller.isPollable(messageId: sid) {
///         let answer = poller.readStatus(transport.perform(poller.statusRequest(messageId: sid)), messageId: sid)
///     }
public protocol StatusPolling: Sendable {
    var provider: Provider { get }
    /// Whether a stored message id is one the provider can be asked about; others are closed as unknown.
    func isPollable(messageId: String) -> Bool
    func statusRequest(messageId: String) -> HTTPRequest
    /// Reads the answer. Hostile input: any body, any status, never trapping.
    func readStatus(_ result: Result<HTTPResponse, TransportError>, messageId: String) -> StatusPoll
    /// The provider's error code for "no such message", stored as `final_error_code` when it says so.
    var notFoundCode: String { get }
}
