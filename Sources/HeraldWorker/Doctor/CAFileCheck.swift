import HeraldHTTP

/// `tls.ca_file`: the extra CA that `HERALD_CA_FILE` names, read as every transport reads it
/// (`TransportOptions.checkCAFile`, the rule `HTTPTransport` applies: readable, with a PEM
/// certificate), and the system's bundle it is added to. Unset, the system's CAs alone are trusted.
///
///     CAFileCheck.check(settings)   // ok   tls.ca_file  /etc/herald/ca.pem: 1 certificate, added to …
enum CAFileCheck {
    static func check(_ settings: Settings) -> DoctorCheck {
        check(extraCAFile: settings["HERALD_CA_FILE"], systemBundle: TransportOptions.systemCABundle)
    }

    static func check(extraCAFile: String?, systemBundle: String?) -> DoctorCheck {
        let system = systemBundle.map { "the system's CAs (\($0))" }
        guard let path = extraCAFile else {
            guard let system else {
                return DoctorCheck("tls.ca_file", .warn, "HERALD_CA_FILE is not set and no system CA bundle was found: providers' certificates may not verify")
            }
            return DoctorCheck("tls.ca_file", .ok, "HERALD_CA_FILE is not set: \(system) only")
        }
        do {
            let count = try TransportOptions.checkCAFile(path)
            let certificates = count == 1 ? "1 certificate" : "\(count) certificates"
            return DoctorCheck("tls.ca_file", .ok, "\(path): \(certificates), trusted with \(system ?? "no system bundle (none found)")")
        } catch {
            return DoctorCheck("tls.ca_file", .fail, "\(error)")
        }
    }
}
