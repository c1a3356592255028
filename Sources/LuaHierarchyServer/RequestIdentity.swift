#if Server
internal import Hummingbird
internal import HTTPTypes

/// Who a request is, for the logs and the answer: its `X-Request-Id` (the client's, when it
/// sent a usable one, echoed back; else one made here) and the W3C `traceparent` it carried.
struct RequestIdentity: Sendable {
    /// Echoed in the answer's `X-Request-Id` and in every log line of the request.
    var id: String
    /// From a valid `traceparent` (version 00): the trace and the caller's span.
    var traceID: String?
    var parentSpanID: String?

    static let requestIDField = HTTPField.Name("X-Request-Id")!
    static let traceparentField = HTTPField.Name("traceparent")!
}

extension RequestIdentity {
    /// The identity `headers` give: their id and trace when usable.
    init(_ headers: HTTPFields) {
        if let given = headers[Self.requestIDField], Self.isUsable(given) {
            id = given
        } else {
            id = Self.makeID()
        }
        traceID = nil
        parentSpanID = nil
        if let parent = headers[Self.traceparentField], let (trace, span) = Self.traceparent(parent) {
            traceID = trace
            parentSpanID = span
        }
    }

    /// 1 to 128 printable ASCII characters without spaces or quotes: safe to echo in a header
    /// and to write in a log line as it is. Anything else is replaced, not echoed.
    static func isUsable(_ id: String) -> Bool {
        let bytes = id.utf8
        guard (1...128).contains(bytes.count) else { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// 32 lowercase hex digits (128 random bits), as a trace id is written.
    static func makeID() -> String {
        let halves = (UInt64.random(in: .min ... .max), UInt64.random(in: .min ... .max))
        // Written digit by digit: made per request, and radix formatting, padding and joining
        // cost ten times as much.
        return String(unsafeUninitializedCapacity: 32) { digits in
            for index in 0..<32 {
                let half = index < 16 ? halves.0 : halves.1
                let nibble = UInt8(truncatingIfNeeded: half >> UInt64(60 - 4 * (index % 16))) & 0xF
                digits[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
            }
            return 32
        }
    }

    /// The trace id and parent id of `00-TRACEID-PARENTID-FLAGS` (W3C Trace Context), or nil
    /// when it is not one: wrong lengths, not lowercase hex, all-zero ids, version ff.
    static func traceparent(_ value: String) -> (String, String)? {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[1].count == 32, parts[2].count == 16, parts[3].count == 2 else { return nil }
        guard parts[0] != "ff", parts[0] == "00" ? parts.count == 4 : true else { return nil }
        func isHex(_ text: Substring) -> Bool { text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) } }
        guard parts.prefix(4).allSatisfy(isHex) else { return nil }
        guard parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" }) else { return nil }
        return (String(parts[1]), String(parts[2]))
    }
}
#endif
