import Foundation
import HeraldCore

extension InboxRecord {
    /// The entry's text for a row being sent: the recipient's own (`title`, `body`, as pushed), plus
    /// the same notification rendered from the templates in English and in Arabic (`title_en`,
    /// `title_ar`, `body_en`, `body_ar`), and the payload's `image_url` when it is a web URL.
    init(item: QueueItem, rendered: RenderedNotification, renderer: Renderer, preferences: Preferences,
         unreadInApp: Int) {
        // The recipient's own rendering is reused for its language: one more rendering per row.
        func inLanguage(_ locale: String) -> RenderedNotification {
            if rendered.locale == locale { return rendered }
            var p = preferences
            p.locale = locale
            return renderer.render(item, preferences: p, unreadInApp: unreadInApp)
        }
        let en = inLanguage("en"), ar = inLanguage("ar")
        self.init(queueId: item.id, userId: item.recipientUserId, key: item.group, type: item.kindRaw,
                  priority: item.priority.rawValue, title: rendered.title, body: rendered.body,
                  deepLink: rendered.deepLink, data: .object(rendered.data),
                  titleEn: en.title, titleAr: ar.title, bodyEn: en.body, bodyAr: ar.body,
                  imageUrl: InboxRecord.imageURL(item.payload?["image_url"]?.stringValue))
    }

    /// Whether the payload carries the notification's own text (`title`, `title_en`, …), which the
    /// entry took when it was written; a kind rendered from templates has none.
    static func payloadHasText(_ item: QueueItem) -> Bool {
        guard let payload = item.payload else { return false }
        return payload.contains { key, value in
            (key == "title" || key.hasPrefix("title_")) && !(value.stringValue ?? "").isEmpty
        }
    }

    /// An image URL kept for the app: http(s), no whitespace, at most 2,048 characters; else nil.
    static func imageURL(_ s: String?) -> String? {
        guard let s, s.count <= 2048, !s.contains(where: { $0.isWhitespace || $0.isNewline }),
              let url = URL(string: s), let scheme = url.scheme?.lowercased(),
              scheme == "https" || scheme == "http", url.host?.isEmpty == false else { return nil }
        return s
    }
}
