import Foundation

/// `EMAIL_FROM`, parsed once for every email provider: `addr@example.com` or `Name <addr@example.com>`
/// (the name may be quoted).
///
///     let from = try EmailFrom("\"Herald Team\" <a@b.example>")   // name "Herald Team", address "a@b.example"
public struct EmailFrom: Sendable, Equatable {
    public var name: String?
    public var address: String

    public init(_ text: String) throws {
        let s = text.trimmingCharacters(in: .whitespacesAndNewlines)
        var address = s
        var name: String?
        if let open = s.lastIndex(of: "<"), s.hasSuffix(">") {
            address = String(s[s.index(after: open)..<s.index(before: s.endIndex)]).trimmingCharacters(in: .whitespaces)
            var n = String(s[..<open]).trimmingCharacters(in: .whitespaces)
            if n.count >= 2, n.hasPrefix("\""), n.hasSuffix("\"") { n = String(n.dropFirst().dropLast()) }
            name = n.isEmpty ? nil : n
        }
        guard Self.isAddress(address), name?.contains(where: \.isNewline) != true else {
            throw AdapterError("EMAIL_FROM must be addr@example.com or Name <addr@example.com>, got \(text.debugDescription)")
        }
        self.name = name
        self.address = address
    }

    /// A plausible single address: local@domain, no spaces, brackets, line breaks or control characters.
    public static func isAddress(_ text: String) -> Bool {
        guard let at = text.lastIndex(of: "@"), at != text.startIndex, text.index(after: at) != text.endIndex
        else { return false }
        return !text.contains(where: { $0.isWhitespace || $0.isNewline || "<>(),;:\"\\[]".contains($0) })
            && text.unicodeScalars.allSatisfy { $0.value >= 0x21 }
    }
}
