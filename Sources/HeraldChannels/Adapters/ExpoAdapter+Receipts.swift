import Foundation
import HeraldCore
import HeraldHTTP

/// Expo push receipts: whether Apple or Google took a message whose ticket was "ok", asked for by the
/// receipts phase some minutes after the send.
extension ExpoAdapter {
    /// `POST /--/api/v2/push/getReceipts` for at most 1,000 ticket ids (more are dropped: the caller
    /// chunks; see `maxReceiptIds`).
    public func receiptsRequest(ids: [String]) -> HTTPRequest {
        let body: JSONValue = ["ids": .array(ids.prefix(Self.maxReceiptIds).map { .string($0) })]
        return HTTPRequest(method: "POST", url: receiptsURL, headers: headers(), body: Array(body.jsonText.utf8),
                           timeout: timeout, version: .http2)
    }

    /// The receipts Expo has ready. Ids asked for but absent are not ready yet (ask again later; after
    /// about a day Expo no longer has them).
    public func classifyReceipts(_ result: Result<HTTPResponse, TransportError>) -> ReceiptsResult {
        let response: HTTPResponse
        switch result {
        case .failure(let error):
            return .failed(AdapterSupport.transportOutcome(error, provider: .expo, secrets: secrets))
        case .success(let r):
            response = r
        }
        let json = AdapterSupport.json(response)
        if let errors = json?["errors"], case .array(let list) = errors, let first = list.first {
            let outcome = Self.requestError(code: first["code"]?.stringValue, message: first["message"]?.stringValue,
                                            status: response.status, retryAfter: nil)
            return .failed(AdapterSupport.redact(outcome, secrets: secrets))
        }
        guard (200..<300).contains(response.status) else {
            let outcome = Self.requestError(code: nil, message: AdapterSupport.snippet(response),
                                            status: response.status, retryAfter: nil)
            return .failed(AdapterSupport.redact(outcome, secrets: secrets))
        }
        guard case .object(let data)? = json?["data"] else {
            return .failed(.retry(after: nil, code: "malformed_response",
                                  message: "expo answered \(response.status) without receipts: \(AdapterSupport.redact(AdapterSupport.snippet(response), secrets: secrets))"))
        }
        var receipts: [String: ExpoReceipt] = [:]
        for (id, receipt) in data {
            switch receipt["status"]?.stringValue {
            case "ok":
                receipts[id] = .ok
            case "error":
                let code = AdapterSupport.readable(receipt["details"]?["error"]?.stringValue ?? "expo_error",
                                                   maxUTF8Bytes: AdapterSupport.maxCodeBytes)
                let message = receipt["message"]?.stringValue.map {
                    AdapterSupport.redact(AdapterSupport.readable($0), secrets: secrets)
                } ?? code
                receipts[id] = .error(code: code, message: Truncation.prefix(message, maxUTF8Bytes: AdapterSupport.maxMessageBytes))
            default:
                // Any other status ("pending", none, one Expo adds later) is not a final word: the
                // receipt is asked for again, like one not in the answer, until the phase gives up.
                continue
            }
        }
        return .receipts(receipts)
    }
}

/// One Expo push receipt: whether Apple or Google accepted the message.
public enum ExpoReceipt: Sendable, Equatable {
    case ok
    /// `details.error` ("DeviceNotRegistered", "MessageTooBig", …) and Expo's message.
    case error(code: String, message: String)

    /// True when the token is dead and must be deactivated.
    public var isDeviceNotRegistered: Bool {
        if case .error("DeviceNotRegistered", _) = self { return true }
        return false
    }

    /// As a delivery outcome: ok → delivered; errors as for push tickets (DeviceNotRegistered →
    /// destinationInvalid, MessageRateExceeded → retry, InvalidCredentials → permanent, …).
    public var outcome: DeliveryOutcome {
        switch self {
        case .ok: .delivered(messageId: nil)
        case .error(let code, let message): ExpoAdapter.errorOutcome(code: code, message: message)
        }
    }
}

/// The answer to one receipts request.
public enum ReceiptsResult: Sendable, Equatable {
    /// The receipts that are ready, by ticket id. An id asked for and absent here is not ready yet.
    case receipts([String: ExpoReceipt])
    /// The request itself failed (transport, 429/5xx, `errors`, unreadable body): ask again later
    /// when the outcome is a retry.
    case failed(DeliveryOutcome)

    /// The receipt for `id`; nil when not ready yet or the request failed.
    public func receipt(for id: String) -> ExpoReceipt? {
        if case .receipts(let r) = self { return r[id] }
        return nil
    }

    /// The ids of `asked` with no receipt yet.
    public func notReady(_ asked: [String]) -> [String] {
        guard case .receipts(let r) = self else { return asked }
        return asked.filter { r[$0] == nil }
    }
}
