import Foundation
import Testing
@testable import HeraldPostgres

@Suite struct SQLTests {
    @Test func interpolationBindsEveryValue() {
        let id = UUID()
        let name = "Robert'); drop table students;--"
        let sql: SQL = "select * from t where id = \(id) and name = \(name) and n > \(3)"
        #expect(sql.text == "select * from t where id = $1 and name = $2 and n > $3")
        #expect(sql.bindings == [id.uuidString.lowercased(), name, "3"])
    }

    @Test func optionalsBindNull() {
        let missing: String? = nil
        let present: Int? = 7
        let sql: SQL = "values (\(missing), \(present))"
        #expect(sql.text == "values ($1, $2)")
        #expect(sql.bindings == [nil, "7"])
    }

    @Test func unescapedAndIdentifierAreText() {
        let sql: SQL = "select * from \(identifier: "we\"ird") order by id \(unescaped: "desc") limit \(10)"
        #expect(sql.text == #"select * from "we""ird" order by id desc limit $1"#)
        #expect(sql.bindings == ["10"])
    }

    @Test func appendingRenumbersPlaceholders() {
        var sql: SQL = "update t set a = \(1), b = \("x")"
        sql += " where c = \(true)"
        sql.append(" and d = \(2.5)")
        let full = sql + " returning \(unescaped: "id"), \("$1 is text, not a placeholder")"
        #expect(sql.text == "update t set a = $1, b = $2 where c = $3 and d = $4")
        #expect(sql.bindings == ["1", "x", "t", "2.5"])
        #expect(full.text == "update t set a = $1, b = $2 where c = $3 and d = $4 returning id, $5")
        #expect(full.bindings.count == 5)
        #expect(full.bindings[4] == "$1 is text, not a placeholder")
    }

    @Test func fragmentsSpliceAndJoin() {
        let condition: SQL = "kind = \("reminder") and attempts < \(5)"
        let sql: SQL = "select \(unescaped: "id") from q where user_id = \(42) and \(condition) limit \(100)"
        #expect(sql.text == "select id from q where user_id = $1 and kind = $2 and attempts < $3 limit $4")
        #expect(sql.bindings == ["42", "reminder", "5", "100"])

        let values = [1, 2, 3].map { "(\($0), \("n\($0)"))" as SQL }.joined(separator: ", ")
        #expect(values.text == "($1, $2), ($3, $4), ($5, $6)")
        #expect(values.bindings == ["1", "n1", "2", "n2", "3", "n3"])
        #expect([SQL]().joined(separator: ", ").text == "")
    }

    @Test func arraysAreQuotedLiterals() {
        let strings = ["a", "b\"c", "d\\e", "", "NULL", "x,y", "{}"]
        #expect(strings.pgText == #"{"a","b\"c","d\\e","","NULL","x,y","{}"}"#)
        #expect([Int]().pgText == "{}")
        #expect([1, -2].pgText == #"{"1","-2"}"#)
    }

    @Test func scalarsText() {
        #expect(true.pgText == "t")
        #expect(Double.infinity.pgText == "Infinity")
        #expect((-Double.infinity).pgText == "-Infinity")
        #expect(Double.nan.pgText == "NaN")
        #expect(0.1.pgText == "0.1")
        #expect(Int64.min.pgText == "-9223372036854775808")
    }
}

@Suite struct TimestampTests {
    /// Independent of PGTimestamp: Foundation's calendar in UTC.
    func utc(_ y: Int, _ mo: Int, _ d: Int, _ h: Int = 0, _ mi: Int = 0, _ s: Int = 0, micros: Int = 0) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let base = calendar.date(from: DateComponents(year: y, month: mo, day: d, hour: h, minute: mi, second: s))!
        return Date(timeIntervalSinceReferenceDate: base.timeIntervalSinceReferenceDate + Double(micros) / 1_000_000)
    }

    @Test func formatsISO8601WithMicroseconds() {
        #expect(PGTimestamp.format(utc(2026, 1, 25, 3, 0, 0, micros: 123_456)) == "2026-01-25T03:00:00.123456Z")
        #expect(PGTimestamp.format(utc(2024, 2, 29, 23, 59, 59, micros: 999_999)) == "2024-02-29T23:59:59.999999Z")
        #expect(PGTimestamp.format(utc(1969, 12, 31, 23, 59, 59, micros: 500_000)) == "1969-12-31T23:59:59.500000Z")
        // Foundation's distantPast is 0001-01-01 in the Julian calendar: 0000-12-30 proleptic
        // Gregorian (PostgreSQL's calendar), which PostgreSQL writes as 1 BC.
        #expect(PGTimestamp.format(.distantPast) == "0001-12-30T00:00:00.000000Z BC")
        #expect(PGTimestamp.parse("0001-12-30 00:00:00+00 BC") == .distantPast)
        #expect(PGTimestamp.format(PGTimestamp.date(micros: 253_402_300_800_000_000)) == "10000-01-01T00:00:00.000000Z")
        #expect(PGTimestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
    }

    @Test func parsesServerOutput() {
        #expect(PGTimestamp.parse("2026-01-25 03:00:00+00") == utc(2026, 1, 25, 3))
        let withMicros = PGTimestamp.parse("2026-01-25 03:00:00.123456+00")!
        #expect(PGTimestamp.micros(withMicros) == PGTimestamp.micros(utc(2026, 1, 25, 3, micros: 123_456)))
        #expect(PGTimestamp.micros(PGTimestamp.parse("2026-01-25 03:00:00.5+00")!)
                == PGTimestamp.micros(utc(2026, 1, 25, 3, micros: 500_000)))
        #expect(PGTimestamp.parse("2026-01-25 08:30:00+05:30") == utc(2026, 1, 25, 3))
        #expect(PGTimestamp.parse("2026-01-24 22:00:00-05") == utc(2026, 1, 25, 3))
        #expect(PGTimestamp.parse("2026-01-25T03:00:00Z") == utc(2026, 1, 25, 3))
        #expect(PGTimestamp.parse("2026-01-25 03:00:00") == utc(2026, 1, 25, 3))
        #expect(PGTimestamp.parse("2026-01-25") == utc(2026, 1, 25))
        #expect(PGTimestamp.parse("1900-03-01 00:00:00+00") == utc(1900, 3, 1))
        #expect(PGTimestamp.parse("infinity") == .distantFuture)
        #expect(PGTimestamp.parse("-infinity") == .distantPast)
    }

    @Test func rejectsMalformedText() {
        for text in ["", "2026", "2026-13-01", "2026-01-25 3:00:00+00", "2026-01-25 03:00:00+00 junk", "yesterday"] {
            #expect(PGTimestamp.parse(text) == nil, "\(text)")
        }
    }

    @Test func formatThenParseRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let micros = Int64.random(in: -2_000_000_000_000_000...4_000_000_000_000_000, using: &generator)
            let date = PGTimestamp.date(micros: micros)
            let text = PGTimestamp.format(date)
            #expect(PGTimestamp.micros(PGTimestamp.parse(text)!) == micros, "\(text)")
        }
    }
}

@Suite struct ValueTests {
    @Test func accessorsConvertText() {
        #expect(PGValue("42").int == 42)
        #expect(PGValue("4.5").int == nil)
        #expect(PGValue("4.5").double == 4.5)
        #expect(PGValue("NaN").double?.isNaN == true)
        #expect(PGValue("t").bool == true)
        #expect(PGValue("f").bool == false)
        #expect(PGValue("x").bool == nil)
        #expect(PGValue("6f1c2a8e-0d6b-4b8e-9d1a-3c5e7f9a1b2c").uuid == UUID(uuidString: "6F1C2A8E-0D6B-4B8E-9D1A-3C5E7F9A1B2C"))
        for _ in 0..<100 {
            let id = UUID()
            #expect(PGValue(id.uuidString.lowercased()).uuid == id)
            #expect(PGValue(id.uuidString).uuid == id)
        }
        #expect(PGValue("6f1c2a8e-0d6b-4b8e-9d1a-3c5e7f9a1b2g").uuid == nil)
        #expect(PGValue("6f1c2a8e00d6b-4b8e-9d1a-3c5e7f9a1b2c").uuid == nil)
        #expect(PGValue("{6f1c2a8e-0d6b-4b8e-9d1a-3c5e7f9a1b2c}").uuid == nil)
        #expect(PGValue(nil).isNull)
        #expect(PGValue(nil).int == nil)
        #expect(!PGValue("").isNull)
    }

    @Test func parsesArrayOutput() {
        #expect(PGValue(#"{a,"b c","d\"e","f\\g",NULL,"NULL",""}"#).array == ["a", "b c", "d\"e", "f\\g", nil, "NULL", ""])
        #expect(PGValue("{}").array == [])
        #expect(PGValue("[0:1]={1,2}").array == ["1", "2"])
        #expect(PGValue("{{1,2},{3,4}}").array == nil)
        #expect(PGValue("not an array").array == nil)
    }
}

@Suite struct MigrationFileTests {
    @Test func fileNames() {
        #expect(Migrator.parseFileName("001_init.sql")! == (1, "init"))
        #expect(Migrator.parseFileName("10_add_priority.sql")! == (10, "add_priority"))
        #expect(Migrator.parseFileName("README.md") == nil)
        #expect(Migrator.parseFileName("init.sql") == nil)
        #expect(Migrator.parseFileName("_x.sql") == nil)
        #expect(Migrator.parseFileName("001_init.sql.bak") == nil)
    }

    @Test func checksumIsFNV1a() {
        // Published FNV-1a 64 test vectors.
        #expect(FNV1a64.hex(Array("".utf8)) == "cbf29ce484222325")
        #expect(FNV1a64.hex(Array("a".utf8)) == "af63dc4c8601ec8c")
        #expect(FNV1a64.hex(Array("foobar".utf8)) == "85944171f73967e8")
        #expect(Migration(version: 1, name: "a", text: "x").checksum != Migration(version: 1, name: "a", text: "y").checksum)
    }
}
