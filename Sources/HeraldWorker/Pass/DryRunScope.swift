/// What a dry run (`herald run --dry-run`) leaves out, as its summary's `not_run` names it: a dry run
/// decides every due row and lets the generators write (then rolls everything back), but calls no
/// provider and no outside service, and runs none of the phases that learn from what was sent.
///
///     DryRunScope.notRun(config)   // ["sends", "housekeeping", "forecasts.weather", "forecasts.misses", …]
enum DryRunScope {
    static func notRun(_ config: PassConfig) -> [String] {
        let options = config.options
        // No provider is called and no row is recorded; `decisions` says what each would have become.
        var parts = ["sends", "housekeeping"]
        if options.phases.contains(.forecasts) {
            // The forecasts are made from the weather already stored: none is fetched.
            if options.weatherURL != nil { parts.append("forecasts.weather") }
            if options.forecastInsight != nil { parts.append("forecasts.insight") }
            parts.append("forecasts.misses")
        }
        for phase in [Phase.receipts, .events, .statuses] where options.phases.contains(phase) {
            parts.append(phase.rawValue)
        }
        if config.heartbeatURL != nil { parts.append("heartbeat") }
        if config.pushgatewayURL != nil { parts.append("pushgateway") }
        return parts
    }
}
