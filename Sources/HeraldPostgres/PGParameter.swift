import Foundation

/// One bound value as it travels to the server: text, whose type the statement decides (`$1::date`),
/// or binary, whose type it names (the statement's cast then converts from that type).
///
///     "x".pgParameter          // .text("x")
///     [id].pgParameter         // .binary(type: .uuidArray, bytes: …)
public enum PGParameter: Hashable, Sendable {
    case text(String)
    case binary(type: PGType, bytes: [UInt8])

    /// The value as a reader would write it: the text, or a summary of the binary value.
    public var readable: String {
        switch self {
        case .text(let text): return text
        case .binary(let type, let bytes): return "<\(type) binary, \(bytes.count) bytes>"
        }
    }
}

/// The PostgreSQL types herald binds in binary, by their fixed OIDs (`pg_type.oid`).
public enum PGType: UInt32, Sendable, CustomStringConvertible {
    case bool = 16, int8 = 20, int4 = 23, text = 25, uuid = 2950
    case boolArray = 1000, int4Array = 1007, textArray = 1009, int8Array = 1016, uuidArray = 2951

    /// The array type whose elements are of this type.
    var array: PGType {
        switch self {
        case .bool: return .boolArray
        case .int8: return .int8Array
        case .int4: return .int4Array
        case .text: return .textArray
        case .uuid: return .uuidArray
        default: return self
        }
    }

    public var description: String {
        switch self {
        case .bool: return "boolean"
        case .int8: return "bigint"
        case .int4: return "integer"
        case .text: return "text"
        case .uuid: return "uuid"
        case .boolArray: return "boolean[]"
        case .int4Array: return "integer[]"
        case .textArray: return "text[]"
        case .int8Array: return "bigint[]"
        case .uuidArray: return "uuid[]"
        }
    }
}

/// Writes PostgreSQL's binary array format, as `array_recv` reads it: the number of dimensions (one,
/// or none when empty), whether any element is NULL, the element type, the length and lower bound (1),
/// then each element as its byte count (-1 for NULL) and its bytes.
///
///     PGBinaryArray.make([1, nil] as [Int32?], type: .int4) { v, out in PGBinaryArray.appendBigEndian(v, to: &out) }
enum PGBinaryArray {
    static func make<Element>(_ elements: [Element?], type: PGType,
                              write: (Element, inout [UInt8]) -> Void) -> PGParameter? {
        // A parameter's length is an Int32: past that, the text form's error is the readable one.
        guard elements.count < Int(Int32.max / 4) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(20 + elements.count * 24)
        appendBigEndian(Int32(elements.isEmpty ? 0 : 1), to: &out)
        appendBigEndian(Int32(elements.contains { $0 == nil } ? 1 : 0), to: &out)
        appendBigEndian(type.rawValue, to: &out)
        if !elements.isEmpty {
            appendBigEndian(Int32(elements.count), to: &out)
            appendBigEndian(Int32(1), to: &out)
        }
        for element in elements {
            guard let element else {
                appendBigEndian(Int32(-1), to: &out)
                continue
            }
            let lengthAt = out.count
            appendBigEndian(Int32(0), to: &out)
            write(element, &out)
            let length = out.count - lengthAt - 4
            guard length <= Int(Int32.max), out.count <= Int(Int32.max) else { return nil }
            withUnsafeBytes(of: UInt32(length).bigEndian) { bytes in
                for (offset, byte) in bytes.enumerated() { out[lengthAt + offset] = byte }
            }
        }
        return .binary(type: type.array, bytes: out)
    }

    @inline(__always)
    static func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }
}
