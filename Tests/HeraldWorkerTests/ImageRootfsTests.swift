import Foundation
import HeraldTestSupport
import Testing

/// The container image's runtime stage, proven without a container engine: its root filesystem is
/// built by debootstrap from the package list the Dockerfile installs (deploy/image/runtime-packages.txt),
/// with the release binary and sql/ at the Dockerfile's paths and its non-root user, and herald runs in
/// it through chroot as that user, with only the image's environment. So a missing shared library, a
/// migrations folder herald cannot find, or a file the user cannot read fails here, as it would in a pod.
@Suite struct ImageRootfsTests {
    /// 03:00 UTC on a January night: 19:00 in Los Angeles, 12:00 in Tokyo, 14:00 in Sydney, 03:00 in London.
    static let now = "2026-01-25T03:00:00Z"

    /// `herald migrate` finds the release's migrations at the image's HERALD_SQL_DIR and applies every
    /// one; a pass then sends each due row through the log adapter and skips the one inside its
    /// recipient's quiet hours, judged in the recipient's own time zone (quiet 22:00–07:00 everywhere:
    /// only London's night holds 03:00 UTC). Both exit 0, as the image's uid, on the rootfs's libraries.
    @Test(.enabled(if: ImageRootfs.isRoot, "needs root: debootstrap and chroot"),
          .enabled(if: ImageRootfs.releaseBinaryIsCurrent,
                   "needs .build/release/herald built from these sources: make release (make test builds it)"),
          .enabled(if: ImageRootfs.buildable, """
              needs chroot, unshare, debootstrap and the Debian mirror apt uses, or the tree cached in \
              .build/image-rootfs (scripts/image-rootfs.sh check says which)
              """),
          .timeLimit(.minutes(30)))
    func theImagesRootFilesystemMigratesAndSendsAsItsNonRootUser() async throws {
        let image = try await ImageRootfs.prepare()
        // An empty database: the migrations are the image's to apply.
        try await withTestDatabase(migrationsDirectory: URL(fileURLWithPath: "/nonexistent/herald-sql")) { tdb in

            let migrate = await image.herald(["migrate"], settings: ["DATABASE_URL": tdb.url])
            try #require(migrate.status == 0, "herald migrate: \(migrate.out) \(migrate.err)")
            let db = try tdb.connect()
            let files = try FileManager.default.contentsOfDirectory(atPath: TestDatabase.migrationsDirectory.path)
                .filter { $0.hasSuffix(".sql") }
            let f = Fixtures(db: db)
            #expect(try f.count("select count(*) from schema_migrations") == files.count)

            let at = instant("2026-01-25T02:55:00Z")
            func person(_ zone: String) throws -> UUID {
                let p = try f.profile(timezone: zone, email: "someone@example.com", emailOn: true,
                                      quiet: ("22:00", "07:00"))
                try f.token(p)
                return p
            }
            // One row each: a recipient's second row of a kind within minutes waits (kind spacing).
            let sent = [try f.enqueue(to: try person("America/Los_Angeles"), channel: "push", at: at),
                        try f.enqueue(to: try person("Asia/Tokyo"), channel: "email", at: at),
                        try f.enqueue(to: try person("Australia/Sydney"), channel: "push", at: at)]
            let quiet = try f.enqueue(to: try person("Europe/London"), channel: "push", at: at)

            let outbox = "/tmp/herald-outbox-\(UUID().uuidString).jsonl"
            defer { try? FileManager.default.removeItem(atPath: image.hostPath(outbox)) }
            let run = await image.herald(["run", "--now", Self.now, "--quiet"], settings: [
                "DATABASE_URL": tdb.url, "HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_EMAIL": "log",
                "HERALD_LOG_ADAPTER_FILE": outbox,
            ])
            #expect(run.status == 0, "herald run: \(run.out) \(run.err)")
            let summary = try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any] ?? [:]
            #expect(summary["sent"] as? Int == 3, "\(run.out)")
            #expect(summary["skipped"] as? Int == 1, "\(run.out)")
            for id in sent {
                #expect(try f.row(id)["status"].string == "sent")
            }
            #expect(try f.row(quiet)["status"].string == "skipped")
            #expect(try f.row(quiet)["skip_reason"].string == "quiet_hours")

            // The log adapter wrote one line per send, as the image's user, inside the tree.
            let lines = try String(contentsOfFile: image.hostPath(outbox), encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 3)
            let owner = try FileManager.default.attributesOfItem(atPath: image.hostPath(outbox))[.ownerAccountID]
            #expect((owner as? NSNumber)?.stringValue == image.facts.uid)
        }
    }
}
