// swift-tools-version:6.0
import PackageDescription

// herald — a notification worker for health and wellness apps.
//
// Layout: a pure core (HeraldCore) holds every rule; HeraldPostgres (libpq) and HeraldHTTP (libcurl)
// are thin shells around C libraries; HeraldChannels turns notifications into provider requests;
// HeraldWorker runs a pass; `herald` is the command line.
//
// Platforms: Linux is where herald is built, tested and run (CI: Swift 6.3 on Debian 12). macOS is
// declared at 15, the first with the APIs the code uses (Synchronization's `Atomic`); no CI builds it.
//
// Dependencies and why:
// - swift-argument-parser: the CLI.
// - swift-crypto: HMAC-SHA256 (webhook signatures), ES256/RS256 JWTs (APNs, FCM).
// - swift-log: structured logging to stderr.
// - swift-nio, swift-nio-ssl, swift-nio-http2: only for the fake providers used by tests and `make bench`
//   (loopback servers that speak the providers' real protocols over real TLS).
let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.30.0"),
    ],
    targets: [
        // C libraries, through the system's pkg-config.
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),

        // The pure domain: no I/O.
        .target(name: "HeraldCore"),

        // Shells around the C libraries.
        .target(name: "HeraldPostgres", dependencies: ["CLibPQ"]),
        .target(name: "HeraldHTTP", dependencies: ["CCurl"]),

        // Adapters: request builders and response classifiers, with their credentials.
        .target(name: "HeraldChannels", dependencies: [
            "HeraldCore", "HeraldHTTP",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),

        // One pass: generate, claim, decide, deliver, record.
        .target(name: "HeraldWorker", dependencies: [
            "HeraldCore", "HeraldPostgres", "HeraldHTTP", "HeraldChannels",
            .product(name: "Logging", package: "swift-log"),
        ]),

        .executableTarget(name: "herald", dependencies: [
            "HeraldWorker", "HeraldPostgres", "HeraldHTTP",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Test support: fake providers on loopback and disposable databases, for tests and benchmarks.
        .target(name: "HeraldTestSupport", dependencies: [
            "HeraldPostgres",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
        ], path: "Tests/Support"),

        .executableTarget(name: "herald-bench", dependencies: [
            "HeraldWorker", "HeraldChannels", "HeraldCore", "HeraldHTTP", "HeraldPostgres", "HeraldTestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),

        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldTestSupport"]),
        .testTarget(name: "HeraldPostgresTests", dependencies: ["HeraldPostgres", "HeraldTestSupport"]),
        .testTarget(name: "HeraldHTTPTests", dependencies: ["HeraldHTTP", "HeraldTestSupport"]),
        .testTarget(name: "HeraldChannelsTests", dependencies: [
            "HeraldChannels", "HeraldCore", "HeraldHTTP", "HeraldTestSupport",
        ]),
        .testTarget(name: "HeraldWorkerTests", dependencies: [
            "HeraldWorker", "HeraldCore", "HeraldPostgres", "HeraldTestSupport",
        ]),
    ]
)
