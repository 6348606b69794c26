import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// `POST /push-notification`, the server-side send, through the edge functions' own module under Node
/// (Tests/EdgeFunctions/drive.mjs "post"): the routing, the service role check, `send_notification` and
/// the status reads of `awaitSend`, each call run against the real PostgreSQL as PostgREST runs it for
/// the service role's key, and a real pass against the fake Expo where the push is to go out. Without
/// Node.js the suite is reported as skipped.
@Suite(.enabled(if: Tools.node, "needs Node.js (scripts/deps.sh installs it)"))
struct SendEndpointTests {
    static let serviceKey = "test-service-role-key-0123456789abcdef"
    static let url = EdgeFunctionTests.base + "push-notification"

    /// One conversation with drive.mjs: JSON lines each way.
    final class Conversation {
        private let process = Process()
        private let toNode = Pipe()
        private let fromNode = Pipe()
        private var buffer = Data()

        init(_ first: JSONValue) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["node", EdgeFunctionTests.driver]
            process.standardInput = toNode
            process.standardOutput = fromNode
            process.standardError = fromNode
            try process.run()
            write(first)
        }

        func write(_ value: JSONValue) { toNode.fileHandleForWriting.write(Data((value.jsonText + "\n").utf8)) }

        func read() throws -> JSONValue {
            while true {
                if let newline = buffer.firstIndex(of: 10) {
                    let line = Data(buffer[buffer.startIndex..<newline])
                    buffer = Data(buffer[buffer.index(after: newline)...])
                    return try JSONValue.parse(line)
                }
                let chunk = fromNode.fileHandleForReading.availableData
                guard !chunk.isEmpty else {
                    throw EdgeFunctionTests.EdgeFailure("drive.mjs ended: \(String(decoding: buffer, as: UTF8.self))")
                }
                buffer.append(chunk)
            }
        }

        func finish() {
            try? toNode.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    /// The answer to POST /push-notification with `body` and `headers`, and the functions it called in
    /// order. `beforeStatus(n)` runs before the n-th status read is answered (a pass, say).
    static func post(_ db: PGConnection, _ body: JSONValue, headers: [String: String] = ["X-Supabase-Service-Role": serviceKey],
                     waitMs: Int = 2000, beforeStatus: (Int) throws -> Void = { _ in })
        throws -> (status: Int, body: JSONValue, calls: [String]) {
        let talk = try Conversation(.object([
            "op": "post", "url": .string(url), "body": body, "service_key": .string(serviceKey),
            "headers": .object(headers.mapValues(JSONValue.string)), "wait_ms": .number(Double(waitMs)),
        ]))
        defer { talk.finish() }
        var calls: [String] = []
        while true {
            let line = try talk.read()
            if let response = line["response"] {
                return (response["status"]?.intValue ?? 0, response["body"] ?? .null, calls)
            }
            guard let fn = line["call"]?["fn"]?.stringValue, case .object(let args)? = line["call"]?["args"] else {
                throw EdgeFunctionTests.EdgeFailure("not a call: \(line.jsonText)")
            }
            calls.append(fn)
            if fn == "send_notification_status" { try beforeStatus(calls.filter { $0 == fn }.count) }
            talk.write(.object(try EdgeFunctionTests.execute(db, fn, args, role: "service_role", as: nil)))
        }
    }

    static func error(_ answer: (status: Int, body: JSONValue, calls: [String])) -> (Int, String?) {
        (answer.status, answer.body["error"]?["code"]?.stringValue)
    }

    /// A push that goes out while the answer waits is answered `sent`, with Expo's ticket as
    /// `expo_receipt_id` and the token it reached.
    @Test func theSendAnswersSentWithTheExpoTicketWhenThePushWentOut() throws {
        let lab = try ProviderPass.Lab()
        defer { lab.cleanup() }
        let expo = try FakeExpo(tls: lab.certificates)
        defer { expo.shutdown() }
        try SecurityTests.supabase { tdb, db in
            let (user, token) = try SendNotificationTests.person(db)
            let answer = try Self.post(db, SendNotificationTests.request(user)) { n in
                guard n == 1 else { return }
                let (summary, _) = ProviderPass.pass(tdb.url, lab.base.merging(lab.expo(expo)) { $1 }, now: SendPushTests.dueNow())
                #expect(summary.sent == 1, "\(summary.error ?? "")")
            }
            #expect(answer.status == 200)
            #expect(answer.body["status"]?.stringValue == "sent", "\(answer.body.jsonText)")
            let ticket = try #require(answer.body["expo_receipt_id"]?.stringValue)
            #expect(expo.issuedTickets[ticket] == token)
            #expect(answer.body["push_token"]?.stringValue == token)
            #expect(answer.body["user_id"]?.stringValue == user.uuidString.lowercased())
            #expect(answer.body["sent_at"]?.doubleValue ?? 0 > 1_600_000_000_000)
            let id = try #require(answer.body["notification_id"]?.stringValue)
            #expect(try db.query("select status from notification_queue where id = \(id)::uuid").first?["status"].string == "sent")
            #expect(answer.calls == ["send_notification", "send_notification_status"])
        }
    }

    /// A push the provider refuses for good while the answer waits is answered `failed` with the error.
    @Test func theSendAnswersFailedWithTheProvidersRefusal() throws {
        let lab = try ProviderPass.Lab()
        defer { lab.cleanup() }
        let expo = try FakeExpo(tls: lab.certificates)
        defer { expo.shutdown() }
        try SecurityTests.supabase { tdb, db in
            let (user, token) = try SendNotificationTests.person(db)
            expo.failTicket(token: token, error: "DeviceNotRegistered", message: "not a registered push notification recipient")
            let answer = try Self.post(db, SendNotificationTests.request(user)) { n in
                guard n == 1 else { return }
                _ = ProviderPass.pass(tdb.url, lab.base.merging(lab.expo(expo)) { $1 }, now: SendPushTests.dueNow())
            }
            #expect(answer.status == 200)
            #expect(answer.body["status"]?.stringValue == "failed", "\(answer.body.jsonText)")
            #expect(answer.body["error"]?.stringValue?.contains("not a registered push notification recipient") == true,
                    "\(answer.body.jsonText)")
            #expect(answer.body["expo_receipt_id"] == nil)
        }
    }

    /// Nothing sent within the wait (no pass ran) is `scheduled`; a notification scheduled later than
    /// the wait is answered `scheduled` at once, without reading its status.
    @Test func theSendAnswersScheduledWhenThePushIsNotOutYet() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, token) = try SendNotificationTests.person(db)
            let waited = try Self.post(db, SendNotificationTests.request(user), waitMs: 300)
            #expect(waited.status == 200 && waited.body["status"]?.stringValue == "scheduled")
            #expect(waited.body["push_token"]?.stringValue == token && waited.body["sent_at"] == .null)
            #expect(waited.calls.first == "send_notification" && waited.calls.dropFirst().allSatisfy { $0 == "send_notification_status" })
            #expect(waited.calls.count >= 2)

            let later = (Date().addingTimeInterval(3600).timeIntervalSince1970 * 1000).rounded()
            let ahead = try Self.post(db, SendNotificationTests.request(user, ["scheduled_at": .number(later)]))
            #expect(ahead.status == 200 && ahead.body["status"]?.stringValue == "scheduled")
            #expect(ahead.body["scheduled_at"]?.doubleValue == later)
            #expect(ahead.calls == ["send_notification"])
        }
    }

    /// The refusals, each with its HTTP status and the contract's error body: no service role key 403,
    /// a bad request 400, no device 404, a dead token 422, push switched off 422, over the rate limit
    /// 429 with `retry_after`.
    @Test func theRefusalsAnswerTheContractsStatuses() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, _) = try SendNotificationTests.person(db)
            let request = SendNotificationTests.request(user)
            for headers in [[:], ["X-Supabase-Service-Role": "wrong"], ["Authorization": "Bearer " + Self.serviceKey + "x"]] {
                let answer = try Self.post(db, request, headers: headers, waitMs: 200)
                #expect(Self.error(answer) == (403, "forbidden") && answer.calls.isEmpty, "\(headers)")
            }
            #expect(try Self.post(db, request, headers: ["Authorization": "Bearer " + Self.serviceKey], waitMs: 200).status == 200)

            let missing = try Self.post(db, SendNotificationTests.request(user, ["title_ar": nil]))
            #expect(Self.error(missing) == (400, "invalid_request"))
            #expect(missing.body["error"]?["message"]?.stringValue == "title_ar is required (a non-empty string)")
            #expect(Self.error(try Self.post(db, .array([]))) == (400, "invalid_request"))

            let noDevice = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(noDevice))")
            #expect(Self.error(try Self.post(db, SendNotificationTests.request(noDevice))) == (404, "user_not_found"))
            try db.execute("""
                insert into device_tokens (user_id, device_token, provider, is_active, deactivated_at, deactivated_reason)
                values (\(noDevice), 'ExponentPushToken[dead]', 'expo', false, now(), 'expo DeviceNotRegistered: gone')
                """)
            #expect(Self.error(try Self.post(db, SendNotificationTests.request(noDevice))) == (422, "invalid_token"))
            // A person who switched push off: 422 push_disabled at once, not a send skipped later.
            try db.execute("update user_profiles set notify_push = false where user_id = \(user)")
            #expect(Self.error(try Self.post(db, request)) == (422, "push_disabled"))
            try db.execute("update user_profiles set notify_push = null where user_id = \(user)")

            // A full minute: 100 sends 30 seconds ago.
            try db.execute("""
                insert into notification_send_windows (user_id, sent_at)
                values (\(user), array(select clock_timestamp() - interval '30 seconds' from generate_series(1, 100)))
                on conflict (user_id) do update set sent_at = excluded.sent_at
                """)
            let limited = try Self.post(db, request)
            #expect(Self.error(limited) == (429, "rate_limit_exceeded"))
            let wait = limited.body["error"]?["retry_after"]?.intValue ?? 0
            #expect(wait >= 1 && wait <= 30, "retry_after \(wait)")
            #expect(limited.body["error"]?["message"]?.stringValue?.contains("Retry after \(wait) seconds") == true)
            #expect(try SendNotificationTests.count(db, "notification_queue") == 1, "only the accepted send")
        }
    }

    /// What PostgreSQL answers beyond the contract's codes: a call the role may not make is `forbidden`,
    /// anything unexpected `internal_error` without its text.
    @Test func unexpectedOutcomesAnswerForbiddenOrInternalError() throws {
        func respond(_ code: String, _ message: String) throws -> JSONValue {
            try EdgeFunctionTests.drive(.object(["op": "respond_send", "data": .null,
                                                 "error": .object(["code": .string(code), "message": .string(message)])]))
        }
        let denied = try respond("42501", "permission denied for function send_notification")
        #expect(denied["response"]?["status"]?.intValue == 403)
        #expect(denied["response"]?["body"]?["error"]?["code"]?.stringValue == "forbidden")
        let broken = try respond("XX000", "token ExponentPushToken[secret] broke")
        #expect(broken["response"]?["status"]?.intValue == 500 && !broken.jsonText.contains("secret"))
        #expect(try respond("PT500", "internal_error")["response"]?["status"]?.intValue == 500)
    }
}
