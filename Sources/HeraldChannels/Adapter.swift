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

/// A provider reached over HTTP. Adapters are pure: they build requests and classify responses; the
/// shared `HTTPTransport` executes them concurrently.
///
///     let request = try adapter.request(for: envelope)
///     let outcome = adapter.classify(transport.perform(request))
public protocol HTTPAdapter: Sendable {
    /// The provider it speaks for (`notification_deliveries.provider`): `.webhook`, `.apns`, …
    var provider: Provider { get }
    /// Seconds one request may take on the wire (the lease must outlast the deadline plus this).
    var timeout: Double { get }
    /// Work to do before a batch of sends, outside any transaction: fetch or refresh an access token
    /// (FCM's OAuth exchange). Most adapters have nothing to do.
    func prepare(now: Date, transport: HTTPTransport) throws
    func request(for envelope: Envelope) throws -> HTTPRequest
    func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse
    /// The configuration to name when most of this provider's destinations are refused in a pass.
    var configuration: ConfigurationCheck { get }
    /// What a destination-invalid answer asks for: deactivate the device token (push), turn the channel
    /// off for the recipient (`.optOut`), or nothing (nil).
    var deadDestination: FollowUp? { get }
    /// The address every destination of this provider has (the webhook's URL); nil: the recipient's own.
    var providerAddress: String? { get }
}

extension HTTPAdapter {
    public func prepare(now: Date, transport: HTTPTransport) throws {}
    public var deadDestination: FollowUp? { nil }
    public var providerAddress: String? { nil }
    /// No destination-invalid answer is suspected of being a configuration slip.
    public var configuration: ConfigurationCheck {
        ConfigurationCheck(hint: "check the \(provider.rawValue) configuration", codes: [])
    }
}

/// A provider that takes many messages in one request (Expo: up to 100) and answers for each.
public protocol BatchHTTPAdapter: Sendable {
    var provider: Provider { get }
    /// Seconds one request may take on the wire.
    var timeout: Double { get }
    /// The most envelopes one request may carry.
    var maxBatch: Int { get }
    func prepare(now: Date, transport: HTTPTransport) throws
    func request(for envelopes: [Envelope]) throws -> HTTPRequest
    /// One outcome per envelope, in the order of the request.
    func classify(_ result: Result<HTTPResponse, TransportError>, count: Int, now: Date) -> [ClassifiedResponse]
    /// The same, knowing the envelopes sent (their rows' attempts and ids): what a pass should call. By
    /// default the count-only classification.
    func classify(_ result: Result<HTTPResponse, TransportError>, envelopes: [Envelope], now: Date) -> [ClassifiedResponse]
    /// The configuration to name when most of this provider's destinations are refused in a pass.
    var configuration: ConfigurationCheck { get }
    /// What a destination-invalid answer asks for (see `HTTPAdapter.deadDestination`).
    var deadDestination: FollowUp? { get }
}

extension BatchHTTPAdapter {
    public func prepare(now: Date, transport: HTTPTransport) throws {}
    public var deadDestination: FollowUp? { nil }
    public func classify(_ result: Result<HTTPResponse, TransportError>, envelopes: [Envelope],
                         now: Date) -> [ClassifiedResponse] {
        classify(result, count: envelopes.count, now: now)
    }
    /// No destination-invalid answer is suspected of being a configuration slip.
    public var configuration: ConfigurationCheck {
        ConfigurationCheck(hint: "check the \(provider.rawValue) configuration", codes: [])
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

/// An adapter of either shape.
public enum ProviderAdapter: Sendable {
    case single(any HTTPAdapter)
    case batch(any BatchHTTPAdapter)

    public var provider: Provider {
        switch self {
        case .single(let a): a.provider
        case .batch(let a): a.provider
        }
    }

    public var timeout: Double {
        switch self {
        case .single(let a): a.timeout
        case .batch(let a): a.timeout
        }
    }

    public func prepare(now: Date, transport: HTTPTransport) throws {
        switch self {
        case .single(let a): try a.prepare(now: now, transport: transport)
        case .batch(let a): try a.prepare(now: now, transport: transport)
        }
    }

    public var configuration: ConfigurationCheck {
        switch self {
        case .single(let a): a.configuration
        case .batch(let a): a.configuration
        }
    }

    /// The provider's receipt checker, when its acceptances are checked later.
    public var receipts: (any ReceiptChecking)? {
        switch self {
        case .single(let a): a as? any ReceiptChecking
        case .batch(let a): a as? any ReceiptChecking
        }
    }

    /// The provider's status poller, when it answers "what became of message X" (Twilio).
    public var statusPoller: (any StatusPolling)? {
        switch self {
        case .single(let a): a as? any StatusPolling
        case .batch(let a): a as? any StatusPolling
        }
    }

    /// The address every destination of this provider has (the webhook's URL), if it has one.
    public var providerAddress: String? {
        if case .single(let a) = self { return a.providerAddress }
        return nil
    }

    /// The provider's answers to one request, one per envelope, each carrying the follow-ups the adapter
    /// declares: a destination-invalid answer gets the adapter's `deadDestination`.
    public func classify(_ result: Result<HTTPResponse, TransportError>, envelopes: [Envelope],
                         now: Date) -> [ClassifiedResponse] {
        let answers: [ClassifiedResponse]
        let dead: FollowUp?
        switch self {
        case .single(let a): (answers, dead) = ([a.classify(result, now: now)], a.deadDestination)
        case .batch(let a): (answers, dead) = (a.classify(result, envelopes: envelopes, now: now), a.deadDestination)
        }
        guard let dead else { return answers }
        return answers.map { answer in
            guard case .destinationInvalid = answer.outcome, !answer.followUps.contains(dead) else { return answer }
            var a = answer
            a.followUps.append(dead)
            return a
        }
    }
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
    case providers([Provider: ProviderAdapter], order: [Provider] = [])

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
    public func adapter(for provider: Provider) -> ProviderAdapter? {
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
        return p.keys.sorted().compactMap { p[$0]?.statusPoller }
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
