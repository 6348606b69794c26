import Foundation

/// The services a morning of forecasts talks to, on loopback, over TLS and HTTP/2, under one test CA:
/// the weather (`FakeWeather`), the team's insight service (a `FakeHTTPServer` answering every
/// forecast with the same words), APNs (`FakeAPNs`) and FCM (`FakeFCM`). The providers check herald's
/// credentials against the real clock, which herald mints them on whatever its passes' `--now`.
///
///     let fakes = try MorningFakes()
///     defer { fakes.shutdown() }
///     env.merge(try fakes.settings()) { _, new in new }
public final class MorningFakes: @unchecked Sendable {
    public let certificates: TestCertificates
    public let weather: FakeWeather
    public let insight: FakeHTTPServer
    public let apns: FakeAPNs
    public let fcm: FakeFCM

    /// The insight service's signing secret (Standard Webhooks).
    public static let insightSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    /// What the insight service answers for every forecast.
    public static let insightAnswer = #"{"forecast_summary":"Pressure falls fast today: pace yourself and keep warm.","why_explanation":"Falling pressure lets tissues swell.","comfort_tip":"Warm ginger tea keeps the qi moving.","daily_insight":{"summary_sentence":"Pressure falls fast today: pace yourself and keep warm.","sign_off":"Gently does it."}}"#

    public init() throws {
        certificates = try TestCertificates.make()
        weather = try FakeWeather(certificates: certificates)
        insight = try FakeHTTPServer(tls: certificates) { _ in .json(200, MorningFakes.insightAnswer) }
        apns = try FakeAPNs(certificates: certificates)
        fcm = try FakeFCM(certificates: certificates)
    }

    /// The settings that point herald at every fake: the CA, the weather, the insight service, the APNs
    /// key and the FCM service account (both written as files beside the certificates).
    public func settings() throws -> [String: String] {
        let key = certificates.directory + "/apns-morning.p8"
        let account = certificates.directory + "/fcm-morning.json"
        try apns.keyPEM.write(toFile: key, atomically: true, encoding: .utf8)
        try fcm.serviceAccountJSON.write(toFile: account, atomically: true, encoding: .utf8)
        return weather.settings.merging([
            "HERALD_FORECAST_INSIGHT_URL": insight.baseURL + "/insight",
            "HERALD_FORECAST_INSIGHT_SECRET": Self.insightSecret,
            "APNS_KEY_FILE": key, "APNS_KEY_ID": apns.keyId, "APNS_TEAM_ID": apns.teamId,
            "APNS_TOPIC": apns.topic, "APNS_URL": apns.baseURL,
            "FCM_SERVICE_ACCOUNT_FILE": account, "FCM_URL": fcm.baseURL,
        ]) { _, new in new }
    }

    /// Pushes received so far: APNs requests and FCM sends (not its token exchanges).
    public var pushCount: Int { apns.server.requestCount + fcm.server.requestCount - fcm.tokenExchanges }

    /// The pushes received, APNs's and FCM's sends.
    public var pushes: (apns: [FakeRequest], fcm: [FakeRequest]) {
        (apns.requests, fcm.requests.filter { $0.path.hasSuffix("/messages:send") })
    }

    public func shutdown() {
        weather.server.shutdown()
        insight.shutdown()
        apns.shutdown()
        fcm.shutdown()
        certificates.remove()
    }
}
