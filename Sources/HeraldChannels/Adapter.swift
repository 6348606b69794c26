import Foundation
import HeraldCore
import HeraldHTTP

/// One notification on its way to one destination: what an adapter turns into a request.
public struct Envelope: Sendable {
    public var item: QueueItem
    public var rendered: RenderedNotification
    public var destination: Destination
    public var now: Date

    public init(item: QueueItem, rendered: RenderedNotification, destination: Destination, now: Date) {
        self.item = item
        self.rendered = rendered
        self.destination = destination
        self.now = now
    }
}

/// A provider reached over HTTP (or SMTP): it builds one request for a batch of envelopes and reads the
/// answer as one outcome per envelope. Adapters are pure; the shared `HTTPTransport` executes the
/// requests. A provider that takes one message per request adopts `SingleMessageAdapter` instead and
/// speaks of one envelope at a time.
///
///     let request = try adapter.request(for: envelopes)          // envelopes.count ≤ adapter.maxBatch
///     let answers = adapter.answers(transport.perform(request), envelopes: envelopes, now: Date())
///
/// Optional capabilities are properties that are nil unless the provider has them: a configuration to
/// check when its refusals look like a slip, what a dead destination asks for, the one address all its
/// destinations share, receipts to check later, message statuses to poll, a read-only probe of its
/// credentials. What `herald doctor` checks of its credentials without sending is declared by every
/// provider (`credentialCheck`; `RegistrationTests` fails on a registered provider without one).
public protocol ProviderAdapter: Sendable {
    /// The provider it speaks for (`notification_deliveries.provider`): `.webhook`, `.apns`, …
    var provider: Provider { get }
    /// Seconds one request may take on the wire (the lease must outlast the deadline plus this).
    var timeout: Double { get }
    /// The most envelopes one request carries: 1 for a single-message provider, Expo's 100.
    var maxBatch: Int { get }
    /// Work to do before a batch of sends, outside any transaction: fetch or refresh an access token
    /// (FCM's OAuth exchange). Most adapters have nothing to do.
    func prepare(now: Date, transport: HTTPTransport) throws
    /// Shares the provider's short-lived credential (APNs' provider token, FCM's access token) with the
    /// other passes through `store`. Most adapters have none.
    func shareCredentials(through store: any CredentialStore)
    func request(for envelopes: [Envelope]) throws -> HTTPRequest
    /// One outcome per envelope, in the order of the request.
    func classify(_ result: Result<HTTPResponse, TransportError>, envelopes: [Envelope], now: Date) -> [ClassifiedResponse]

    /// The configuration to name when most of this provider's destinations are refused in a pass; nil:
    /// no refusal of it is suspected of being a configuration slip.
    var configurationCheck: ConfigurationCheck? { get }
    /// What a destination-invalid answer asks for: deactivate the device token (push), turn the channel
    /// off for the recipient (`.optOut`), or nothing (nil).
    var deadDestination: FollowUp? { get }
    /// The address every destination of this provider has (the webhook's URL); nil: the recipient's own.
    var providerAddress: String? { get }
    /// The provider's receipt checker, when its acceptances are checked later (Expo's push tickets).
    var receipts: (any ReceiptChecking)? { get }
    /// The provider's status poller, when it answers "what became of message X" (Twilio).
    var statusPolling: (any StatusPolling)? { get }
    /// A read-only request that shows whether the provider takes herald's credentials, sending
    /// nothing (`herald doctor --online`); nil when the provider has none.
    var credentialProbe: CredentialProbe? { get }
    /// What `herald doctor` checks of the credentials without sending: a token signed or fetched, the
    /// keys' shapes, or `CredentialCheck.unchecked(why)` when they show only when the provider sends.
    /// Every provider declares one; nil only until it does (`RegistrationTests` fails on it).
    var credentialCheck: CredentialCheck? { get }
}

extension ProviderAdapter {
    public var maxBatch: Int { 1 }
    public func prepare(now: Date, transport: HTTPTransport) throws {}
    public func shareCredentials(through store: any CredentialStore) {}
    public var configurationCheck: ConfigurationCheck? { nil }
    public var deadDestination: FollowUp? { nil }
    public var providerAddress: String? { nil }
    public var receipts: (any ReceiptChecking)? { nil }
    public var statusPolling: (any StatusPolling)? { nil }
    public var credentialProbe: CredentialProbe? { nil }
    public var credentialCheck: CredentialCheck? { nil }

    /// The provider's answers to one request, exactly one per envelope (one the answer did not cover is a
    /// retry), each carrying the follow-ups the adapter declares: a destination-invalid answer gets the
    /// adapter's `deadDestination`.
    public func answers(_ result: Result<HTTPResponse, TransportError>, envelopes: [Envelope],
                        now: Date) -> [ClassifiedResponse] {
        let classified = classify(result, envelopes: envelopes, now: now)
        return envelopes.indices.map { i in
            var answer = i < classified.count ? classified[i]
                : ClassifiedResponse(.retry(after: nil, code: "missing_answer", message: "the provider's answer did not cover this message"))
            if let dead = deadDestination, case .destinationInvalid = answer.outcome, !answer.followUps.contains(dead) {
                answer.followUps.append(dead)
            }
            return answer
        }
    }
}

/// A provider that takes one message per request: it builds and classifies one envelope, and its batch
/// of one is made from that.
///
///     let request = try apns.request(for: envelope)
///     let outcome = apns.classify(transport.perform(request), now: Date()).outcome
public protocol SingleMessageAdapter: ProviderAdapter {
    func request(for envelope: Envelope) throws -> HTTPRequest
    func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse
}

extension SingleMessageAdapter {
    public var maxBatch: Int { 1 }

    public func request(for envelopes: [Envelope]) throws -> HTTPRequest {
        guard envelopes.count == 1 else {
            throw AdapterError("\(provider.rawValue) takes one message per request, not \(envelopes.count)")
        }
        return try request(for: envelopes[0])
    }

    public func classify(_ result: Result<HTTPResponse, TransportError>, envelopes: [Envelope],
                         now: Date) -> [ClassifiedResponse] {
        [classify(result, now: now)]
    }
}

/// A provider whose acceptances are checked later by receipt (Expo's push tickets): the receipts phase
/// asks it for the receipts of the tickets its answers declared (`FollowUp.checkReceipt`).
public protocol ReceiptChecking: Sendable {
    var provider: Provider { get }
    /// The most ticket ids one receipts request may carry.
    var receiptBatch: Int { get }
    func receiptsRequest(ids: [String]) -> HTTPRequest
    func classifyReceipts(_ result: Result<HTTPResponse, TransportError>) -> ReceiptsResult
}

/// How a channel is delivered in this run.
public enum ChannelRoute: Sendable {
    /// Printed as a JSON line (development, demos, dry runs of a channel).
    case log
    /// Written to the `inbox` table in the same transaction that records the row as sent.
    case inbox
    /// Sent through providers over HTTP (or SMTP), chosen by the destination's provider: push reaches
    /// each device token through its own provider (apns, fcm, expo); other channels use `order`'s
    /// first and fail over to the next ones (HERALD_<CHANNEL>_PROVIDERS).
    case providers([Provider: any ProviderAdapter], order: [Provider] = [])

    /// The provider that serves destinations with no provider of their own (phones, addresses, URLs);
    /// nil for a provider route without any.
    public var provider: Provider? {
        switch self {
        case .log: .log
        case .inbox: .inbox
        case .providers(let p, let order): order.first ?? p.keys.sorted().first
        }
    }

    /// The adapter for a destination's provider, if this route has one.
    public func adapter(for provider: Provider) -> (any ProviderAdapter)? {
        if case .providers(let p, _) = self { return p[provider] }
        return nil
    }

    /// The receipt checkers among this route's providers.
    public var receiptCheckers: [any ReceiptChecking] {
        guard case .providers(let p, _) = self else { return [] }
        return p.keys.sorted().compactMap { p[$0]?.receipts }
    }

    /// The providers failover may move a destination along: the channel's order, those with an adapter.
    public var failoverOrder: [Provider] {
        guard case .providers(let p, let order) = self else { return [] }
        return order.filter { p[$0] != nil }
    }

    /// The status pollers among this route's providers (Twilio: message status by id).
    public var statusPollers: [any StatusPolling] {
        guard case .providers(let p, _) = self else { return [] }
        return p.keys.sorted().compactMap { p[$0]?.statusPolling }
    }
}

/// Raised while building a request from a row that cannot be sent as it is, or while reading an
/// adapter's configuration.
public struct AdapterError: Error, CustomStringConvertible {
    public var description: String
    /// The setting at fault, when the error is about one (`FCM_SERVICE_ACCOUNT_FILE`): the configuration
    /// check names it, and its value, instead of the adapter's own words for it.
    public var setting: String?
    /// What is wrong with the setting's value, without a subject (`has no "client_email" field`).
    public var detail: String?

    public init(_ description: String) { self.description = description }

    /// An error about `setting`'s value, described as `subject` + `detail` ("… file" + " has no …").
    public init(setting: String, subject: String, detail: String) {
        self.description = subject + detail
        self.setting = setting
        self.detail = detail
    }
}
