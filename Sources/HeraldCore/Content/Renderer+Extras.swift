import Foundation

extension Renderer {
    /// What a sender's payload asks of the push beyond its text (the server-side send,
    /// `send_notification`): its own `data` object for the app, how much the badge grows, the sound.
    ///
    ///     let extras = Extras(["data": ["dossier_id": "660e…"], "badge_increment": 2, "sound": "custom"],
    ///                         customSound: "custom.wav")
    ///     extras.badge(unreadInApp: 3)        // 5
    ///     extras.sound(priority: .normal)     // "custom.wav"
    struct Extras {
        /// The payload's `data` object, when it is one of at most `maxSenderDataBytes` as JSON.
        let data: [String: JSONValue]
        /// How much the badge grows: the payload's `badge_increment` (0–100), else 1.
        let badgeIncrement: Int
        /// The payload's `sound`, nil when it has none.
        let requestedSound: SoundChoice?
        let customSound: String

        /// What a payload's `sound` may say: `"default"`, `"custom"`, or null (`silence`).
        enum SoundChoice: String {
            case `default`, custom, silence
        }

        init(_ payload: [String: JSONValue], customSound: String) {
            if case .object(let own)? = payload["data"], JSONValue.object(own).jsonText.utf8.count <= Renderer.maxSenderDataBytes {
                data = own
            } else {
                data = [:]
            }
            badgeIncrement = payload["badge_increment"]?.intValue.map { min(max($0, 0), 100) } ?? 1
            switch payload["sound"] {
            case nil: requestedSound = nil
            case .null?: requestedSound = .silence
            case let value?: requestedSound = value.stringValue == SoundChoice.custom.rawValue ? .custom : .default
            }
            self.customSound = customSound
        }

        /// Adds the sender's keys to `data`; herald's own keys (kind, queue_id, deep_link, …) win.
        func add(to out: inout [String: JSONValue]) {
            for (key, value) in data where out[key] == nil { out[key] = value }
        }

        /// The badge: the recipient's unread in-app count, grown by this notification's increment.
        func badge(unreadInApp: Int) -> Int { max(0, unreadInApp) + badgeIncrement }

        /// "default" unless the payload says otherwise: `custom` plays the app's own sound
        /// (`HERALD_CUSTOM_SOUND`), null none; a low-priority notification without a word plays none.
        func sound(priority: Priority) -> String? {
            switch requestedSound {
            case nil: priority == .low ? nil : SoundChoice.default.rawValue
            case .silence?: nil
            case .custom?: customSound
            case .default?: SoundChoice.default.rawValue
            }
        }
    }

    /// The largest `data` object a payload may hand to the device (bytes of JSON): `send_notification`
    /// refuses more, so the push keeps room for its text within 4,096 bytes. A larger one (a row written
    /// some other way) is left out rather than failing the push.
    public static let maxSenderDataBytes = 2048
}
