import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import Logging

/// The `log` adapter's output: each rendered notification as one JSON line.
///
/// With `HERALD_LOG_ADAPTER_FILE=path` the full notification (title, body, data) is appended to that
/// file — what a developer or a demo wants to read. The structured log only says that it was delivered,
/// with a masked destination; the full text appears in the log at debug level only.
public final class Outbox: @unchecked Sendable {
    private let handle: FileHandle?
    private let logger: Logger
    private let lock = NSLock()
    /// Whether a line could not be written (under `lock`): warned about once.
    private var writeFailed = false

    public init(path: String?, logger: Logger) throws {
        self.logger = logger
        guard let path else {
            handle = nil
            return
        }
        // The file holds full notifications (health details): a new one is readable by its owner only.
        // O_APPEND keeps the lines of passes appending at once whole.
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, Self.fileMode)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ConfigError("HERALD_LOG_ADAPTER_FILE names \(path), which cannot be opened for appending: \(reason)")
        }
        // A file that already exists keeps its mode (the operator may have chosen it); say so if others may
        // read it. (Not for devices such as /dev/stdout.)
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 {
            logger.warning("HERALD_LOG_ADAPTER_FILE is open to others than its owner, and it holds full notifications",
                           metadata: ["path": .string(path), "mode": .string(String(info.st_mode & 0o777, radix: 8)),
                                      "hint": .string("chmod 600 \(path)")])
        }
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// The mode of a log adapter file that herald creates: rw for its owner only.
    public static let fileMode: mode_t = 0o600

    public func deliver(_ envelope: Envelope) {
        let item = envelope.item
        logger.info("log adapter delivered", metadata: [
            "queue_id": .string(item.id.lowercased), "channel": .string(item.channelRaw),
            "kind": .string(item.kindRaw), "destination": .string(Redact.destination(envelope.destination.address)),
        ])
        // The full line is built only when someone will read it.
        guard handle != nil || logger.logLevel <= .debug else { return }
        let r = envelope.rendered
        var line: [String: JSONValue] = [
            "adapter": "log",
            "queue_id": .string(item.id.uuidString.lowercased()),
            "channel": .string(item.channelRaw),
            "kind": .string(item.kindRaw),
            "recipient_user_id": .string(item.recipientUserId.uuidString.lowercased()),
            "provider": .string(envelope.destination.provider.rawValue),
            "destination": .string(Redact.destination(envelope.destination.address)),
            "title": .string(r.title),
            "body": .string(r.body),
            "badge": .number(Double(r.badge)),
            "locale": .string(r.locale),
            "data": .object(r.data),
            "at": .string(ISO8601.string(envelope.now)),
        ]
        if let link = r.deepLink { line["deep_link"] = .string(link) }
        if let s = item.severity { line["severity"] = .string(s.rawValue) }
        let text = JSONValue.object(line).jsonText
        if let handle {
            // A line that cannot be written (a full disk) is dropped, with one warning per pass: the
            // notification counts as delivered, and the pass goes on to record it.
            lock.lock()
            let written = BestEffortOutput.append(text + "\n", to: handle.fileDescriptor)
            let firstFailure = !written && !writeFailed
            if !written { writeFailed = true }
            lock.unlock()
            if firstFailure {
                logger.warning("could not append to HERALD_LOG_ADAPTER_FILE (disk full?); its lines are dropped")
            }
        }
        logger.debug("log adapter notification", metadata: ["notification": .string(text)])
    }

    deinit {
        try? handle?.close()
    }
}
