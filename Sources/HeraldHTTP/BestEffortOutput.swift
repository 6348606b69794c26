import Foundation

/// Writes to stderr, stdout or an append-only file that never stop the process. A full disk (cron's
/// `2>>/var/log/herald/herald.log`) or a reader that went away must not end a pass between a send and
/// its record: the line is dropped instead. (`FileHandle.write(_:)` traps on any error, and a closed
/// pipe raises SIGPIPE, which `herald` ignores from its start so that such a write fails with EPIPE.)
///
/// It lives here, in the lowest module that does I/O, because libcurl's verbose output needs it too.
///
///     BestEffortOutput.standardError("herald: cannot reach the database\n")
public enum BestEffortOutput {
    /// Writes `text` to stderr, or as much of it as can be written.
    public static func standardError(_ text: String) {
        append(text, to: STDERR_FILENO)
    }

    /// Writes `text` to stdout, or as much of it as can be written.
    public static func standardOutput(_ text: String) {
        append(text, to: STDOUT_FILENO)
    }

    /// Writes all of `text` to `descriptor`: again after a write interrupted by a signal or one that
    /// took only part of it; on any other error (`ENOSPC`, `EPIPE`, `EBADF`, …) the rest is dropped.
    /// Returns whether every byte was written.
    @discardableResult
    public static func append(_ text: String, to descriptor: Int32) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(descriptor, base + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }
}

/// write(2), named apart from the methods above.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
