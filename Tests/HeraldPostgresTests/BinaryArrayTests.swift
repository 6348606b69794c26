import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldPostgres

/// Arrays of uuids, texts, integers and booleans travel in PostgreSQL's binary format. The server
/// must read back exactly what the text form says, whatever the elements: NULLs, hostile text, the
/// integers' edges, empty arrays.
@Suite struct BinaryArrayTests {
    @Test func theseArraysTravelInBinaryAndTheOthersAsText() {
        #expect(binaryType([UUID()]) == .uuidArray)
        #expect(binaryType(["a"]) == .textArray)
        #expect(binaryType([1]) == .int8Array)
        #expect(binaryType([Int64(1)]) == .int8Array)
        #expect(binaryType([Int32(1)]) == .int4Array)
        #expect(binaryType([true]) == .boolArray)
        #expect(binaryType(PGNullableArray<String>([nil])) == .textArray)
        #expect(binaryType([0.5]) == nil)
        #expect(binaryType([Date()]) == nil)
        #expect(binaryType(PGNullableArray<Date>([nil])) == nil)
        #expect(binaryType("scalar") == nil)
    }

    @Test func theWireFormatIsArraySend() {
        // ndim 1, has NULL, element int4 (23), length 2, lower bound 1; then 7 and NULL.
        let bytes: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1,
                              0, 0, 0, 4, 0, 0, 0, 7, 255, 255, 255, 255]
        #expect(PGNullableArray<Int32>([7, nil]).pgParameter == .binary(type: .int4Array, bytes: bytes))
        // Empty: no dimension at all.
        #expect([UUID]().pgParameter == .binary(type: .uuidArray, bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0B, 0x86]))
    }

    /// Random arrays bound in binary read back, element by element, as their text forms bound as
    /// text do, and as the Swift values say.
    @Test func randomArraysReadBackAsTheirTextForms() throws {
        let conn = try PGConnection(TestDatabase.serverURL())
        var fuzz = Fuzz(seed: 31)
        for _ in 0..<200 {
            let count = fuzz.int(0...40)
            func maybe<T>(_ make: () -> T) -> T? { fuzz.chance(0.2) ? nil : make() }
            let texts = PGNullableArray<String>((0..<count).map { _ in fuzz.chance(0.2) ? nil : fuzz.hostileText() })
            let ids = PGNullableArray<UUID>((0..<count).map { _ in fuzz.chance(0.2) ? nil : UUID() })
            let edges: [Int] = [.min, .max, 0, -1, 1, Int(Int32.max), Int(Int32.min)]
            let bigs = PGNullableArray<Int>((0..<count).map { _ in fuzz.chance(0.2) ? nil : (fuzz.chance(0.3) ? fuzz.pick(edges) : fuzz.int(-1_000_000...1_000_000)) })
            let smalls = PGNullableArray<Int32>((0..<count).map { _ in fuzz.chance(0.2) ? nil : Int32(truncatingIfNeeded: fuzz.next()) })
            let flags = PGNullableArray<Bool>((0..<count).map { _ in fuzz.chance(0.2) ? nil : fuzz.chance(0.5) })
            let rows = try conn.query("""
                select t::text as t, i::text as i, b::text as b, s::text as s, f::text as f
                  from unnest(\(texts)::text[], \(ids)::uuid[], \(bigs)::bigint[], \(smalls)::int[], \(flags)::boolean[])
                       with ordinality as u(t, i, b, s, f, n) order by n
                """)
            #expect(rows.count == count)
            #expect(rows.map { $0["t"].string } == texts.elements.map { $0?.pgText })
            #expect(rows.map { $0["i"].string } == ids.elements.map { $0?.pgText })
            #expect(rows.map { $0["b"].string } == bigs.elements.map { $0?.pgText })
            #expect(rows.map { $0["s"].string } == smalls.elements.map { $0?.pgText })
            #expect(rows.map { $0["f"].string } == flags.elements.map { $0.map { $0 ? "true" : "false" } })
            // The same arrays as literals: the server reads both forms alike.
            let same = try conn.query("""
                select \(texts)::text[] is not distinct from \(AsText(texts))::text[]
                   and \(ids)::uuid[] is not distinct from \(AsText(ids))::uuid[]
                   and \(bigs)::bigint[] is not distinct from \(AsText(bigs))::bigint[]
                   and \(smalls)::int[] is not distinct from \(AsText(smalls))::int[]
                   and \(flags)::boolean[] is not distinct from \(AsText(flags))::boolean[] as same
                """)
            #expect(same.first?["same"].bool == true)
        }
    }

    /// A statement's cast converts from the type the binary value names: `[Int]` travels as bigint[]
    /// and `::int[]` narrows it, refusing what does not fit with a readable error, as for text.
    @Test func castsConvertAndRefuseReadably() throws {
        let conn = try PGConnection(TestDatabase.serverURL())
        #expect(try conn.query("select \([1, -2])::int[] as v")[0]["v"].array == ["1", "-2"])
        #expect(try conn.query("select \(["(0,1)", "(2,3)"])::tid[] as v")[0]["v"].array == ["(0,1)", "(2,3)"])
        #expect(try conn.query("select \(["2026-01-25"])::date[] as v")[0]["v"].array == ["2026-01-25"])
        #expect(throws: PGError.self) { try conn.query("select \([Int.max])::int[] as v") }
        #expect(try conn.query("select 1 as ok")[0]["ok"].int == 1)
    }

    private func binaryType<T: PGBindable>(_ value: T) -> PGType? {
        if case .binary(let type, _) = value.pgParameter { return type }
        return nil
    }
}

/// A value bound by its text form only, as every value was before arrays went binary.
private struct AsText<Value: PGBindable>: PGBindable {
    let value: Value
    init(_ value: Value) { self.value = value }
    var pgText: String { value.pgText }
}
