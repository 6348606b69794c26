import Foundation

/// A request as the fake server received it.
public struct FakeRequest: Sendable {
    public var method: String
    /// The path with its query, e.g. "/3/device/abc?x=1".
    public var path: String
    /// Header fields, names lower-cased, in the order received (over HTTP/2, `:authority` becomes `host`).
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// "1.1" or "2".
    public var httpVersion: String
    public var receivedAt: Date

    /// The first value of the header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first(where: { $0.0 == wanted })?.1
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
}
