import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP

/// The team's forecast insight service, as the settings name it (`HERALD_FORECAST_INSIGHT_URL`,
/// `HERALD_FORECAST_INSIGHT_SECRET`, `HERALD_FORECAST_INSIGHT_TIMEOUT_SECONDS`): its requests, signed
/// as the webhook channel signs its own (Standard Webhooks, `WebhookSigner`). What the requests and
/// answers hold is `ForecastInsight`'s.
///
///     let service = try ForecastInsightService.load(settings)   // nil when the URL is not set
///     let request = service?.request(id: "forecast:…:2026-01-25", body: body, now: now)
public struct ForecastInsightService: Sendable {
    public let url: String
    public let signer: WebhookSigner
    /// Seconds one request may take, connection included.
    public var timeout: Double

    /// The seconds HERALD_FORECAST_INSIGHT_TIMEOUT_SECONDS may give: the phase waits for the answers
    /// before the pass delivers.
    static let timeoutRange = 1...60

    public init(url: String, signer: WebhookSigner, timeout: Double = 10) {
        self.url = url
        self.signer = signer
        self.timeout = timeout
    }

    /// The service the settings configure; nil without `HERALD_FORECAST_INSIGHT_URL`. A URL without a
    /// secret, a secret without a URL, a URL that is not http(s) or a malformed secret exits 1.
    static func load(_ settings: Settings) throws -> ForecastInsightService? {
        let secret = try settings.secret("HERALD_FORECAST_INSIGHT_SECRET")
        guard let url = settings["HERALD_FORECAST_INSIGHT_URL"] else {
            if secret != nil {
                throw ConfigError("HERALD_FORECAST_INSIGHT_SECRET is set but HERALD_FORECAST_INSIGHT_URL is not: set the service's https URL")
            }
            return nil
        }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "https" || scheme == "http", parsed.host != nil else {
            // Not quoted: a URL may carry a password or a key.
            throw ConfigError("HERALD_FORECAST_INSIGHT_URL must be an http(s) URL with a host")
        }
        guard let secret else {
            throw ConfigError("HERALD_FORECAST_INSIGHT_URL is set but HERALD_FORECAST_INSIGHT_SECRET is not: set it "
                + "(or HERALD_FORECAST_INSIGHT_SECRET_FILE) to whsec_ followed by the base64 of 24–64 random bytes")
        }
        let signer: WebhookSigner
        do {
            signer = try WebhookSigner(secrets: secret, setting: "HERALD_FORECAST_INSIGHT_SECRET")
        } catch let error as AdapterError {
            throw ConfigError(error.description)
        }
        let timeout = try settings.int("HERALD_FORECAST_INSIGHT_TIMEOUT_SECONDS", in: timeoutRange) ?? 10
        return ForecastInsightService(url: url, signer: signer, timeout: Double(timeout))
    }

    /// The signed POST of one forecast's request body. `id` names the forecast (the same on every
    /// attempt, so the service can drop repeats).
    func request(id: String, body: JSONValue, now: Date) -> HTTPRequest {
        let bytes = Array(body.jsonText.utf8)
        return HTTPRequest(
            method: "POST", url: url,
            headers: [("content-type", "application/json"), ("accept", "application/json")]
                + signer.headers(id: id, timestamp: Int(now.timeIntervalSince1970), body: bytes),
            body: bytes, timeout: timeout, version: .http2)
    }
}
