import Foundation
import HeraldCore
import HeraldHTTP

/// Expo Push Service (providers.md §3): up to 100 messages per `POST /--/api/v2/push/send`, one push
/// ticket per message in order; receipts fetched later with `POST /--/api/v2/push/getReceipts`.
///
///     let expo = try ExpoAdapter(accessToken: env["EXPO_ACCESS_TOKEN"], baseURL: env["EXPO_URL"])
///     let request = try expo.request(for: envelopes)          // envelopes.count ≤ expo.maxBatch
///     let outcomes = expo.classify(transport.perform(request), count: envelopes.count, now: now)
///
/// A ticket "ok" means Expo took the message, not that the device got it: `delivered(ticketId)` stores
/// the ticket id, and `receiptsRequest(ids:)` / `classifyReceipts(_:)` later tell whether Apple or Google
/// accepted it (DeviceNotRegistered there deactivates the token).
public struct ExpoAdapter: ProviderAdapter, ReceiptChecking {
    /// A dead token is deactivated.
    public var deadDestination: FollowUp? { .deactivateDestination }
    public let provider = Provider.expo
    /// Expo takes at most 100 messages per send request.
    public let maxBatch = 100
    /// Expo takes at most 1,000 ids per receipts request.
    public static let maxReceiptIds = 1000
    public var receiptBatch: Int { Self.maxReceiptIds }
    /// e.g. "https://exp.host" (no trailing slash).
    public let baseURL: String
    /// Sent as `Authorization: Bearer` when "enhanced push security" is on; nil sends no header.
    private let accessToken: String?
    /// The Android notification channel for kinds without one of their own in `androidChannels`
    /// (HERALD_ANDROID_CHANNEL); nil: the kind's built-in default (`defaultAndroidChannels`).
    public var androidChannelId: String?
    /// The Android notification channel per kind (HERALD_ANDROID_CHANNEL_<KIND>), by raw kind.
    public var androidChannels: [String: String]
    public var timeout: Double
    /// The rows whose message Expo refused as too big once: their next message is cut to
    /// `shrunkPayloadBytes`, and a second refusal fails them. Shared by copies of the adapter.
    public let tooBig = ExpoTooBigMemo()

    /// The Android channel of each kind when nothing is configured. The app creates these channels
    /// (`setNotificationChannelAsync`); a message naming a channel the device lacks is not shown.
    public static let defaultAndroidChannels: [String: String] = [
        "pattern_alert": "herald-alerts",
        "daily_forecast": "herald-forecasts",
        "prompt": "herald-prompts",
        "reminder": "herald-reminders",
        "system": "herald-system",
    ]
    /// What a message is cut to on its one retry after Expo's MessageTooBig: three quarters of 4,096.
    public static let shrunkPayloadBytes = Truncation.pushPayloadBytes * 3 / 4
    /// The back-off after MessageRateExceeded, by attempt: 5 s, 30 s, then 2 min.
    public static let rateExceededSchedule: [Double] = [5, 30, 120]

    public init(accessToken: String?, baseURL: String? = nil, androidChannelId: String? = nil,
                androidChannels: [String: String] = [:], timeout: Double = 15) throws {
        self.baseURL = try AdapterSupport.baseURL(baseURL, default: "https://exp.host", variable: "EXPO_URL")
        let token = accessToken?.trimmingCharacters(in: .whitespacesAndNewlines)
        self.accessToken = (token?.isEmpty ?? true) ? nil : token
        self.androidChannelId = androidChannelId
        self.androidChannels = androidChannels
        self.timeout = timeout
    }

    /// The Android channel for a row: the data's `channel_id`, else the kind's configured channel, else
    /// the one its notification type names, else HERALD_ANDROID_CHANNEL, else the kind's default; nil
    /// for a type with nothing configured.
    public func androidChannel(for envelope: Envelope) -> String? {
        let kind = envelope.item.kindRaw
        return envelope.rendered.data["channel_id"]?.stringValue ?? androidChannels[kind]
            ?? envelope.rendered.androidChannel ?? androidChannelId ?? Self.defaultAndroidChannels[kind]
    }

    /// The wait before the next attempt after MessageRateExceeded (5 s, 30 s, then 2 min), `attempt`
    /// counting from 1.
    public static func rateExceededWait(attempt: Int) -> Double {
        rateExceededSchedule[min(max(attempt, 1), rateExceededSchedule.count) - 1]
    }

    public var sendURL: String { baseURL + "/--/api/v2/push/send" }
    public var receiptsURL: String { baseURL + "/--/api/v2/push/getReceipts" }

    /// What no error message may quote: the access token.
    var secrets: [String] { accessToken.map { [$0] } ?? [] }

    // MARK: Sending

    /// Expo's priority for a row: high priority or critical severity → "high" (APNs 10, FCM high);
    /// normal → "default" (the platform's default: high on iOS, normal on Android); low → "normal"
    /// (APNs 5: delivered when convenient, batched, as low-priority notifications may be).
    public static func priority(for item: QueueItem) -> String {
        switch PushUrgency.of(item) {
        case .immediate: "high"
        case .normal: "default"
        case .low: "normal"
        }
    }

    /// One message object, its texts shortened (body first) so its JSON is at most 4,096 bytes. When the
    /// data object alone is too big, only its `kind`, `queue_id` and `deep_link` are kept. Throws when
    /// even that does not fit; `request(for:)` then throws for any batch holding it, and the pass sends
    /// the batch without it, failing it alone.
    ///
    /// A silent row is data-only: `_contentAvailable: true` and no title, body, sound or badge. An image
    /// goes to `richContent.image` with `mutableContent: true` (and stays in `data.image_url`); action
    /// buttons travel in `data.actions` with the row's `categoryId`.
    public func message(for envelope: Envelope) throws -> JSONValue {
        let r = envelope.rendered
        let limit = tooBig.contains(envelope.item.id) ? Self.shrunkPayloadBytes : Truncation.pushPayloadBytes
        var base: [String: JSONValue] = [
            "to": .string(envelope.destination.address),
            "data": .object(r.data),
            "priority": .string(Self.priority(for: envelope.item)),
            // A copy sent again replaces the first (Expo's SDK types name it; its docs do not yet).
            "collapseId": .string(CollapseKey.of(envelope.item)),
        ]
        if let channel = androidChannel(for: envelope) { base["channelId"] = .string(channel) }
        if r.silent {
            base["_contentAvailable"] = true
        } else {
            base["badge"] = .number(Double(r.badge))
            base["sound"] = r.sound.map { JSONValue.string($0) } ?? JSONValue.null
            base["interruptionLevel"] = .string(InterruptionLevel.of(severity: envelope.item.severity,
                                                                     priority: envelope.item.priority).rawValue)
            if let category = r.category { base["categoryId"] = .string(category) }
            if let image = r.imageURL {
                base["richContent"] = ["image": .string(image)]
                base["mutableContent"] = true
            }
        }
        func encode(_ title: String, _ body: String) -> [UInt8] {
            var m = base
            if !r.silent {
                m["title"] = .string(title)
                m["body"] = .string(body)
            }
            return Array(JSONValue.object(m).jsonText.utf8)
        }
        var fitted = Truncation.fit(title: r.title, body: r.body, limitBytes: limit, encode: encode)
        if fitted == nil {
            // The data alone is too big: keep only what the app needs to open the notification.
            base["data"] = .object(r.data.filter { ["kind", "queue_id", "deep_link"].contains($0.key) })
            fitted = Truncation.fit(title: r.title, body: r.body, limitBytes: limit, encode: encode)
        }
        guard let fitted else {
            throw AdapterError("expo: the message cannot be made to fit in \(limit) bytes, even with its title and body "
                               + "cut and its data reduced to kind, queue_id and deep_link: the token or one of those is too long")
        }
        if !r.silent {
            base["title"] = .string(fitted.title)
            base["body"] = .string(fitted.body)
        }
        return .object(base)
    }

    public func request(for envelopes: [Envelope]) throws -> HTTPRequest {
        guard !envelopes.isEmpty else { throw AdapterError("expo: no messages to send") }
        guard envelopes.count <= maxBatch else {
            throw AdapterError("expo: \(envelopes.count) messages in one request; at most \(maxBatch)")
        }
        let messages = try envelopes.map { try message(for: $0) }
        return HTTPRequest(method: "POST", url: sendURL, headers: headers(),
                           body: Array(JSONValue.array(messages).jsonText.utf8), timeout: timeout, version: .http2)
    }

    /// The headers of every request, sends and receipts alike.
    func headers() -> [(String, String)] {
        var h = [("content-type", "application/json"), ("accept", "application/json")]
        if let accessToken { h.append(("authorization", "Bearer \(accessToken)")) }
        return h
    }

    /// DeviceNotRegistered is Expo relaying Apple's or Google's word that the token is dead: always acted
    /// on, never suspected of being a configuration slip.
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check EXPO_ACCESS_TOKEN and the Expo project's push credentials", codes: [])
    }

    /// Its tickets' receipts are checked later, by the receipts phase.
    public var receipts: (any ReceiptChecking)? { self }
}

/// The rows Expo refused as too big once (in this process): their next message is cut shorter. Bounded:
/// past 10,000 rows it starts over (a row then gets one more full-size try).
public final class ExpoTooBigMemo: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: Set<UUID> = []
    static let capacity = 10_000

    public init() {}

    public func contains(_ id: UUID) -> Bool { lock.withLock { ids.contains(id) } }

    /// True when `id` was not there yet.
    @discardableResult
    public func insert(_ id: UUID) -> Bool {
        lock.withLock {
            if ids.count >= Self.capacity { ids.removeAll() }
            return ids.insert(id).inserted
        }
    }

    public func remove(_ id: UUID) { _ = lock.withLock { ids.remove(id) } }
}
