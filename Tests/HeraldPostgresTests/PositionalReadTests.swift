import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A batch's rows are read by position: `string(at:)`, `bool(at:)`, `date(at:)` and `isNull(at:)`
/// give what `row[i].string`, `.bool`, `.date` and `.isNull` give, and `column(_:)` names the
/// position `row["name"]` reads.
@Suite struct PositionalReadTests {
    /// Every kind of cell, NULL and nonsense included, reads the same by position as through `PGValue`.
    @Test func stringsBooleansAndTimesByPositionAgreeWithPGValue() throws {
        let conn = try serverConnection()
        let rows = try conn.query("""
            select * from (values
              ('plain'::text, true, '2026-01-25 03:00:00+00'::timestamptz, 'x'::text),
              ('héllo 日本語', false, '2026-01-25 03:00:00.123456+00', null),
              ('', null, 'infinity', 'true'),
              (null, null, '-infinity', 'false'),
              ('t', null, null, 'yes')
            ) as t(a, b, c, d)
            """)
        #expect(rows.count == 5)
        for row in rows {
            for column in 0..<4 {
                let value = row[column]
                #expect(row.string(at: column) == value.string, "string of \(value)")
                #expect(row.bool(at: column) == value.bool, "bool of \(value)")
                #expect(row.date(at: column) == value.date, "date of \(value)")
                #expect(row.isNull(at: column) == value.isNull, "null of \(value)")
            }
        }
        #expect(rows[0].bool(at: 1) == true && rows[1].bool(at: 1) == false && rows[2].bool(at: 3) == true)
        #expect(rows[0].date(at: 2) == ISO8601DateFormatter().date(from: "2026-01-25T03:00:00Z"))
        #expect(rows[0].string(at: 9) == nil && rows[0].bool(at: -1) == nil && rows[0].isNull(at: 4))
    }

    /// `column(_:)` is the first column of that name, as `row["name"]` reads it; nil for no such column.
    @Test func aColumnsPositionIsTheOneItsNameReads() throws {
        let conn = try serverConnection()
        let result = try conn.query("select 1 as a, 2 as b, 3 as a")
        #expect(result.column("a") == 0 && result.column("b") == 1 && result.column("c") == nil)
        #expect(result[0].column("b") == 1)
        #expect(result[0].int(at: result.column("a")!) == result[0]["a"].int)
    }
}
