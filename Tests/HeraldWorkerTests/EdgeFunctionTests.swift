import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The app's endpoints (deploy/supabase/functions: push-notification, notifications-register-device,
/// daily-forecast)
/// end to end as far as this machine allows: the edge functions' own routing module runs under Node
/// (Tests/EdgeFunctions/drive.mjs), the call it makes is run against the real PostgreSQL the way
/// PostgREST runs an RPC with a JSON body (as `authenticated`, the caller in request.jwt.claims, the
/// arguments by name from `json_to_record` with the types of the function's parameters), and the
/// outcome goes back through the module to become the seed's HTTP answer. Without Node.js the suite
/// is reported as skipped.
@Suite(.enabled(if: Tools.node, "needs Node.js (scripts/deps.sh installs it)"))
struct EdgeFunctionTests {
    struct EdgeFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static let driver = DeployTests.root.appendingPathComponent("Tests/EdgeFunctions/drive.mjs").path
    static let base = "https://ref.supabase.co/functions/v1/"

    /// What the module answers for one request (`op` route or respond).
    static func drive(_ request: JSONValue) throws -> JSONValue {
        guard let (status, out) = DeployTests.run("node", [driver], stdin: request.jsonText) else {
            throw EdgeFailure("node cannot be started: scripts/deps.sh installs Node.js")
        }
        guard status == 0 else { throw EdgeFailure("drive.mjs failed: \(out)") }
        return try JSONValue.parse(out)
    }

    static func route(_ method: String, _ path: String, body: JSONValue? = nil) throws -> JSONValue {
        var request: [String: JSONValue] = ["op": "route", "method": .string(method), "url": .string(base + path)]
        if let body { request["body"] = body }
        return try drive(.object(request))
    }

    /// Runs the call as PostgREST runs `POST /rpc/<fn>` with the arguments as its JSON body, and hands
    /// the outcome (the result, or PostgREST's error body) to the module: the seed's status and body.
    static func call(_ db: PGConnection, _ routed: JSONValue, as user: UUID?) throws -> (status: Int, body: JSONValue) {
        guard let fn = routed["call"]?["fn"]?.stringValue, case .object(let args)? = routed["call"]?["args"] else {
            throw EdgeFailure("not a call: \(routed.jsonText)")
        }
        var outcome = try execute(db, fn, args, role: "authenticated", as: user)
        outcome["op"] = "respond"
        let answer = try drive(.object(outcome))
        return (answer["response"]?["status"]?.intValue ?? 0, answer["response"]?["body"] ?? .null)
    }

    /// `fn(args)` as PostgREST runs it for a request of `role` (and caller `user`): the arguments by name
    /// from `json_to_record` with the parameters' types. The outcome as supabase-js hands it over:
    /// `data`, or `error` with PostgREST's body ({code, message, details, hint}).
    static func execute(_ db: PGConnection, _ fn: String, _ args: [String: JSONValue], role: String,
                        as user: UUID?) throws -> [String: JSONValue] {
        let params = try db.query("""
            select a.name, format_type(a.type, null) as type
              from pg_proc p, unnest(p.proargnames, p.proargtypes::oid[]) as a(name, type)
             where p.proname = \(fn) and p.pronamespace = 'public'::regnamespace
            """)
        let types = Dictionary(params.compactMap { r in r["name"].string.map { ($0, r["type"].string ?? "text") } }) { a, _ in a }
        let names = args.keys.sorted()
        for name in names where types[name] == nil { throw EdgeFailure("\(fn) has no parameter \(name)") }
        let named = names.map { "\(quoted($0)) := x.\(quoted($0))" }.joined(separator: ", ")
        let columns = names.map { "\(quoted($0)) \(types[$0]!)" }.joined(separator: ", ")
        var outcome: [String: JSONValue] = [:]
        try SecurityTests.act(db, as: role, user, claimsJSON: true)
        defer { try? SecurityTests.owner(db) }
        do {
            let sql: SQL = names.isEmpty
                ? "select public.\(unescaped: quoted(fn))()::text"
                : """
                  select public.\(unescaped: quoted(fn))(\(unescaped: named))::text
                    from json_to_record(\(JSONValue.object(args).jsonText)::json) as x(\(unescaped: columns))
                  """
            let rows = try db.query(sql)
            outcome["data"] = try JSONValue.parse(rows.first?[0].string ?? "null")
        } catch let error as PGError {
            outcome["error"] = .object(["code": .string(error.sqlState ?? ""), "message": .string(error.message),
                                        "details": error.detail.map(JSONValue.string) ?? .null, "hint": .null])
        }
        return outcome
    }

    static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    static func refusal(_ routed: JSONValue) -> (status: Int, code: String?) {
        (routed["response"]?["status"]?.intValue ?? 0, routed["response"]?["body"]?["error"]?["code"]?.stringValue)
    }

    @Test func theNotificationListAnswersSeed003sGetWithItsQueryParameters() throws {
        try SecurityTests.supabase { tdb, db in
            let (a, b) = (UUID(), UUID())
            // 150 notifications for A (every third read; reminder, prompt, system in turn), 10 for B.
            try db.execute("""
                insert into inbox (user_id, type, title, body, is_read, created_at)
                select \(a), (array['reminder', 'prompt', 'system'])[1 + i % 3], 'n' || i, 'b', i % 3 = 0,
                       now() - make_interval(mins => i)
                  from generate_series(1, 150) i
                """)
            try db.execute("insert into inbox (user_id, type, title, body) select \(b), 'reminder', 'x', 'y' from generate_series(1, 10)")

            let routed = try Self.route("GET", "push-notification?limit=50&unread_only=true&type=reminder,prompt")
            #expect(routed["call"]?["fn"]?.stringValue == "get_notifications")
            #expect(routed["call"]?["args"]?["limit"]?.intValue == 50)
            let (status, body) = try Self.call(db, routed, as: a)
            #expect(status == 200)
            // Every reminder is read (i % 3 == 0), so the unread reminders and prompts are the 50 prompts.
            let expected = (1...150).filter { $0 % 3 != 0 && ["reminder", "prompt"].contains(["reminder", "prompt", "system"][$0 % 3]) }
            #expect(body["total_count"]?.intValue == expected.count)
            #expect(body["unread_count"]?.intValue == 100)
            #expect(body["limit"]?.intValue == 50 && body["offset"]?.intValue == 0)
            let page = AppContractTests.array(body["notifications"])
            #expect(page.count == min(50, expected.count))
            #expect(page.allSatisfy { $0["is_read"]?.boolValue == false && $0["notification_type"]?.stringValue == "prompt" })
            #expect(page.first?["title_en"]?.stringValue == "n1", "newest first")

            // The second page, and the defaults.
            let next = try Self.call(db, try Self.route("GET", "push-notification?limit=20&offset=40&unread_only=true&type=prompt"), as: a)
            #expect(AppContractTests.array(next.body["notifications"]).count == 10)
            let defaults = try Self.call(db, try Self.route("GET", "push-notification"), as: a)
            #expect(defaults.body["limit"]?.intValue == 20 && AppContractTests.array(defaults.body["notifications"]).count == 20)
            #expect(defaults.body["total_count"]?.intValue == 150)
            // B sees only B's.
            #expect(try Self.call(db, try Self.route("GET", "push-notification?limit=100"), as: b).body["total_count"]?.intValue == 10)

            // Bad arguments: caught by the module, or by the function (limit 101) — the same answer.
            for query in ["limit=abc", "limit=1.5", "offset=-", "unread_only=maybe"] {
                #expect(Self.refusal(try Self.route("GET", "push-notification?" + query)) == (422, "validation_error"), "\(query)")
            }
            for query in ["limit=0", "limit=101", "offset=-1"] {
                let answer = try Self.call(db, try Self.route("GET", "push-notification?" + query), as: a)
                #expect(answer.status == 422 && answer.body["error"]?["code"]?.stringValue == "validation_error", "\(query)")
            }
            // No caller.
            let nobody = try Self.call(db, try Self.route("GET", "push-notification"), as: nil)
            #expect(nobody.status == 401 && nobody.body["error"]?["code"]?.stringValue == "unauthorized")
            #expect(Self.refusal(try Self.route("PUT", "push-notification")).status == 405)
        }
    }

    @Test func markingReadAndTheDeviceEndpointsAnswerSeed003sShapes() throws {
        try SecurityTests.supabase { tdb, db in
            let (a, b) = (UUID(), UUID())
            try db.execute("insert into user_profiles (user_id) values (\(a)), (\(b))")
            let ids = try db.query("""
                insert into inbox (user_id, type, title, body) select u, 'system', 't', 'b' from (values (\(a)::uuid), (\(a)::uuid), (\(b)::uuid)) v(u)
                returning id, user_id
                """)
            let mine = ids.filter { $0["user_id"].uuid == a }.compactMap { $0["id"].uuid?.uuidString.lowercased() }
            let theirs = ids.filter { $0["user_id"].uuid == b }.compactMap { $0["id"].uuid?.uuidString.lowercased() }
            let patch = try Self.route("PATCH", "push-notification",
                                       body: .object(["notification_ids": .array((mine + theirs).map(JSONValue.string))]))
            let marked = try Self.call(db, patch, as: a)
            #expect(marked.status == 200)
            #expect(marked.body["updated_count"]?.intValue == 2, "B's id is ignored")
            #expect(marked.body["read_at"]?.intValue ?? 0 > 0)
            #expect(Self.refusal(try Self.route("PATCH", "push-notification", body: .object(["notification_ids": .array([.string("x")])])))
                    == (422, "validation_error"))
            #expect(Self.refusal(try Self.route("PATCH", "push-notification", body: .object([:]))) == (422, "validation_error"))

            let token = "ExponentPushToken[jH7fKr23kP9mN8qL5vR1sT]"
            let register = try Self.route("POST", "notifications-register-device", body: .object([
                "push_token": .string(token), "device_type": .string("ios"), "device_name": .string("iPhone 14 Pro"),
                "app_version": .string("1.0.0"), "locale": .string("ar"),
            ]))
            let registered = try Self.call(db, register, as: a)
            #expect(registered.status == 200)
            #expect(registered.body["push_token"]?.stringValue == token)
            #expect(registered.body["device_type"]?.stringValue == "ios")
            #expect(registered.body["locale"]?.stringValue == "ar")
            #expect(registered.body["status"]?.stringValue == "active")
            #expect(registered.body["user_id"]?.stringValue == a.uuidString.lowercased())
            #expect(registered.body["registered_at"]?.intValue ?? 0 > 1_600_000_000_000, "milliseconds")

            let malformed = try Self.call(db, try Self.route("POST", "notifications-register-device", body: .object([
                "push_token": .string("not a token"), "device_type": .string("ios"),
            ])), as: a)
            #expect(malformed.status == 400 && malformed.body["error"]?["code"]?.stringValue == "invalid_token")
            #expect(Self.refusal(try Self.route("POST", "notifications-register-device", body: .object(["device_type": .string("ios")])))
                    == (422, "validation_error"))
            #expect(Self.refusal(try Self.route("POST", "notifications-register-device", body: .string("x"))) == (422, "validation_error"))

            let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token
            let gone = try Self.call(db, try Self.route("DELETE", "notifications-register-device?push_token=" + encoded), as: a)
            #expect(gone.status == 200)
            #expect(gone.body["push_token"]?.stringValue == token)
            #expect(gone.body["status"]?.stringValue == "unregistered")
            #expect(gone.body["unregistered_at"]?.intValue ?? 0 > 1_600_000_000_000)
            #expect(Self.refusal(try Self.route("DELETE", "notifications-register-device")) == (422, "validation_error"))
        }
    }

    /// The forecast design's `GET /user/daily-forecast/{date}`: the signed-in user's forecast for that
    /// date in the design's shape (date, weather, flare_forecast, fetched_at); another user's date is
    /// `not_found` (404); a date that is not a calendar date is a `validation_error` (422), caught before
    /// any call; only GET is answered.
    @Test func theDailyForecastAnswersTheForecastDesignsGetForTheCallersOwnDate() throws {
        try SecurityTests.supabase { tdb, db in
            let (a, b) = (UUID(), UUID())
            try db.execute("insert into user_profiles (user_id) values (\(a)), (\(b))")
            try db.execute("""
                insert into daily_forecasts (user_id, forecast_date, risk_level, forecast_summary, why_explanation,
                                             daily_insight, current_weather, created_at)
                values (\(a), '2025-12-10', 'LOW', 'Steady pressure today may feel steadier.', 'Higher pressure can help.',
                        '{"summary_sentence":"Steady.","sign_off":"Take care."}', '{"temperature_2m":4.5}',
                        '2025-12-10T08:00:00Z')
                """)
            for path in ["daily-forecast/2025-12-10", "daily-forecast?date=2025-12-10"] {
                let routed = try Self.route("GET", path)
                #expect(routed["call"]?["fn"]?.stringValue == "get_daily_forecast", "\(path)")
                let (status, body) = try Self.call(db, routed, as: a)
                #expect(status == 200, "\(path)")
                #expect(body["date"] == "2025-12-10")
                #expect(body["fetched_at"] == "2025-12-10T08:00:00Z")
                #expect(body["weather"]?["current"]?["temperature_2m"]?.doubleValue == 4.5)
                #expect(body["flare_forecast"]?["risk"] == "LOW")
                #expect(body["flare_forecast"]?["forecast"] == "Steady pressure today may feel steadier.")
                #expect(body["flare_forecast"]?["why"] == "Higher pressure can help.")
                #expect(body["flare_forecast"]?["daily_insight"]?["sign_off"] == "Take care.")
            }
            let theirs = try Self.call(db, try Self.route("GET", "daily-forecast/2025-12-10"), as: b)
            #expect(theirs.status == 404 && theirs.body["error"]?["code"]?.stringValue == "not_found")
            #expect(theirs.body.jsonText.contains("Steady") == false)
            let nobody = try Self.call(db, try Self.route("GET", "daily-forecast/2025-12-10"), as: nil)
            #expect(nobody.status == 401 && nobody.body["error"]?["code"]?.stringValue == "unauthorized")
            for path in ["daily-forecast", "daily-forecast/2025-02-29", "daily-forecast/2025-12-1", "daily-forecast/tomorrow",
                         "daily-forecast?date=2025-13-01", "daily-forecast/2025-12-10%00"] {
                #expect(Self.refusal(try Self.route("GET", path)) == (422, "validation_error"), "\(path)")
            }
            #expect(Self.refusal(try Self.route("POST", "daily-forecast/2025-12-10")) == (405, "method_not_allowed"))
            #expect(Self.refusal(try Self.route("GET", "daily-forecast/2025-12-10/more")) == (400, "invalid_request"))
        }
    }

    /// The routing reads hostile input (methods, query strings, bodies): a seeded fuzz of 5,000 requests
    /// and outcomes per seed (Tests/EdgeFunctions/fuzz.mjs) finds no throw and no malformed answer.
    @Test(arguments: [1, 20261123])
    func theRoutingSurvivesHostileRequests(seed: Int) throws {
        let fuzz = DeployTests.root.appendingPathComponent("Tests/EdgeFunctions/fuzz.mjs").path
        guard let (status, out) = DeployTests.run("node", [fuzz, "\(seed)", "5000"]) else {
            throw EdgeFailure("node cannot be started: scripts/deps.sh installs Node.js")
        }
        #expect(status == 0 && out.hasPrefix("ok 5000"), "\(out)")
    }

    /// The module's answers to outcomes no database produces here: PostgREST's own JWT errors and an
    /// unexpected failure, whose text never reaches the app.
    @Test func unexpectedErrorsAnswerWithoutTheirText() throws {
        func respond(_ code: String, _ message: String) throws -> JSONValue {
            try Self.drive(.object(["op": "respond", "data": .null,
                                    "error": .object(["code": .string(code), "message": .string(message)])]))
        }
        #expect(try respond("PGRST301", "JWT expired")["response"]?["status"]?.intValue == 401)
        let failed = try respond("XX000", "token ExponentPushToken[secret] broke")
        #expect(failed["response"]?["status"]?.intValue == 500)
        #expect(failed.jsonText.contains("secret") == false)
        #expect(try respond("22P02", "invalid input syntax for type uuid")["response"]?["status"]?.intValue == 422)
        #expect(Self.refusal(try Self.route("GET", "elsewhere")) == (400, "invalid_request"))
    }
}
