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
    /// `,"source":"..."`: the log's, or `shadow` for a candidate revision's records.
    private let sourceMember: [UInt8]
    /// How a shadow record reaches the log from a candidate's thread (nil: directly).
    private let relay: BackgroundRelay?
    /// When the last record was made (or the run began): a line's `evaluation_ms` runs from it.
    var lastAnswer = ContinuousClock.now
    private var writer = JSONWriter()

    /// The longest `request_text` (a request that was not JSON), in bytes.
    static let maxRequestText = 4096

    /// Records of answers by `revision`; `shadow`: answers of a candidate revision to live
    /// requests (`source` `shadow`, each record with the live side it is compared with),
    /// handed to the log through `relay` when given.
    init(log: DecisionLog, revision: Revision, shadow: Bool = false, relay: BackgroundRelay? = nil) {
        self.log = log
        self.relay = relay
        revisionMember = Self.revisionMember(revision)
        sourceMember = shadow ? Array(#","source":"shadow""#.utf8) : log.sourceMember
    }

    /// `,"revision":{"number":N,"hash":"<64 hex digits>"}`.
    private static func revisionMember(_ revision: Revision) -> [UInt8] {
        Array(#","revision":{"number":\#(revision.number),"hash":"\#(revision.hash)"}"#.utf8)
    }

    /// What a shadow record compares its answer with: the live revision's answer to the same
    /// request, and the fields in which they differ (`OutcomeDifferences`).
    struct Comparison {
        var revision: Revision
        /// The live outcome as the client got it (no newline).
        var outcome: [UInt8]
        var responderKey: String?
        var differences: [String]
    }

    /// Records the answer to `line` of `chunk`: `outcome` as the client got it (its newline
    /// included or not), `numbered` when the record names its line, `responderKey` the stable
    /// identity of the responder that answered (`FILE#NODEPATH#N`), when there was one.
    mutating func record(
        request chunk: UnsafeRawBufferPointer, line: LuaEngine.RunLine?, numbered: Bool, requestID: String?,
        outcome: UnsafeRawBufferPointer, responderKey: String? = nil, mask: LuaDecisionMask? = nil, live: Comparison? = nil
    ) {
        let evaluation = ContinuousClock.now - lastAnswer
        // The next line's time runs from the end of this record (its mask's time not counted).
        defer { lastAnswer = ContinuousClock.now }
        writer.bytes.removeAll(keepingCapacity: true)
        writer.append(#"{"v":1,"time":"#)
        writeTime()
        if let requestID {
            writer.writeKey("request_id")
            writer.writeString(requestID)
        }
        writer.bytes.append(contentsOf: sourceMember)
        writer.bytes.append(contentsOf: revisionMember)
        if numbered, let line {
            writer.writeKey("line")
            Self.appendDecimal(line.number, to: &writer.bytes)
        }
        var outcomeBytes = outcome
        if outcomeBytes.last == UInt8(ascii: "\n") { outcomeBytes = UnsafeRawBufferPointer(rebasing: outcomeBytes.dropLast()) }
        if let line { writeRequest(chunk, line: line, outcome: outcomeBytes) }
        writer.writeKey("outcome")
        writer.bytes.append(contentsOf: outcomeBytes)
        if let responderKey {
            writer.writeKey("responder_key")
            writer.writeString(responderKey)
        }
        if let live { write(live) }
        writer.writeKey("evaluation_ms")
        Self.writeMilliseconds(evaluation, into: &writer)
        writer.append("}\n")
        guard live != nil else {
            log.submit(mask.map { Self.masked(writer.bytes, by: $0) } ?? writer.bytes)
            return
        }
        log.submitShadow(mask.map { Self.maskedShadow(writer.bytes, by: $0) } ?? writer.bytes, relay: relay)
    }

    /// `,"live":{"revision":...,"outcome":...,"responder_key":...},"differences":[...]`.
    private mutating func write(_ live: Comparison) {
        writer.writeKey("live")
        writer.bytes.append(UInt8(ascii: "{"))
        writer.bytes.append(contentsOf: Self.revisionMember(live.revision).dropFirst())
        writer.writeKey("outcome")
        writer.bytes.append(contentsOf: live.outcome)
        if let key = live.responderKey {
            writer.writeKey("responder_key")
            writer.writeString(key)
        }
        writer.bytes.append(UInt8(ascii: "}"))
        writer.writeKey("differences")
        writer.write(.array(live.differences.map { .string($0) }))
    }

    /// `record` as the rules' mask returned it (written again from its values, keys sorted);
    /// when the mask failed, the record with its request and outcome replaced by
    /// `"<mask failed>"`: the payloads are dropped, never the answer.
    static func masked(_ record: [UInt8], by mask: LuaDecisionMask) -> [UInt8] {
        guard let value = record.withUnsafeBytes({ try? JSON.parse($0) }), case .map(var members) = value else { return record }
        var output = JSONWriter()
        if let masked = mask.mask(value) {
            output.write(masked)
        } else {
            for key in ["request", "request_text", "outcome"] where members[key] != nil {
                members[key] = .string("<mask failed>")
            }
            output.write(.map(members))
        }
        output.bytes.append(UInt8(ascii: "\n"))
        return output.bytes
    }

    /// A shadow record masked by the rules' mask twice: as the candidate's own record, and
    /// its live side as the live revision's record of the same request would be (the mask
    /// sees a record of the usual shape, with the live outcome in it), so that a mask written
    /// for the records of the rules masks the live side too. When either fails, every
    /// payload is `"<mask failed>"`.
    static func maskedShadow(_ record: [UInt8], by mask: LuaDecisionMask) -> [UInt8] {
        guard let value = record.withUnsafeBytes({ try? JSON.parse($0) }), case .map(var members) = value,
            case .map(var live)? = members["live"]
        else { return record }
        var liveRecord = members
        liveRecord["live"] = nil
        liveRecord["differences"] = nil
        for key in ["outcome", "responder_key", "revision"] { liveRecord[key] = live[key] }
        var output = JSONWriter()
        if case .map(var masked)? = mask.mask(value), case .map(let maskedLive)? = mask.mask(.map(liveRecord)) {
            var keptLive = live
            for key in ["outcome", "responder_key"] { keptLive[key] = maskedLive[key] }
            masked["live"] = .map(keptLive)
            output.write(.map(masked))
        } else {
            for key in ["request", "request_text", "outcome"] where members[key] != nil { members[key] = .string("<mask failed>") }
            live["outcome"] = .string("<mask failed>")
            members["live"] = .map(live)
            output.write(.map(members))
        }
        output.bytes.append(UInt8(ascii: "\n"))
        return output.bytes
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
            let from = writer.bytes.count
            writer.bytes.append(contentsOf: request)
            // A body may break its JSON over lines, and the log is one record a line: each line
            // break in it is whitespace between tokens (the reader refuses one raw in a string),
            // written as a space. Kept as it came, it split the record, and a line of a body's
            // own making read as a record of its own (an attacker's find).
            if let base = request.baseAddress, memchr(base, 0x0A, request.count) != nil || memchr(base, 0x0D, request.count) != nil {
                for index in from..<writer.bytes.count where writer.bytes[index] == 0x0A || writer.bytes[index] == 0x0D {
                    writer.bytes[index] = 0x20
                }
            }
            return
        }
        let kept = UnsafeRawBufferPointer(rebasing: request.prefix(Self.maxRequestText))
        writer.writeKey("request_text")
        // A mask into the request cannot find its field in text that is not JSON (a trailing
        // comma kept a masked e-mail in clear: an attacker's find), so the text is masked whole.
        if log.masksRequest {
            writer.writeString("<masked>")
            if line.oversized { writer.append(#","request_truncated":true"#) }
            return
        }
        writer.writeString(bytes: kept.bindMemory(to: UInt8.self))
        if kept.count < request.count || line.oversized { writer.append(#","request_truncated":true"#) }
    }

    private static func contains(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let count = text.utf8CodeUnitCount
        let first = Int32(text.utf8Start.pointee)
        var offset = 0
        // memchr to each candidate's first byte, memcmp for the rest: both vectorised.
        while bytes.count - offset >= count, let found = memchr(base + offset, first, bytes.count - offset - count + 1) {
            if memcmp(found, text.utf8Start, count) == 0 { return true }
            offset = base.distance(to: UnsafeRawPointer(found)) + 1
        }
        return false
    }

    /// The second `timePrefix` was made for, and `"2026-11-27T00:19:22.` for it: the date is
    /// worked out once a second, not once a record.
    private var prefixSecond = -1
    private var timePrefix: [UInt8] = []

    /// `"2026-11-27T00:19:22.649Z"`: now, UTC, milliseconds.
    private mutating func writeTime() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        if now.tv_sec != prefixSecond {
            prefixSecond = now.tv_sec
            var seconds = now.tv_sec
            var parts = tm()
            gmtime_r(&seconds, &parts)
            timePrefix.removeAll(keepingCapacity: true)
            timePrefix.append(UInt8(ascii: "\""))
            for (value, count, after) in [
                (Int(parts.tm_year) + 1900, 4, "-"), (Int(parts.tm_mon) + 1, 2, "-"), (Int(parts.tm_mday), 2, "T"),
                (Int(parts.tm_hour), 2, ":"), (Int(parts.tm_min), 2, ":"), (Int(parts.tm_sec), 2, "."),
            ] {
                Self.append(value, digits: count, to: &timePrefix)
                timePrefix.append(contentsOf: after.utf8)
            }
        }
        writer.bytes.append(contentsOf: timePrefix)
        Self.append(Int(now.tv_nsec) / 1_000_000, digits: 3, to: &writer.bytes)
        writer.bytes.append(UInt8(ascii: "Z"))
        writer.bytes.append(UInt8(ascii: "\""))
    }

    /// `value` in `count` decimal digits, zeros in front.
    private static func append(_ value: Int, digits count: Int, to bytes: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    /// `0.123`: milliseconds to the microsecond.
    private static func writeMilliseconds(_ duration: Duration, into writer: inout JSONWriter) {
        let (seconds, attoseconds) = duration.components
        let micros = max(0, Int(seconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000))
        appendDecimal(micros / 1000, to: &writer.bytes)
        writer.bytes.append(UInt8(ascii: "."))
        append(micros % 1000, digits: 3, to: &writer.bytes)
    }

    /// `value` (0 or more) in decimal, as few digits as it takes.
    private static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        var count = 1, limit = 10
        while value >= limit && count < 18 {
            count += 1
            limit *= 10
        }
        append(value, digits: count, to: &bytes)
    }
}
