/// The one percent-encoder: every byte outside RFC 3986's unreserved set (`A–Z a–z 0–9 - . _ ~`) becomes
/// `%XX`, so it is safe in a path segment, a query value and an `x-www-form-urlencoded` field alike.
///
///     PercentEncoding.encode("a b/ç")    // "a%20b%2F%C3%A7"
public enum PercentEncoding {
    public static func encode(_ s: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
