import Foundation
import HeraldTestSupport

/// The container image without a container engine: `scripts/image-rootfs.sh` reads the Dockerfile's
/// runtime stage (uid, paths, ENV lines) and builds the same root filesystem with debootstrap from
/// deploy/image/runtime-packages.txt; herald then runs in it through chroot, as the image's user, with
/// the image's environment and nothing of the host's.
///
///     let image = try await ImageRootfs.prepare()
///     let migrate = await image.herald(["migrate"], settings: ["DATABASE_URL": url])
struct ImageRootfs {
    static let repository = DeployTests.root
    static let script = repository.appendingPathComponent("scripts/image-rootfs.sh").path
    static let releaseBinary = repository.appendingPathComponent(".build/release/herald").path

    /// What the Dockerfile's runtime stage says, as `scripts/image-rootfs.sh describe` reads it.
    struct Facts {
        /// The user's uid, and the `uid:gid` of its USER line.
        var uid: String
        var user: String
        var entrypoint: String
        var environment: [String: String]
        var packages: [String]
        var lines: [String: String]

        init(_ output: String) throws {
            var lines: [String: String] = [:]
            var environment: [String: String] = [:]
            for line in output.split(separator: "\n") {
                guard let eq = line.firstIndex(of: "=") else { continue }
                let key = String(line[..<eq]), value = String(line[line.index(after: eq)...])
                if key == "env", let e = value.firstIndex(of: "=") {
                    environment[String(value[..<e])] = String(value[value.index(after: e)...])
                } else {
                    lines[key] = value
                }
            }
            guard let uid = lines["uid"], let user = lines["user"], let entrypoint = lines["entrypoint"] else {
                throw Failure("scripts/image-rootfs.sh printed no uid, user or entrypoint: \(output)")
            }
            self.uid = uid
            self.user = user
            self.entrypoint = entrypoint
            self.environment = environment
            self.packages = (lines["packages"] ?? "").split(separator: " ").map(String.init)
            self.lines = lines
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// A program's exit status and what it printed on each stream.
    struct Outcome {
        var status: Int32
        var out: String
        var err: String
    }

    let facts: Facts
    let rootfs: String

    // MARK: What the test needs of the machine

    /// chroot and debootstrap need root.
    static var isRoot: Bool { getuid() == 0 }

    /// The release binary exists and is newer than every file of Sources/ and Package.swift, so it is
    /// the build of the sources under test (`make test` builds it; `make release` too).
    static var releaseBinaryIsCurrent: Bool {
        guard let built = modified(releaseBinary) else { return false }
        var newest = modified(repository.appendingPathComponent("Package.swift").path) ?? .distantPast
        let sources = repository.appendingPathComponent("Sources")
        let walk = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: [.contentModificationDateKey])
        while let file = walk?.nextObject() as? URL {
            if let m = modified(file.path), m > newest { newest = m }
        }
        return built >= newest
    }

    /// The tree is cached, or debootstrap and its mirror are here (`scripts/image-rootfs.sh check`).
    static var buildable: Bool { runBlocking(["/bin/bash", script, "check"]).status == 0 }

    private static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    // MARK: Building and running

    /// The Dockerfile's facts, read without building anything.
    static func describe() throws -> Facts {
        let r = runBlocking(["/bin/bash", script, "describe"])
        guard r.status == 0 else { throw Failure("scripts/image-rootfs.sh describe: \(r.err)") }
        return try Facts(r.out)
    }

    /// Builds the tree (debootstrap the first time, a few minutes) and puts the release binary in.
    static func prepare() async throws -> ImageRootfs {
        let r = await run(["/bin/bash", script, "prepare", releaseBinary])
        guard r.status == 0 else { throw Failure("scripts/image-rootfs.sh prepare exited \(r.status): \(r.err)") }
        let facts = try Facts(r.out)
        guard let rootfs = facts.lines["rootfs"] else { throw Failure("no rootfs= line: \(r.out)") }
        return ImageRootfs(facts: facts, rootfs: rootfs)
    }

    /// The image's ENTRYPOINT with `arguments`, as a container of it would run: in the tree, as its
    /// user, with its ENV lines, the PATH and HOME a container has, and `settings`; as PID 1 of a process
    /// namespace of its own, with its own /proc (the Swift runtime reads its arguments there); on the
    /// host's network. Ended after `seconds`.
    func herald(_ arguments: [String], settings: [String: String], seconds: Int = 300) async -> Outcome {
        var environment = facts.environment
        environment["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        environment["HOME"] = "/nonexistent"
        environment.merge(settings) { _, setting in setting }
        let command = ["/usr/bin/timeout", "\(seconds)",
                       "/usr/bin/unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc=\(rootfs)/proc",
                       "/usr/sbin/chroot", "--userspec=\(facts.user)", rootfs, facts.entrypoint] + arguments
        return await Self.run(command, environment: environment)
    }

    /// A path inside the tree, as the host sees it.
    func hostPath(_ path: String) -> String { rootfs + path }

    /// Runs a program to its end without holding a thread while it runs (debootstrap takes minutes).
    static func run(_ command: [String], environment: [String: String]? = nil) async -> Outcome {
        guard let capture = Capture(command, environment: environment) else { return Capture.unstarted(command) }
        let status: Int32 = await withCheckedContinuation { done in
            capture.process.terminationHandler = { done.resume(returning: $0.terminationStatus) }
            do { try capture.process.run() } catch {
                capture.process.terminationHandler = nil
                done.resume(returning: -1)
            }
        }
        return capture.outcome(status)
    }

    /// The same, holding the thread: for the short checks that decide whether the test runs.
    static func runBlocking(_ command: [String]) -> Outcome {
        guard let capture = Capture(command, environment: nil) else { return Capture.unstarted(command) }
        do { try capture.process.run() } catch { return Capture.unstarted(command) }
        capture.process.waitUntilExit()
        return capture.outcome(capture.process.terminationStatus)
    }

    /// A process whose stdout and stderr go to files, so that neither can fill a pipe.
    private final class Capture: @unchecked Sendable {
        let process = Process()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-image-\(UUID())")
        let out: FileHandle
        let err: FileHandle

        init?(_ command: [String], environment: [String: String]?) {
            try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for name in ["out", "err"] {
                _ = FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: nil)
            }
            guard let out = try? FileHandle(forWritingTo: dir.appendingPathComponent("out")),
                  let err = try? FileHandle(forWritingTo: dir.appendingPathComponent("err")) else { return nil }
            self.out = out
            self.err = err
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
            process.currentDirectoryURL = repository
            if let environment { process.environment = environment }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = out
            process.standardError = err
        }

        /// What it printed, once it has exited; the files are removed.
        func outcome(_ status: Int32) -> Outcome {
            try? out.close()
            try? err.close()
            defer { try? FileManager.default.removeItem(at: dir) }
            let read = { (name: String) in
                (try? String(contentsOf: self.dir.appendingPathComponent(name), encoding: .utf8)) ?? ""
            }
            return Outcome(status: status, out: read("out"), err: read("err"))
        }

        static func unstarted(_ command: [String]) -> Outcome {
            Outcome(status: -1, out: "", err: "\(command[0]) could not be started")
        }
    }
}
