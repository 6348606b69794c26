import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// People are grouped into place cells so that one weather request serves everyone in a cell: rows of
/// `size` degrees from the South Pole, columns from −180° eastwards, the request for the cell's centre.
/// −180° and 180° are one meridian, each pole one point; junk coordinates are refused with a reason.
@Suite struct WeatherCellsTests {
    /// (latitude, longitude, size) → (row, column, centre latitude, centre longitude).
    @Test(arguments: [
        // London, Sydney, the origin.
        (51.5072, -0.1276, 0.1, 1415, 1798, 51.55, -0.15),
        (-33.8688, 151.2093, 0.1, 561, 3312, -33.85, 151.25),
        (0.0, 0.0, 0.1, 900, 1800, 0.05, 0.05),
        // A point on a border belongs to the cell north and east of it.
        (51.5, -0.2, 0.1, 1415, 1798, 51.55, -0.15),
        // 180° is −180°; just west of it is the last column.
        (10.0, 180.0, 0.1, 1000, 0, 10.05, -179.95),
        (10.0, -180.0, 0.1, 1000, 0, 10.05, -179.95),
        (10.0, 179.99, 0.1, 1000, 3599, 10.05, 179.95),
        // A size that does not divide 360 or 180: the last column and row are narrower, their centres
        // the middle of what is left, still on the globe.
        (10.0, 179.9, 0.7, 142, 514, 9.75, 179.9),
        (89.9, 0.0, 0.7, 257, 257, 89.95, 0.25),
        // Each pole is one point: one cell whatever the longitude.
        (90.0, 45.0, 0.1, 1799, 0, 89.95, -179.95),
        (90.0, -120.0, 0.1, 1799, 0, 89.95, -179.95),
        (-90.0, 10.0, 0.1, 0, 0, -89.95, -179.95),
        (89.99, 45.0, 0.1, 1799, 2250, 89.95, 45.05),
        // The setting's bounds.
        (51.5, -0.1, 1.0, 141, 179, 51.5, -0.5),
        (51.5072, -0.1276, 0.01, 14150, 17987, 51.505, -0.125),
    ])
    func aPlaceFallsInItsCell(_ lat: Double, _ lon: Double, _ size: Double, _ row: Int, _ column: Int,
                              _ centreLat: Double, _ centreLon: Double) throws {
        let cell = try WeatherCells.cell(latitude: lat, longitude: lon, size: size).get()
        #expect(cell.row == row && cell.column == column, "\(cell)")
        #expect(abs(cell.latitude - centreLat) < 1e-9 && abs(cell.longitude - centreLon) < 1e-9,
                "centre \(cell.latitude), \(cell.longitude)")
        #expect(cell.key == "\(size)/\(row)/\(column)")
    }

    @Test(arguments: [
        (nil, 0.0, "no location"), (0.0, nil, "no location"),
        (Double.nan, 0.0, "latitude is not a number"), (0.0, -Double.nan, "longitude is not a number"),
        (90.000001, 0.0, "latitude is outside -90…90"), (-91.0, 0.0, "latitude is outside -90…90"),
        (Double.infinity, 0.0, "latitude is outside -90…90"), (0.0, -Double.infinity, "longitude is outside -180…180"),
        (0.0, 180.0001, "longitude is outside -180…180"), (0.0, 360.0, "longitude is outside -180…180"),
        (0.0, -1e308, "longitude is outside -180…180"), (Double.greatestFiniteMagnitude, 0.0, "latitude is outside -90…90"),
    ] as [(Double?, Double?, String)])
    func junkCoordinatesAreRefusedWithAReason(_ lat: Double?, _ lon: Double?, _ reason: String) {
        #expect(throws: Unplaceable(description: reason)) { try WeatherCells.cell(latitude: lat, longitude: lon, size: 0.1).get() }
    }

    /// People in one cell share it, in the order their cells first appear; junk is set aside alone.
    @Test func peopleAreGroupedByCell() {
        let grouping = WeatherCells.group([
            ("a", 51.51, -0.19), ("b", 51.52, -0.18), ("c", .nan, 0), ("d", 53.41, -2.29), ("e", 51.59, -0.11), ("f", nil, nil),
        ], size: 0.1)
        #expect(grouping.cells.map(\.members) == [["a", "b", "e"], ["d"]])
        #expect(grouping.cells.map(\.cell.key) == ["0.1/1415/1798", "0.1/1434/1777"])
        #expect(grouping.unplaceable.map(\.id) == ["c", "f"])
        #expect(grouping.unplaceable.map(\.reason.description) == ["latitude is not a number", "no location"])
    }

    @Test(arguments: [("0.1", 0.1), ("1", 1.0), ("0.01", 0.01), ("0.25", 0.25), ("1.0", 1.0), ("00.5", 0.5)])
    func aCellSizeIsPlainDegrees(_ text: String, _ size: Double) {
        #expect(WeatherCells.size(text) == size)
    }

    @Test(arguments: ["", "0", "0.0", "0.009", "1.01", "2", "-0.1", "+0.1", " 0.1", "0.1 ", "nan", "inf", "1e-1",
                      "0x1p-3", ".5", "1.", "0,1", "0..1", "0.1.2", "١", "0.100000001", String(repeating: "9", count: 400)])
    func anythingElseIsNoCellSize(_ text: String) {
        #expect(WeatherCells.size(text) == nil)
    }

    /// Whatever the coordinates and the size — any bit pattern, the globe's edges — a cell is either
    /// refused or has its centre on the globe, within half a cell of the point (across the
    /// antimeridian where it wraps), and the centre falls in the cell itself.
    @Test func everyCellHasItsCentreOnTheGlobeAndInItself() throws {
        var fuzz = Fuzz(seed: 53)
        let edges: [Double] = [90, -90, 180, -180, 0, -0.0, 89.99999999, 179.99999999, -179.99999999, .nan, .infinity]
        for _ in 0..<Fuzz.iterations {
            func coordinate(_ limit: Double) -> Double {
                switch fuzz.below(4) {
                case 0: return fuzz.pick(edges)
                case 1: return Double(bitPattern: fuzz.next())
                default: return Double.random(in: -limit...limit, using: &fuzz)
                }
            }
            let lat = coordinate(90), lon = coordinate(180)
            let size = fuzz.chance(0.5) ? fuzz.pick([0.01, 0.1, 0.7, 1, 0.3, 0.07]) : Double.random(in: WeatherCells.sizeRange, using: &fuzz)
            guard case .success(let cell) = WeatherCells.cell(latitude: lat, longitude: lon, size: size) else {
                #expect(!(lat.isFinite && abs(lat) <= 90 && lon.isFinite && abs(lon) <= 180), "\(lat), \(lon) refused")
                continue
            }
            #expect(abs(cell.latitude) < 90 && abs(cell.longitude) < 180, "\(lat), \(lon), \(size) → \(cell)")
            #expect(abs(cell.latitude - lat) <= size / 2 + 1e-9, "\(lat) → \(cell)")
            let gap = abs(cell.longitude - lon), wrapped = min(gap, 360 - gap)
            #expect(abs(lat) == 90 || wrapped <= size / 2 + 1e-9, "\(lon) → \(cell)")
            let again = try WeatherCells.cell(latitude: cell.latitude, longitude: cell.longitude, size: size).get()
            #expect(again == cell, "\(lat), \(lon), \(size): the centre falls in \(again), not \(cell)")
        }
    }
}
