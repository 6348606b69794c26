import Foundation

/// Lock-protected state for the messaging fakes (Expo, Twilio, WhatsApp, SendGrid).
final class MsgFakeLock<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func with<R>(_ body: (inout Value) -> R) -> R {
        lock.withLock { body(&value) }
    }
}

/// The pieces of the providers' wire formats the fakes need.
enum MsgFakeWire {
    /// Parses JSON text (objects, arrays, fragments); nil when malformed.
    static func json(_ body: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
    }

    /// Compact JSON text of a JSONSerialization value (sorted keys, so answers are stable).
    static func text(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else {
            return "null"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Decodes `application/x-www-form-urlencoded` ("+" is a space); repeated names keep the first.
    static func form(_ body: [UInt8]) -> [String: String] {
        var out: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s)
            }
            let name = decode(parts[0])
            if out[name] == nil { out[name] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return out
    }

    /// `+` then 8 to 15 digits, the first not 0.
    static func isE164(_ s: String) -> Bool {
        guard s.hasPrefix("+") else { return false }
        let digits = s.dropFirst()
        return (8...15).contains(digits.count) && digits.allSatisfy { $0.isASCII && $0.isNumber } && digits.first != "0"
    }

    /// `n` random hex digits.
    static func hex(_ n: Int) -> String {
        String((0..<n).map { _ in "0123456789abcdef".randomElement()! })
    }
}
