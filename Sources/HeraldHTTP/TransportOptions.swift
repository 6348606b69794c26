/// Settings shared by every request of one ``HTTPTransport``.
///
///     let transport = try HTTPTransport(options: .init(
///         caFile: environment["HERALD_CA_FILE"], userAgent: "herald/1.0"))
public struct TransportOptions: Sendable {
    /// A PEM file of extra CA certificates to trust in addition to the system store.
    public var caFile: String?
    /// Connections open to one host at most (HTTP/2 multiplexes many requests on one).
    public var maxConnectionsPerHost: Int
    /// Connections open at most.
    public var maxTotalConnections: Int
    /// Seconds allowed to connect (TCP and TLS).
    public var connectTimeout: Double
    /// The User-Agent header.
    public var userAgent: String
    /// Transfers on the multi handle at once; further requests wait for a slot, so a batch of 10,000
    /// does not allocate 10,000 handles.
    public var maxTransfersInFlight: Int
    /// Response bodies are cut to this many bytes (the rest is read and dropped), so an endpoint
    /// answering with a huge body cannot exhaust memory; the transfer still succeeds.
    public var maxResponseBytes: Int
    /// Where each transfer is described, credentials masked (`CurlDebugOutput`); by default stderr
    /// when `HERALD_CURL_VERBOSE=1`, else nowhere.
    public var debugOutput: CurlDebugOutput? = CurlDebugOutput.fromEnvironment()

    public init(caFile: String? = nil, maxConnectionsPerHost: Int = 64, maxTotalConnections: Int = 256,
                connectTimeout: Double = 10, userAgent: String = "herald/0.1", maxTransfersInFlight: Int = 1000,
                maxResponseBytes: Int = 1 << 20) {
        self.caFile = caFile
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxTotalConnections = maxTotalConnections
        self.connectTimeout = connectTimeout
        self.userAgent = userAgent
        self.maxTransfersInFlight = maxTransfersInFlight
        self.maxResponseBytes = maxResponseBytes
    }
}
