/// Cutting text to a provider's limit without breaking a character.
///
/// Cuts always fall on a grapheme (Swift `Character`) boundary, so an emoji with modifiers, a flag or an
/// Arabic letter with its marks is kept whole or dropped whole. A cut string ends with "…" when it fits.
///
///     Truncation.prefix("Hello, world", maxUTF8Bytes: 8)    // "Hello…"   (5 bytes + 3 for "…")
///     Truncation.sms(longText)                             // at most 1,600 UTF-16 units
///     Truncation.fit(title: t, body: b, limitBytes: 4096) { t, b in try! encoder.encode(Push(t, b)) }
public enum Truncation {
    public static let ellipsis = "…"
    /// APNs, FCM and Expo accept payloads of at most 4 KB.
    public static let pushPayloadBytes = 4096
    /// Twilio's limit for one message body.
    public static let smsCharacters = 1600

    /// The longest prefix of `s` (whole characters) whose UTF-8 form, with "…" appended when cut,
    /// is at most `maxUTF8Bytes`. When even "…" does not fit, the cut prefix goes without it.
    public static func prefix(_ s: String, maxUTF8Bytes: Int) -> String {
        cut(s, limit: maxUTF8Bytes) { $0.utf8.count }
    }

    /// The same on UTF-16 code units: what SMS providers count (a conservative "character").
    public static func prefix(_ s: String, maxUTF16Units: Int) -> String {
        cut(s, limit: maxUTF16Units) { $0.utf16.count }
    }

    /// Text for an SMS: at most 1,600 UTF-16 units, cut on a character boundary.
    public static func sms(_ text: String) -> String {
        prefix(text, maxUTF16Units: smsCharacters)
    }

    /// Shortens the body first, then the title, until `encode(title, body)` is at most `limitBytes`.
    /// Returns the texts and their encoding, or nil when even an empty title and body do not fit.
    /// A binary search on the number of characters kept: about log2(n) encodings.
    public static func fit<Bytes: Collection>(
        title: String, body: String, limitBytes: Int,
        encode: (_ title: String, _ body: String) throws -> Bytes
    ) rethrows -> (title: String, body: String, encoded: Bytes)? where Bytes.Element == UInt8 {
        let whole = try encode(title, body)
        if whole.count <= limitBytes { return (title, body, whole) }

        if let b = try longestFitting(body, limit: limitBytes, encode: { try encode(title, $0) }) {
            return (title, b.text, b.encoded)
        }
        if let t = try longestFitting(title, limit: limitBytes, encode: { try encode($0, "") }) {
            return (t.text, "", t.encoded)
        }
        return nil
    }

    // MARK: Helpers

    /// The longest shortening of `s` (k characters + "…", or "" for k = 0) whose encoding fits.
    private static func longestFitting<Bytes: Collection>(
        _ s: String, limit: Int, encode: (String) throws -> Bytes
    ) rethrows -> (text: String, encoded: Bytes)? where Bytes.Element == UInt8 {
        let chars = Array(s)
        func shortened(_ k: Int) -> String { k == 0 ? "" : String(chars[..<k]) + ellipsis }
        let empty = try encode("")
        guard empty.count <= limit else { return nil }
        var best = (text: "", encoded: empty)
        var lo = 1, hi = chars.count - 1          // candidates; chars.count itself is known not to fit
        while lo <= hi {
            let mid = (lo + hi) / 2
            let text = shortened(mid)
            let encoded = try encode(text)
            if encoded.count <= limit { best = (text, encoded); lo = mid + 1 } else { hi = mid - 1 }
        }
        return best
    }

    private static func cut(_ s: String, limit: Int, size: (String) -> Int) -> String {
        if size(s) <= limit { return s }
        let room = limit - size(ellipsis)
        let keep = room >= 0 ? room : limit
        var out = ""
        var used = 0
        for c in s {
            let n = size(String(c))
            if used + n > keep { break }
            out.append(c)
            used += n
        }
        return room >= 0 ? out + ellipsis : out
    }
}
