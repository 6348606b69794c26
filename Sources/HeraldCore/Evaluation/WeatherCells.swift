import Foundation

/// One place cell of the weather grid: the square of `size` degrees of latitude by `size` degrees of
/// longitude that a person's coordinates fall in. Everyone in a cell shares one weather request, made
/// for the cell's centre. Rows count from the South Pole, columns from −180° eastwards.
///
///     let cell = try WeatherCells.cell(latitude: 51.5072, longitude: -0.1276, size: 0.1).get()
///     cell.key                              // "0.1/1415/1798"
///     (cell.latitude, cell.longitude)       // (51.55, -0.15): the centre the weather is asked for
public struct WeatherCell: Hashable, Sendable, CustomStringConvertible {
    public let size: Double
    public let row: Int
    public let column: Int
    /// The centre, always within −90…90 and −180…180: a cell cut short by a pole or by the
    /// antimeridian (when `size` does not divide 180 or 360) has the centre of what is left of it.
    public let latitude: Double
    public let longitude: Double

    /// The cell's name where answers are kept: the size, the row and the column.
    public var key: String { "\(size)/\(row)/\(column)" }

    public var description: String { key }
}

/// Why a person's coordinates give no cell: their forecast is not made, and the phase says why.
public struct Unplaceable: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
}

/// Groups people into weather cells (`WeatherCell`), so that one request serves everyone in a cell.
///
///     let grouping = WeatherCells.group([(alice, 51.50, -0.12), (bob, 51.52, -0.14), (eve, .nan, 0)], size: 0.1)
///     grouping.cells        // [(cell 0.1/1415/1798, [alice, bob])]
///     grouping.unplaceable  // [(eve, latitude is not a number)]
///
/// Longitudes −180 and 180 are the same meridian and fall in one cell; at either pole, where every
/// longitude is the same point, every longitude falls in one cell. Coordinates that are not numbers or
/// lie outside −90…90 and −180…180 are refused with a reason, never wrapped or clamped: a junk location
/// stays the one person's problem.
public enum WeatherCells {
    /// The default cell size in degrees (`HERALD_WEATHER_CELL_DEGREES`): 0.1° is 11 km of latitude
    /// (less of longitude away from the equator), the scale of the weather models behind Open-Meteo's
    /// default answer (about 1 to 11 km), so neighbours in one cell would get nearly the same answer
    /// anyway.
    public static let defaultSize = 0.1
    /// The sizes the setting may give: from 0.01° (about 1 km, the finest models' grid) to 1° (111 km).
    public static let sizeRange = 0.01...1.0

    /// The cell size a setting's text gives: plain decimal digits (`0.1`, `0.25`, `1`), from 0.01 to 1.
    /// Nil for anything else: NaN, infinities, exponents, hex, signs, spaces, zero, absurd sizes.
    public static func size(_ text: String) -> Double? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ (1...8).contains($0.count) }),
              text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let size = Double(text), size.isFinite, sizeRange.contains(size) else { return nil }
        return size
    }

    /// The cell of one person's coordinates, or why there is none. `size` must lie in `sizeRange`.
    public static func cell(latitude: Double?, longitude: Double?, size: Double) -> Result<WeatherCell, Unplaceable> {
        guard let latitude, let longitude else { return .failure(Unplaceable(description: "no location")) }
        if let refusal = refusal(latitude, "latitude", limit: 90) ?? refusal(longitude, "longitude", limit: 180) {
            return .failure(refusal)
        }
        precondition(sizeRange.contains(size), "a cell size outside \(sizeRange)")
        let rows = count(180, size), columns = count(360, size)
        let row = index(latitude + 90, size, count: rows)
        // The poles are one point each; 180° is −180°.
        let atPole = abs(latitude) == 90
        let column = atPole ? 0 : index(longitude == 180 ? 0 : longitude + 180, size, count: columns)
        let south = -90 + Double(row) * size, west = -180 + Double(column) * size
        return .success(WeatherCell(size: size, row: row, column: column,
                                    latitude: (south + min(south + size, 90)) / 2,
                                    longitude: (west + min(west + size, 180)) / 2))
    }

    /// People grouped by cell, in the order their cells first appear, and those whose coordinates give
    /// none, with the reason.
    public struct Grouping<ID: Hashable> {
        public var cells: [(cell: WeatherCell, members: [ID])] = []
        public var unplaceable: [(id: ID, reason: Unplaceable)] = []
    }

    public static func group<ID: Hashable>(_ people: [(id: ID, latitude: Double?, longitude: Double?)],
                                           size: Double) -> Grouping<ID> {
        var grouping = Grouping<ID>()
        var at: [WeatherCell: Int] = [:]
        for p in people {
            switch cell(latitude: p.latitude, longitude: p.longitude, size: size) {
            case .success(let c):
                if let i = at[c] {
                    grouping.cells[i].members.append(p.id)
                } else {
                    at[c] = grouping.cells.count
                    grouping.cells.append((c, [p.id]))
                }
            case .failure(let reason):
                grouping.unplaceable.append((p.id, reason))
            }
        }
        return grouping
    }

    /// Why `x` is no `name`, or nil. The value itself is not said: it is a person's location.
    private static func refusal(_ x: Double, _ name: String, limit: Double) -> Unplaceable? {
        if x.isNaN { return Unplaceable(description: "\(name) is not a number") }
        guard (-limit...limit).contains(x) else {
            return Unplaceable(description: "\(name) is outside -\(Int(limit))…\(Int(limit))")
        }
        return nil
    }

    /// How many cells of `size` cover `span` degrees: a last, narrower one where `size` does not divide
    /// it (360 / 0.1 is 3599.9999999999995 in binary: that is 3600, not 3601).
    private static func count(_ span: Double, _ size: Double) -> Int {
        let n = span / size
        let whole = n.rounded()
        return abs(n - whole) < 1e-9 * n ? Int(whole) : Int(n.rounded(.up))
    }

    /// The cell index of `offset` degrees from the grid's origin, within `0..<count` (rounding at the
    /// far edge — 90°, or just under 360° — stays in the last cell). A point on a border belongs to the
    /// cell north or east of it, as its decimal value says, whatever binary fractions make of it.
    private static func index(_ offset: Double, _ size: Double, count: Int) -> Int {
        let i = (offset / size + 1e-9).rounded(.down)
        return Swift.max(0, Swift.min(count - 1, Int(i)))
    }
}
