import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Generation stays exactly once when followers and passes run the same generators at once: they
/// share the generators' claims (a reminder's marks are set by one of them only) and dedupe keys.
@Suite struct FollowGenerateOnceTests {
    /// Two followers and passes started one after another, all running the reminders, while six
    /// reminders come due a second apart: each reminder makes one row and one push to Expo, and the
    /// followers made some of them at their time.
    @Test func twoFollowersAndAPassSendEachGeneratedNotificationOnce() throws {
        try FollowGenerateTests.Setup.with { s in
            let users = try [s.user] + (1..<6).map { _ in try FollowSendTests.person(s.db) }
            let followers = try (0..<2).map { _ in try FollowerProcess(env: s.env, deadline: 120, only: "reminders,deliver") }
            for follower in followers { #expect(follower.waitForWaits(1), "\(follower.logText)") }

            var reminders: [String] = []
            for (i, user) in users.enumerated() {
                reminders.append(try FollowGenerateTests.schedule(s.db, user, in: 3 + Double(i)))
            }
            let env = s.env
            let passes = InBackground { () -> [JSONValue] in
                var summaries: [JSONValue] = []
                let end = Date().addingTimeInterval(12)
                while Date() < end {  // one after another, across the reminders' instants
                    let out = Pipe()
                    guard let p = try? HeraldBinary.start(["run", "--only", "reminders,deliver", "--quiet"], env: env,
                                                          stdout: out, stderr: FileHandle.nullDevice) else { break }
                    let data = out.fileHandleForReading.readDataToEndOfFile()
                    p.waitUntilExit()
                    summaries.append((try? JSONValue.parse(data)) ?? .null)
                }
                return summaries
            }
            let f = Fixtures(db: s.db)
            #expect(try f.waitFor("select count(*)::int from notification_queue where status = 'sent'", atLeast: 6, seconds: 40))
            let passSummaries = passes.value()
            for follower in followers { kill(follower.process.processIdentifier, SIGTERM) }
            let summaries = followers.map { $0.finish(seconds: 15) }

            #expect(try f.count("""
                select count(*)::int from notification_queue where reminder_id = any(\(reminders)::uuid[])
                """) == 6, "one row per reminder")
            let messages = try s.providers.expo.sendRequests.flatMap { r -> [JSONValue] in
                if case .array(let list) = try JSONValue.parse(Data(r.body)) { return list }
                return []
            }
            let ids = messages.compactMap { $0["data"]?["notification_id"]?.stringValue }
            #expect(ids.count == 6 && Set(ids).count == 6, "each reminder pushed once: \(ids)")
            let byFollowers = summaries.reduce(0) { $0 + ($1["generated"]?["reminders"]?.intValue ?? 0) }
            let byPasses = passSummaries.reduce(0) { $0 + ($1["generated"]?["reminders"]?.intValue ?? 0) }
            #expect(byFollowers + byPasses == 6, "followers made \(byFollowers), passes \(byPasses)")
            #expect(byFollowers >= 1, "the followers made reminders at their time")
            #expect(passSummaries.count >= 2)
        }
    }
}
