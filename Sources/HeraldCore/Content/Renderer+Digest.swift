import Foundation

/// A digest: the row a type's digest window sends (sql/059), whatever its type. Its texts are written by
/// the database as items join (`title`/`body` in English, `title_ar`/`body_ar`, `title_pt`/`body_pt`):
/// the count, then the first items with their times in the person's zone. `data` carries the digest's
/// id and count, so the app can open its entry.
extension Renderer {
    /// A payload whose `digest` is an object with an `id`.
    static func isDigest(_ payload: [String: JSONValue]) -> Bool {
        payload["digest"]?["id"]?.stringValue != nil
    }

    func digestDraft(_ payload: [String: JSONValue], _ lang: Templates.Language,
                     data: inout [String: JSONValue]) -> Draft {
        let fallback = Templates.genericSystem(lang)
        if let id = payload["digest"]?["id"]?.stringValue { data["digest_id"] = .string(id) }
        if let count = payload["digest"]?["count"], case .number = count { data["digest_count"] = count }
        return Draft(title: text(payload, "title", lang) ?? fallback.title,
                     body: text(payload, "body", lang) ?? fallback.body,
                     deepLink: "\(options.deepLinkScheme)://inbox")
    }
}
