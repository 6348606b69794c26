import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Stored links as the app gets them back: the list applies the push's rule (a deep link in the app's
/// scheme, else the inbox's; an image over https), and an image must name a public host, which
/// send_notification checks before it writes anything.
@Suite struct StoredLinkTests {
    /// Image URLs an attacker stores to reach the device's or a server's own network: loopback,
    /// link-local (cloud metadata), private and reserved addresses, written as IPv4 and IPv6 literals,
    /// as local names, and as the integer, hex, octal and short forms URL parsers read as IPv4.
    static let hostileImages = [
        "https://169.254.169.254/latest/meta-data/", "https://127.0.0.1/a.png", "https://10.0.0.5/a.png",
        "https://172.16.0.1/a.png", "https://192.168.1.1/a.png", "https://100.64.0.1/a.png", "https://0.0.0.0/a.png",
        "https://2130706433/a.png", "https://0x7f000001/a.png", "https://0x7f.0.0.1/a.png", "https://0177.0.0.1/a.png",
        "https://127.1/a.png", "https://[::1]/a.png", "https://[fe80::1]/a.png", "https://[fd00::1]/a.png",
        "https://[::ffff:169.254.169.254]/a.png", "https://localhost/a.png", "https://img.localhost/a.png",
        "https://metadata.google.internal/a.png", "https://printer.local/a.png", "https://intranet/a.png",
        "https://127.0.0.1./a.png", "https://user@127.0.0.1/a.png", "https://%31%32%37.0.0.1/a.png",
        "http://cdn.example.com/a.png", "javascript://cdn.example.com/%0Aalert(1)",
    ]
    static let fineImages = ["https://cdn.example.com/a.png", "https://8.8.8.8/a.png", "https://[2606:4700::1111]/a.png"]

    /// get_notifications hands back a deep link only in the app's scheme (`herald` until a pass writes
    /// HERALD_DEEP_LINK_SCHEME, then that one) and replaces any other with the inbox's link, as the push
    /// does; an image only over https from a public host, else null.
    @Test func theListHandsBackOnlyTheLinksThePushWouldCarry() throws {
        try SecurityTests.supabase { tdb, db in
            let user = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(user))")
            let links = ["javascript://x/%0Aalert(document.cookie)", "https://evil.example/phish", "data://text/html,x",
                         "herald://alerts/1", "intldossier://dossiers/1", "herald://a b"]
            for (n, url) in (links + Self.hostileImages + Self.fineImages).enumerated() {
                try db.execute("""
                    insert into inbox (user_id, type, title, body, deep_link, image_url)
                    values (\(user), 'system', \("n\(n)"), 'b', \(n < links.count ? url : nil), \(n < links.count ? nil : url))
                    """)
            }
            func listed() throws -> [String: (link: String?, image: String?)] {
                let page = try ReminderRPCTests.call(db, as: user, "select get_notifications(100)")
                var out: [String: (String?, String?)] = [:]
                for entry in AppContractTests.array(page["notifications"]) {
                    out[entry["title_en"]?.stringValue ?? ""] = (entry["deep_link"]?.stringValue, entry["image_url"]?.stringValue)
                }
                return out
            }
            var got = try listed()
            #expect(links.indices.map { got["n\($0)"]?.link } == ["herald://inbox", "herald://inbox", "herald://inbox",
                                                                     "herald://alerts/1", "herald://inbox", "herald://inbox"])
            for (i, url) in (Self.hostileImages + Self.fineImages).enumerated() {
                let expected = Self.fineImages.contains(url) ? url : nil
                #expect(got["n\(links.count + i)"]?.image == expected, "\(url)")
                #expect(got["n\(links.count + i)"]?.link == nil, "no link stays none")
            }

            // A pass configured for the app's own scheme: the list follows it.
            _ = Worker(url: tdb.url, settings: ["HERALD_DEEP_LINK_SCHEME": "intldossier"]).run()
            got = try listed()
            #expect(links.indices.map { got["n\($0)"]?.link } == ["intldossier://inbox", "intldossier://inbox", "intldossier://inbox",
                                                                     "intldossier://inbox", "intldossier://dossiers/1", "intldossier://inbox"])
        }
    }

    /// send_notification refuses every hostile image URL with invalid_request naming image_url, and
    /// enqueues nothing; public ones are accepted.
    @Test func sendNotificationRefusesImagesOnLocalOrPrivateHosts() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, _) = try SendNotificationTests.person(db)
            for url in Self.hostileImages {
                let error = SendNotificationTests.refusal(db, SendNotificationTests.request(user, ["image_url": .string(url)]))
                #expect(error?.sqlState == "PT400" && error?.message == "invalid_request", "\(url): \(String(describing: error))")
                #expect(error?.detail?.hasPrefix("image_url") == true, "\(url): \(String(describing: error?.detail))")
            }
            #expect(try SendNotificationTests.count(db, "notification_queue") == 0)
            for url in Self.fineImages where !url.contains("[") {
                let sent = try SendNotificationTests.send(db, SendNotificationTests.request(user, ["image_url": .string(url)]))
                #expect(sent["status"]?.stringValue == "scheduled", "\(url)")
            }
        }
    }
}
