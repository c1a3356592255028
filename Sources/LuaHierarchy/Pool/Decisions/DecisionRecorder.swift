#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes a state's decision records, on its thread, by splicing bytes already at hand: the
/// request line as it came and the outcome as it was answered go in verbatim.
struct DecisionRecorder {
    let log: DecisionLog
    /// `,"revision":{"number":N,"hash":"<64 hex digits>"}`.
    private let revisionMember: [UInt8]
    /// When the last answer was handed over: a line's `evaluation_ms` runs from it.
    var lastAnswer = ContinuousClock.now
    private var writer = JSONWriter()

    /// The longest `request_text` (a request that was not JSON), in bytes.
    static let maxRequestText = 4096

    init(log: DecisionLog, revision: Revision) {
        self.log = log
        var member = JSONWriter()
        member.append(#","revision":{"number":\#(revision.number),"hash":"\#(revision.hash)"}"#)
        revisionMember = member.bytes
    }

    /// Records the answer to `line` of `chunk`: `outcome` as the client got it (its newline
    /// included or not), `numbered` when the record names its line.
    mutating func record(
        request chunk: UnsafeRawBufferPointer, line: LuaEngine.RunLine?, numbered: Bool, requestID: String?,
        outcome: UnsafeRawBufferPointer
    ) {
        let now = ContinuousClock.now
        let evaluation = now - lastAnswer
        lastAnswer = now
        writer.bytes.removeAll(keepingCapacity: true)
        writer.append(#"{"v":1,"time":"#)
        Self.writeTime(into: &writer)
        if let requestID {
            writer.writeKey("request_id")
            writer.writeString(requestID)
        }
        writer.bytes.append(contentsOf: log.sourceMember)
        writer.bytes.append(contentsOf: revisionMember)
        if numbered, let line {
            writer.writeKey("line")
            writer.append(String(line.number))
        }
        var outcomeBytes = outcome
        if outcomeBytes.last == UInt8(ascii: "\n") { outcomeBytes = UnsafeRawBufferPointer(rebasing: outcomeBytes.dropLast()) }
        if let line { writeRequest(chunk, line: line, outcome: outcomeBytes) }
        writer.writeKey("outcome")
        writer.bytes.append(contentsOf: outcomeBytes)
        // The responder's stable key goes here, as `"responder_key":"FILE#NODEPATH#N"`.
        writer.writeKey("evaluation_ms")
        Self.writeMilliseconds(evaluation, into: &writer)
        writer.append("}\n")
        log.submit(writer.bytes)
    }

    /// `"request":` and the request verbatim (no whitespace around it) when it is JSON; else
    /// `"request_text":` and its first 4 KiB as a string, `"request_truncated":true` when cut.
    private mutating func writeRequest(_ chunk: UnsafeRawBufferPointer, line: LuaEngine.RunLine, outcome: UnsafeRawBufferPointer) {
        let end = min(chunk.count, line.start + line.count)
        var start = min(line.start, end), stop = end
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        while start < stop, isSpace(chunk[start]) { start += 1 }
        while stop > start, isSpace(chunk[stop - 1]) { stop -= 1 }
        let request = UnsafeRawBufferPointer(rebasing: chunk[start..<stop])
        // Only an invalid answer can be to a request that is not JSON: others are not parsed.
        if !line.oversized && (!Self.contains(outcome, #""status":"invalid""#) || (try? JSON.parse(request)) != nil) {
            writer.writeKey("request")
            writer.bytes.append(contentsOf: request)
            return
        }
        let kept = UnsafeRawBufferPointer(rebasing: request.prefix(Self.maxRequestText))
        writer.writeKey("request_text")
        writer.writeString(bytes: kept.bindMemory(to: UInt8.self))
        if kept.count < request.count || line.oversized { writer.append(#","request_truncated":true"#) }
    }

    private static func contains(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        let needle = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if memcmp(bytes.baseAddress! + start, needle.baseAddress!, needle.count) == 0 { return true }
        }
        return false
    }

    /// `"2026-11-27T00:19:22.649Z"`: now, UTC, milliseconds.
    private static func writeTime(into writer: inout JSONWriter) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                writer.bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        writer.bytes.append(UInt8(ascii: "\""))
        digits(Int(parts.tm_year) + 1900, 4)
        writer.bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        writer.bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        writer.bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        writer.bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        writer.bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        writer.bytes.append(UInt8(ascii: "."))
        digits(Int(now.tv_nsec) / 1_000_000, 3)
        writer.append("Z\"")
    }

    /// `0.123`: milliseconds to the microsecond.
    private static func writeMilliseconds(_ duration: Duration, into writer: inout JSONWriter) {
        let (seconds, attoseconds) = duration.components
        let micros = max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        writer.append(String(micros / 1000))
        writer.bytes.append(UInt8(ascii: "."))
        let fraction = String(micros % 1000)
        writer.append(String(repeating: "0", count: 3 - fraction.count) + fraction)
    }
}
