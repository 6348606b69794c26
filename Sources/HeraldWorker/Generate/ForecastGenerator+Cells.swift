import Foundation
import HeraldCore
import HeraldPostgres

/// The places' weather kept between passes (`weather_cells`, sql/053): each cell's last usable answer,
/// as `CellWeather.stored` writes it, serves the forecasts of every pass for `reuseFor` (an hour) after
/// it was fetched; so the people of a place whose notification times are spread over the morning still
/// share one request an hour. Answers older than two days are deleted.
extension ForecastGenerator {
    /// The stored answers of `cells` fetched within `reuseFor` before `now`, by cell key. A stored answer
    /// that no longer reads as weather is left out (and fetched again).
    func storedWeather(of cells: [WeatherCell]) throws -> [String: CellWeather] {
        guard reuseFor > 0, !cells.isEmpty else { return [:] }
        var weather: [String: CellWeather] = [:]
        for row in try db.query("""
            select cell, weather::text as w from public.weather_cells
             where cell = any(\(cells.map(\.key))::text[])
               and fetched_at > \(now.addingTimeInterval(-reuseFor)) and fetched_at <= \(now)
            """) {
            guard let key = row["cell"].string, let text = row["w"].string,
                  let w = try? CellWeather(json: JSONValue.parse(text), zone: Self.utc, at: now) else { continue }
            weather[key] = w
        }
        return weather
    }

    /// Keeps the answers just fetched, each as of `now` (a newer one another pass stored stays).
    func storeWeather(_ fetched: [String: CellWeather]) throws {
        guard !fetched.isEmpty else { return }
        let rows = JSONValue.array(fetched.sorted { $0.key < $1.key }.map { key, w in
            ["cell": .string(key), "weather": w.stored]
        })
        try db.execute("""
            insert into public.weather_cells as c (cell, fetched_at, weather)
            select x.cell, \(now), x.weather from jsonb_to_recordset(\(rows.pgJSONText)::jsonb) as x(cell text, weather jsonb)
            on conflict (cell) do update set fetched_at = excluded.fetched_at, weather = excluded.weather
             where c.fetched_at <= excluded.fetched_at
            """)
        try db.execute("delete from public.weather_cells where fetched_at < \(now.addingTimeInterval(-2 * 86_400))")
    }
}
