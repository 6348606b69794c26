/// What may be kept or said about values that must not be stored or logged as they are.
///
///     Redaction.url("https://user:pw@hooks.example.com/x?key=k#top")   // "https://hooks.example.com/x"
///     Redaction.storableAddress("+15551234567")                       // "+15551234567" (unchanged)
///     Redaction.describeJSON("\"secret health detail\"")              // "a string of 22 bytes"
public enum Redaction {
    /// An http(s) URL without its userinfo (`user:password@`), query string and fragment, which may carry
    /// credentials; nil when `text` is not an http(s) URL. The authority ends at the first `/`, `?` or `#`
    /// after `://` and its userinfo at the last `@` in it (RFC 3986, as libcurl reads URLs).
    public static func url(_ text: String) -> String? {
        // Most destinations (tokens, ids, phone numbers, addresses) have no colon at all.
        guard text.utf8.contains(UInt8(ascii: ":")), let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let tail = rest[authorityEnd...]
        let path = tail.prefix(while: { $0 != "?" && $0 != "#" })
        return String(text[..<separator.upperBound]) + authority + path
    }

    /// A destination as it may be stored (`notification_deliveries.destination`): an http(s) URL
    /// loses its userinfo, query and fragment (`url(_:)`); tokens, phone numbers and email addresses
    /// are returned unchanged.
    public static func storableAddress(_ address: String) -> String {
        url(address) ?? address
    }

    /// What a JSON text is, without any of its content: "a string of 22 bytes", "an array of 3
    /// elements", "a number", "not JSON (8 bytes)", … For messages about a payload that is not what it
    /// should be, which must not quote the payload (it may hold health details).
    public static func describeJSON(_ text: String) -> String {
        let bytes = text.utf8.count
        guard let value = try? JSONValue.parse(text) else {
            return bytes == 0 ? "empty" : "not JSON (\(bytes) bytes)"
        }
        return describe(value, bytes: bytes)
    }

    /// What a JSON value is, without its content; `bytes` is the size of its text, when known.
    public static func describe(_ value: JSONValue, bytes: Int? = nil) -> String {
        let size = bytes ?? value.jsonText.utf8.count
        switch value {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string of \(size) bytes"
        case .array(let a): return "an array of \(a.count) element\(a.count == 1 ? "" : "s")"
        case .object(let o): return "an object of \(o.count) field\(o.count == 1 ? "" : "s")"
        }
    }
}

extension Destination {
    /// The address as stored in `notification_deliveries.destination` (see `Redaction.storableAddress`).
    public var storableAddress: String { Redaction.storableAddress(address) }
}
