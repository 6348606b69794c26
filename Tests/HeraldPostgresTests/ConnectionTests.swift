import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

struct TestFailure: Error {}

/// A connection to the test server's `postgres` database; tests here use temp tables only.
func serverConnection() throws -> PGConnection {
    try PGConnection(TestDatabase.serverURL())
}

@Suite struct BindingRoundTripTests {
    @Test func strings() throws {
        let conn = try serverConnection()
        let values = ["plain", "it's", "say \"hi\"", #"back\slash"#, #"\\double \" mix '"#, "", " padded ",
                      "NULL", "{a,b}", "line\nbreak\ttab", "héllo 日本語 🎉 \u{0301}", "$1", String(repeating: "x", count: 100_000)]
        for value in values {
            let row = try conn.query("select \(value)::text as v, length(\(value)::text) as n")[0]
            #expect(row["v"].string == value)
            #expect(row["n"].int == value.unicodeScalars.count)
        }
        try conn.execute("create temp table strings (v text)")
        for value in values { try conn.execute("insert into strings values (\(value))") }
        let stored = try conn.query("select v from strings").map { $0["v"].string }
        #expect(stored == values)
    }

    @Test func integersDoublesBools() throws {
        let conn = try serverConnection()
        for value in [0, 1, -1, 42, Int.max, Int.min] {
            #expect(try conn.query("select \(value)::int8 + 0 as v")[0]["v"].int == value)
        }
        for value: Int64 in [0, Int64.max, Int64.min] {
            #expect(try conn.query("select \(value)::int8 as v")[0]["v"].int.map(Int64.init) == value)
        }
        for value in [0.0, 0.1, -2.5e-300, 1e300, Double.pi, 1.0 / 3.0, .greatestFiniteMagnitude, .infinity, -.infinity] {
            #expect(try conn.query("select \(value)::float8 as v")[0]["v"].double == value)
        }
        #expect(try conn.query("select \(Double.nan)::float8 as v")[0]["v"].double?.isNaN == true)
        #expect(try conn.query("select 1.25::numeric as v")[0]["v"].double == 1.25)
        for value in [true, false] {
            let row = try conn.query("select \(value)::bool as v, not \(value)::bool as w")[0]
            #expect(row["v"].bool == value)
            #expect(row["w"].bool == !value)
        }
    }

    /// `row.double(at:)`, `int(at:)` and `uuid(at:)` parse in place what `row[i].double` etc. parse
    /// from a String: the same answer for every kind of cell, NULL and nonsense included.
    @Test func accessorsByPositionAgreeWithPGValue() throws {
        let conn = try serverConnection()
        let rows = try conn.query("""
            select * from (values
              ('1'::text, '1.5'::float8, 42::int8, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid),
              ('-7', 'NaN', -9223372036854775808, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'),
              ('+3', 'Infinity', 9223372036854775807, null),
              ('12x', '-Infinity', 0, '00000000-0000-0000-0000-000000000000'),
              ('', '1e-300', null, null),
              ('99999999999999999999', 0.1, null, null),
              (null, null, null, null)
            ) as t(a, b, c, d)
            """)
        #expect(rows.count == 7)
        for row in rows {
            for column in 0..<4 {
                let value = row[column]
                #expect(row.int(at: column) == value.int, "int of \(value)")
                #expect(row.uuid(at: column) == value.uuid, "uuid of \(value)")
                let a = row.double(at: column), b = value.double
                #expect(a == b || (a?.isNaN == true && b?.isNaN == true), "double of \(value)")
            }
        }
        #expect(rows[1].int(at: 2) == Int.min)
        #expect(rows[2].double(at: 1) == .infinity)
        #expect(rows[3].int(at: 0) == nil)
        #expect(rows[0].int(at: 9) == nil && rows[0].double(at: -1) == nil)
    }

    @Test func uuids() throws {
        let conn = try serverConnection()
        let id = UUID()
        let row = try conn.query("select \(id)::uuid as v, \(id)::uuid::text as t")[0]
        #expect(row["v"].uuid == id)
        #expect(row["t"].string == id.uuidString.lowercased())
    }

    @Test func datesWithMicroseconds() throws {
        let conn = try serverConnection()
        let micros: [Int64] = [0, 1_769_310_000_123_456, 1_769_310_000_000_001, -1, -86_400_000_000 * 365 * 70 + 999_999,
                               951_782_400_000_000 /* 2000-02-29 */, PGTimestamp_micros(Date())]
        for value in micros {
            let date = Date(timeIntervalSince1970: Double(value) / 1_000_000)
            let row = try conn.query("""
                select \(date)::timestamptz as v, (extract(epoch from \(date)::timestamptz) * 1000000)::int8 as us
                """)[0]
            // The server read the microseconds we meant …
            #expect(row["us"].int.map(Int64.init) == value)
            // … and we read back what it sent.
            let back = try #require(row["v"].date)
            #expect(abs(back.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_000_5)
        }
        let row = try conn.query("select '2026-01-25 03:00:00.123456+00'::timestamptz as a, '2026-01-25 03:00:00+00'::timestamptz as b")[0]
        #expect(row["a"].string == "2026-01-25 03:00:00.123456+00")
        #expect(row["b"].string == "2026-01-25 03:00:00+00")
        let b = try #require(row["b"].date)
        #expect(b.timeIntervalSince1970 == 1_769_310_000)
        let a = try #require(row["a"].date)
        #expect(abs(a.timeIntervalSince1970 - 1_769_310_000.123456) < 0.000_000_5)

        for date in [Date.distantPast, Date(timeIntervalSince1970: 253_402_300_800.5)] {
            let row = try conn.query("select \(date)::timestamptz as v")[0]
            #expect(row["v"].date == date, "\(row["v"])")
        }
        #expect(try conn.query("select 'infinity'::timestamptz as v")[0]["v"].date == .distantFuture)
    }

    @Test func nullableArraysBindNullForNil() throws {
        let conn = try serverConnection()
        let strings: [String?] = ["a", nil, "NULL", "b\"c", #"d\e"#, "", nil, "nul\u{0}here", "日本 🎉"]
        let rows = try conn.query("""
            select v, v is null as missing from unnest(\(PGNullableArray(strings))::text[]) with ordinality as u(v, i) order by i
            """)
        #expect(rows.map { $0["v"].string } == strings.map { $0.map { $0.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") } })
        #expect(rows.map { $0["missing"].bool } == strings.map { $0 == nil })
        let ints: [Int32?] = [nil, .min, 0, .max, nil]
        #expect(try conn.query("select v from unnest(\(PGNullableArray(ints))::int[]) with ordinality as u(v, i) order by i")
            .map { $0["v"].int } == ints.map { $0.map(Int.init) })
        let dates: [Date?] = [nil, Date(timeIntervalSince1970: 1_769_310_000.25)]
        #expect(try conn.query("select v from unnest(\(PGNullableArray(dates))::timestamptz[]) with ordinality as u(v, i) order by i")
            .map { $0["v"].date } == dates)
        #expect(try conn.query("select cardinality(\(PGNullableArray([String?]()))::text[]) as n")[0]["n"].int == 0)
    }

    /// The record binds provider answers and app text as array literals: whatever the text (quotes,
    /// backslashes, braces, NULs, invalid UTF-8 repaired, `NULL` itself), the server reads back each
    /// element as it was meant, NULs as U+FFFD, and every nil as NULL.
    @Test func nullableArraysRoundTripHostileText() throws {
        let conn = try serverConnection()
        var fuzz = Fuzz(seed: 22)
        var values: [String?] = ["NULL", "{a,b}", " lead", "trail ", "\\\"", ""]
        for _ in 0..<Fuzz.iterations {
            values.append(fuzz.chance(0.1) ? nil : fuzz.hostileText())
        }
        let back = try conn.query("""
            select v, v is null as missing from unnest(\(PGNullableArray(values))::text[]) with ordinality as u(v, i) order by i
            """)
        #expect(back.count == values.count)
        for (row, value) in zip(back, values) {
            #expect(row["missing"].bool == (value == nil))
            // By scalar: a NUL followed by a combining mark is one Character, which a String search misses.
            let want = value.map { String(String.UnicodeScalarView($0.unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : $0 })) }
            #expect(row["v"].string == want)
        }
    }

    /// Our own UUID text (no Foundation `snprintf`) is what the server and Foundation read and write.
    @Test func uuidTextAgreesWithFoundationAndTheServer() throws {
        var ids = (0..<2000).map { _ in UUID() }
        ids += [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))]
        for id in ids {
            #expect(id.pgText == id.uuidString.lowercased())
            #expect(UUID(uuidString: id.pgText) == id)
        }
        let conn = try serverConnection()
        let back = try conn.query("select v::text as t from unnest(\(ids)::uuid[]) with ordinality as u(v, i) order by i")
        #expect(back.map { $0["t"].string } == ids.map { $0.pgText })
    }

    @Test func arrays() throws {
        let conn = try serverConnection()
        let strings = ["a", "b\"c", #"d\e"#, #"\""#, "", "NULL", "x,y", "{}", " sp ", "日本 🎉", "'quoted'"]
        // The server's own unnest, independent of our array parser.
        let unnested = try conn.query("select v from unnest(\(strings)::text[]) with ordinality as u(v, i) order by i")
        #expect(unnested.map { $0["v"].string } == strings)
        #expect(try conn.query("select \(strings)::text[] as v")[0]["v"].array == strings)
        #expect(try conn.query("select cardinality(\([String]())::text[]) as n")[0]["n"].int == 0)

        let ids = (0..<1000).map { _ in UUID() }
        try conn.execute("create temp table ids (id uuid primary key)")
        #expect(try conn.execute("insert into ids select unnest(\(ids)::uuid[])") == 1000)
        let some = Array(ids[10..<20])
        let found = try conn.query("select id from ids where id = any(\(some)::uuid[])").compactMap { $0["id"].uuid }
        #expect(Set(found) == Set(some))

        let ints = [3, -1, Int.max]
        #expect(try conn.query("select \(ints)::int8[] as v")[0]["v"].array == ["3", "-1", String(Int.max)])
    }

    @Test func nullsAndOptionals() throws {
        let conn = try serverConnection()
        let none: String? = nil
        let noneID: UUID? = nil
        let some: Int? = 5
        let row = try conn.query("select \(none)::text as a, \(noneID)::uuid as b, \(some)::int as c, \(none)::text is null as d")[0]
        #expect(row["a"].isNull)
        #expect(row["b"].uuid == nil)
        #expect(row["c"].int == 5)
        #expect(row["d"].bool == true)
        #expect(row["no_such_column"].isNull)
        #expect(row[99].isNull)
        #expect(row[2].int == 5)
        #expect(row.columns == ["a", "b", "c", "d"])
    }

    @Test func queriesBuiltInPiecesExecute() throws {
        let conn = try serverConnection()
        // Parameters are untyped: where the server cannot infer a type, the SQL casts.
        var sql: SQL = "select x from generate_series(\(1)::int, \(100)::int) as x where x % \(7) = 0"
        sql += " and x > \(20)"
        sql += " and x <> all(\([28, 35])::int[])"
        sql.append(" order by x limit \(3)")
        #expect(try conn.query(sql).map { $0["x"].int } == [21, 42, 49])
    }

    @Test func largeResults() throws {
        let conn = try serverConnection()
        let result = try conn.query("""
            select i, 'row ' || i as s, now() + i * interval '1 second' as at, gen_random_uuid() as id
            from generate_series(1, \(10_000)) as i
            """)
        #expect(result.count == 10_000)
        #expect(result.reduce(0) { $0 + ($1["i"].int ?? 0) } == 50_005_000)
        #expect(result[9_999]["s"].string == "row 10000")
        #expect(result.allSatisfy { $0["at"].date != nil && $0["id"].uuid != nil })
    }
}

@Suite struct ErrorTests {
    @Test func sqlErrorsCarrySQLStateAndLeaveTheConnectionUsable() throws {
        let conn = try serverConnection()
        try conn.execute("create temp table uniq (id int primary key)")
        try conn.execute("insert into uniq values (\(1))")
        let error = try #require(throws: PGError.self) { try conn.execute("insert into uniq values (\(1))") }
        #expect(error.sqlState == "23505")
        #expect(error.sqlState == PGError.uniqueViolation)
        #expect(error.constraint == "uniq_pkey")
        #expect(error.detail?.contains("(id)=(1)") == true)
        #expect(!error.isConnectionFailure)
        #expect(try conn.query("select count(*) as n from uniq")[0]["n"].int == 1)

        let syntax = try #require(throws: PGError.self) { try conn.query("selec 1") }
        #expect(syntax.sqlState == "42601")
        #expect(try conn.query("select 2 as v")[0]["v"].int == 2)

        let twoStatements = try #require(throws: PGError.self) { try conn.query("select 1; select 2") }
        #expect(twoStatements.sqlState == "42601")
    }

    @Test func affectedRows() throws {
        let conn = try serverConnection()
        try conn.execute("create temp table t (id int)")
        #expect(try conn.execute("insert into t select generate_series(1, \(5))") == 5)
        #expect(try conn.execute("update t set id = id + 1 where id > \(2)") == 3)
        #expect(try conn.execute("delete from t where id = \(-1)") == 0)
    }

    @Test func statementTimeout() throws {
        let conn = try serverConnection()
        try conn.setTimeouts(statement: 100, lock: 50, idleInTransaction: 60_000)
        #expect(try conn.query("show statement_timeout")[0][0].string == "100ms")
        #expect(try conn.query("show lock_timeout")[0][0].string == "50ms")
        #expect(try conn.query("show idle_in_transaction_session_timeout")[0][0].string == "1min")
        let error = try #require(throws: PGError.self) { try conn.query("select pg_sleep(2)") }
        #expect(error.sqlState == PGError.queryCanceled)
        try conn.setTimeouts(statement: 0, lock: nil, idleInTransaction: nil)
        #expect(try conn.query("show statement_timeout")[0][0].string == "0")
        #expect(try conn.query("show lock_timeout")[0][0].string == "50ms")
        // Never session state, which a pooler in transaction mode would hand to other clients: a script
        // outside any transaction sees the server's defaults.
        try conn.executeScript("create temp table probe as select current_setting('lock_timeout') as lock")
        #expect(try conn.query("select lock from probe")[0][0].string == "0")
    }

    @Test func sessionSettings() throws {
        let conn = try serverConnection()
        let row = try conn.query("""
            select current_setting('TimeZone') as tz, current_setting('DateStyle') as ds,
                   current_setting('application_name') as app, current_setting('client_encoding') as enc
            """)[0]
        #expect(row["tz"].string == "UTC")
        #expect(row["ds"].string?.hasPrefix("ISO") == true)
        #expect(row["app"].string == "herald")
        #expect(row["enc"].string == "UTF8")
    }

    @Test func connectionFailureHidesThePassword() throws {
        let password = "s3cret-Pa55word"
        for conninfo in ["postgresql://herald:\(password)@127.0.0.1:1/postgres",
                         "host=127.0.0.1 port=1 user=herald password=\(password) dbname=postgres connect_timeout=3"] {
            let error = try #require(throws: PGError.self) { _ = try PGConnection(conninfo) }
            #expect(error.isConnectionFailure)
            #expect(error.sqlState == nil)
            #expect(!error.message.isEmpty)
            #expect(!error.message.contains(password))
            #expect(!error.description.contains(password))
            #expect(error.message.contains("127.0.0.1") || error.message.localizedCaseInsensitiveContains("connect"))
        }
        let bad = try #require(throws: PGError.self) { _ = try PGConnection("postgresql://u:\(password)@host:notaport/db?bogus=1") }
        #expect(bad.isConnectionFailure)
        #expect(!bad.message.contains(password))
    }

    /// Strings libpq cannot parse, which it quotes (whole, or the piece after a cut password) in its
    /// message, with the words of their password.
    static let unparsable: [(conninfo: String, secrets: [String])] = [
        ("postgresql+psycopg2://herald:Sup3r-Secret@db.example/herald", ["Sup3r-Secret"]),
        ("jdbc:postgresql://herald:Sup3r-Secret@db.example:5432/herald", ["Sup3r-Secret"]),
        ("mysql://herald:Sup3r@Secret@db.example/herald", ["Sup3r", "Secret"]),
        ("host=db.example user=herald password=correct horse battery staple", ["correct", "horse", "battery", "staple"]),
        ("host=db.example password = \"Sup3r Secret\" dbname=herald", ["Sup3r", "Secret"]),
        ("host=db.example password=Sup3r\\'Secret Word", ["Sup3r", "Secret", "Word"]),
        ("postgresql://herald:Sup3r-Secret@[::1/herald", ["Sup3r-Secret"]),
        ("postgresql://herald@db.example/herald?password=Sup3r-Secret&sslmode", ["Sup3r-Secret"]),
    ]

    /// Whatever the string's shape, the parse error leaves its password out, from the check alone and
    /// from a connection attempt.
    @Test(arguments: unparsable)
    func anUnparsableConnectionStringIsNotQuotedWithItsPassword(_ conninfo: String, _ secrets: [String]) throws {
        let checked = try #require(throws: PGError.self) { try PGConnection.checkConninfo(conninfo) }
        let connecting = try #require(throws: PGError.self) { _ = try PGConnection(conninfo) }
        for error in [checked, connecting] {
            #expect(!error.message.isEmpty)
            for secret in secrets {
                #expect(!error.description.contains(secret), "\(secret) in: \(error.description)")
            }
        }
        // What is not secret is still said.
        if conninfo.contains("://") && !conninfo.hasPrefix("postgresql://") {
            #expect(checked.message.contains(String(conninfo.prefix { $0 != ":" })), "\(checked.message)")
        }
    }

    @Test func aGoodConnectionStringPassesTheCheck() throws {
        for conninfo in ["", "postgresql://herald:pw@db.example/herald?sslmode=require", "host=db.example password='two words'"] {
            try PGConnection.checkConninfo(conninfo)
        }
        let typo = try #require(throws: PGError.self) { try PGConnection.checkConninfo("host=db.example hots=x") }
        #expect(typo.message.contains("hots"), "an unknown option is named: \(typo.message)")
    }

    @Test func lostConnectionIsAConnectionFailure() throws {
        let conn = try serverConnection()
        let pid = try #require(try conn.query("select pg_backend_pid() as pid")[0]["pid"].int)
        let other = try serverConnection()
        #expect(try other.query("select pg_terminate_backend(\(pid)) as ok")[0]["ok"].bool == true)
        let error = try #require(throws: PGError.self) { try conn.query("select 1") }
        #expect(error.isConnectionFailure)
        #expect(!conn.isOpen)
    }

    @Test func closeIsIdempotent() throws {
        let conn = try serverConnection()
        #expect(conn.isOpen)
        conn.close()
        conn.close()
        #expect(!conn.isOpen)
        let error = try #require(throws: PGError.self) { try conn.query("select 1") }
        #expect(error.isConnectionFailure)
    }
}


/// Microseconds of a date via the same arithmetic the server uses (not PGTimestamp).
func PGTimestamp_micros(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
}
