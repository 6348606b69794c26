/// Keeps the password of a connection string out of error messages, whatever the string's shape:
/// a URI of any scheme (`postgresql+psycopg2://u:pw@h/db`, `jdbc:postgresql://u:pw@h/db` — libpq
/// quotes such a string whole when it refuses it) or a conninfo whose `password=` value libpq cut in
/// two (`password=two words` is refused quoting `"words"`).
///
///     ConninfoSecrets.scrub("missing \"=\" after \"jdbc:postgresql://u:pw@h/db\"")
///     // missing "=" after "jdbc:postgresql://u:***@h/db"
enum ConninfoSecrets {
    /// `scheme://user:password@`: the password runs to the last `@` of its word.
    private static var userinfo: Regex<(Substring, head: Substring)> { #/(?<head>[A-Za-z][A-Za-z0-9+.\-]*:\/\/[^\s"':\/@]*):[^\s'"]*@/# }

    /// `password=value` or `password = 'quoted value'`, in a conninfo or a URI's query.
    private static var keyword: Regex<(Substring, head: Substring)> { #/(?<head>(?i:password)\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s&]*)/# }

    /// The next `keyword=` of a conninfo, where an unquoted password's words end.
    private static var nextKeyword: Regex<Substring> { #/\s+[A-Za-z_]+\s*=/# }

    /// A fragment libpq quotes in its message.
    private static var quoted: Regex<(Substring, text: Substring)> { #/"(?<text>[^"]*)"/# }

    /// `message` with every URI userinfo password and every `password=` value replaced by `***`.
    static func scrub(_ message: String) -> String {
        message
            .replacing(userinfo) { "\($0.head):***@" }
            .replacing(keyword) { "\($0.head)***" }
    }

    /// libpq's message for a connection string it could not parse, scrubbed: besides `scrub`, a
    /// fragment it quotes is replaced by `***` when it may be part of a password written in
    /// `conninfo` (a word of the text after `password=`, or a URI's password).
    static func parseError(_ message: String, conninfo: String) -> String {
        let scrubbed = scrub(message)
        let candidates = passwordWords(conninfo)
        guard !candidates.isEmpty else { return scrubbed }
        var out = scrubbed.replacing(quoted) { match -> String in
            let text = String(match.text)
            guard !text.isEmpty, text != "=" else { return String(match.output.0) }
            let secret = candidates.contains { text.contains($0) || $0.contains(text) }
            return secret ? "\"***\"" : String(match.output.0)
        }
        // Anything a pairing of quotes missed.
        for word in candidates where word.count >= 4 {
            out = out.replacingOccurrences(of: word, with: "***")
        }
        return out
    }

    /// What of `conninfo` may be a password: the text after each `password=` up to the next
    /// `keyword=` (whole, and word by word), and a URI's password, of any scheme.
    static func passwordWords(_ conninfo: String) -> [String] {
        var words: [String] = []
        for match in conninfo.matches(of: keyword) {
            let rest = conninfo[match.output.head.endIndex...]
            let end = rest.firstMatch(of: nextKeyword)?.range.lowerBound ?? rest.endIndex
            let run = rest[..<end]
            words.append(String(run))
            words += run.split(whereSeparator: \.isWhitespace).map(String.init)
        }
        if let password = uriPassword(conninfo) { words.append(password) }
        return Array(Set(words.filter { !$0.isEmpty }))
    }

    /// The password as written in a `scheme://user:password@host/…` URI, whatever the scheme (libpq
    /// also gives us the decoded one); found the way libpq finds it: user info ends at the first `@`
    /// before any `/`.
    static func uriPassword(_ conninfo: String) -> String? {
        guard let scheme = conninfo.range(of: "://") else { return nil }
        let rest = conninfo[scheme.upperBound...]
        guard let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@" else { return nil }
        let userInfo = rest[..<end]
        guard let colon = userInfo.firstIndex(of: ":") else { return nil }
        let password = String(userInfo[userInfo.index(after: colon)...])
        return password.isEmpty ? nil : password
    }
}
