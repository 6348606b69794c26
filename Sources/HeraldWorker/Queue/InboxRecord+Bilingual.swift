import Foundation
import HeraldCore

extension InboxRecord {
    /// The in-app copy of a row being sent: the recipient's own text (`title`, `body`, as pushed), plus
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
        self.init(queueId: item.id, userId: item.recipientUserId, type: item.kindRaw,
                  priority: item.priority.rawValue, title: rendered.title, body: rendered.body,
                  deepLink: rendered.deepLink, data: .object(rendered.data),
                  titleEn: en.title, titleAr: ar.title, bodyEn: en.body, bodyAr: ar.body,
                  imageUrl: InboxRecord.imageURL(item.payload?["image_url"]?.stringValue))
    }

    /// An image URL kept for the app: http(s), no whitespace, at most 2,048 characters; else nil.
    static func imageURL(_ s: String?) -> String? {
        guard let s, s.count <= 2048, !s.contains(where: { $0.isWhitespace || $0.isNewline }),
              let url = URL(string: s), let scheme = url.scheme?.lowercased(),
              scheme == "https" || scheme == "http", url.host?.isEmpty == false else { return nil }
        return s
    }
}
