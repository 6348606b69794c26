import CLibPQ
import Foundation

/// Bound parameters, as libpq's PQexecParams takes them.
extension PGConnection {
    /// The parameters as libpq takes them, pointing into one buffer that lives as long as the call.
    struct ParameterArrays {
        var count: Int32
        /// nil when there is no parameter.
        var values: UnsafePointer<UnsafePointer<CChar>?>?
        /// nil when every parameter is text: the server then infers each one's type.
        var types: UnsafePointer<Oid>?
        var lengths: UnsafePointer<Int32>?
        var formats: UnsafePointer<Int32>?
    }

    /// Copies of the parameters in one buffer (text NUL-terminated, binary with its length and type),
    /// NULL for `nil`.
    static func withParameters<R>(_ parameters: [PGParameter?], _ body: (ParameterArrays) -> R) throws -> R {
        guard parameters.count <= 65535 else {
            throw PGError(message: "a statement takes at most 65535 parameters, not \(parameters.count)")
        }
        var total = 0, anyBinary = false
        for parameter in parameters {
            switch parameter {
            case .text(let text): total += text.utf8.count + 1
            case .binary(_, let bytes): total += bytes.count; anyBinary = true
            case nil: break
            }
        }
        guard total <= Int(Int32.max) else {
            throw PGError(message: "a statement's parameters take at most 2 GB, not \(total) bytes")
        }
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(total, 1))
        defer { buffer.deallocate() }
        var pointers: [UnsafePointer<CChar>?] = [], types: [Oid] = [], lengths: [Int32] = [], formats: [Int32] = []
        pointers.reserveCapacity(parameters.count)
        if anyBinary {
            types.reserveCapacity(parameters.count)
            lengths.reserveCapacity(parameters.count)
            formats.reserveCapacity(parameters.count)
        }
        var offset = 0
        for (index, parameter) in parameters.enumerated() {
            let start = buffer + offset
            var type: Oid = 0, length: Int32 = 0, format: Int32 = 0
            switch parameter {
            case nil:
                pointers.append(nil)
            case .text(var text):
                let count = text.withUTF8 { bytes -> Int in
                    if !bytes.isEmpty { start.update(from: bytes.baseAddress!, count: bytes.count) }
                    return bytes.count
                }
                if memchr(start, 0, count) != nil {
                    throw PGError(message: "parameter $\(index + 1) contains a NUL character, which PostgreSQL text cannot hold")
                }
                start[count] = 0
                pointers.append(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self))
                offset += count + 1
            case .binary(let pgType, let bytes):
                bytes.withUnsafeBufferPointer { if !$0.isEmpty { start.update(from: $0.baseAddress!, count: $0.count) } }
                pointers.append(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self))
                offset += bytes.count
                (type, length, format) = (pgType.rawValue, Int32(bytes.count), 1)
            }
            if anyBinary {
                types.append(type)
                lengths.append(length)
                formats.append(format)
            }
        }
        return pointers.withUnsafeBufferPointer { values in
            types.withUnsafeBufferPointer { types in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(ParameterArrays(count: Int32(parameters.count), values: parameters.isEmpty ? nil : values.baseAddress,
                                             types: anyBinary ? types.baseAddress : nil,
                                             lengths: anyBinary ? lengths.baseAddress : nil,
                                             formats: anyBinary ? formats.baseAddress : nil))
                    }
                }
            }
        }
    }
}
