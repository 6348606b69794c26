import Foundation

extension Renderer {
    /// A notification's rich content, from its payload: an image (`image_url`) and action buttons
    /// (`actions`, or `action_buttons`, titled in the recipient's language). Passed to each provider's
    /// own field, and kept in `data` for the app.
    ///
    ///     let rich = RichContent(["image_url": "https://cdn.example/a.png"], .en)
    ///     rich.imageURL   // "https://cdn.example/a.png"
    struct RichContent {
        /// Nil when the payload has none, or one `Renderer.imageURL` refuses.
        let imageURL: String?
        let actions: [NotificationAction]

        init(_ payload: [String: JSONValue], _ lang: Templates.Language) {
            imageURL = payload["image_url"]?.stringValue.flatMap(Renderer.imageURL)
            let titleKey = switch lang {
            case .ar: "title_ar"
            case .ptBR: "title_pt"
            case .en: "title_en"
            }
            actions = NotificationAction.parse(payload["actions"] ?? payload["action_buttons"], title: titleKey)
        }

        /// Adds `image_url` and `actions` to `data`, each only when there is one.
        func add(to data: inout [String: JSONValue]) {
            if let imageURL { data["image_url"] = .string(imageURL) }
            if !actions.isEmpty { data["actions"] = .array(actions.map(\.json)) }
        }
    }

    /// An image URL is passed on only when it is https, without spaces, at most 1,024 bytes.
    static func imageURL(_ s: String) -> String? {
        guard s.lowercased().hasPrefix("https://"), s.utf8.count <= 1024, !s.contains(where: { $0.isWhitespace }),
              let url = URL(string: s), url.host?.isEmpty == false else { return nil }
        return s
    }
}
