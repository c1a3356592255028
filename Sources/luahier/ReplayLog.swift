import Glibc
import LuaHierarchy

/// A decision log read a line at a time, in bounded memory: each record's bytes (at most
/// `maxRecord`; a longer line is skipped as it streams past, named by its line), with its
/// line number in the log. Blank lines are skipped.
struct DecisionLogReader {
    enum Line {
        case record(number: Int, bytes: ArraySlice<UInt8>)
        case tooLong(number: Int, bytes: Int)
    }

    let descriptor: Int32
    let maxRecord: Int
    private var buffer: [UInt8] = []
    /// What one read fills.
    private var chunk = [UInt8](repeating: 0, count: 256 << 10)
    private var start = 0
    /// Where the search for the next newline goes on (the bytes before it have none).
    private var searched = 0
    private var number = 0
    private var ended = false
    /// A line over `maxRecord` being skipped: its bytes so far.
    private var skipping: Int?
    /// Why reading failed, if it did (the lines before it were read).
    private(set) var failure: String?

    init(descriptor: Int32, maxRecord: Int) {
        self.descriptor = descriptor
        self.maxRecord = maxRecord
    }

    /// The next line, or nil at the end of the log (or an interrupt).
    mutating func next() -> Line? {
        while true {
            if let newline = Self.newline(in: buffer, from: max(start, searched)) {
                number += 1
                let line = buffer[start..<newline]
                start = newline + 1
                searched = start
                if let skipped = skipping {
                    skipping = nil
                    return .tooLong(number: number, bytes: skipped + line.count)
                }
                if let found = Self.record(line, number: number) { return found }
                continue
            }
            if ended {
                guard start < buffer.count || skipping != nil else { return nil }
                number += 1
                let line = buffer[start...]
                start = buffer.count
                if let skipped = skipping {
                    skipping = nil
                    return .tooLong(number: number, bytes: skipped + line.count)
                }
                if let found = Self.record(line, number: number) { return found }
                return nil
            }
            // The line so far is over the bound: dropped as it streams, counted.
            if buffer.count - start > maxRecord || skipping != nil {
                skipping = (skipping ?? 0) + buffer.count - start
                start = buffer.count
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            searched = buffer.count
            // A signal ends the reading between reads too: a read of a log that never ends (or
            // a long line being skipped) is never cut short, and the skip went on for good (an
            // attacker's find: SIGTERM was ignored until SIGKILL).
            if Interruption.signal != nil { return nil }
            fill()
        }
    }

    /// The index of the first newline in `buffer` from `start`, by `memchr`: a long line is
    /// searched at the C library's pace.
    private static func newline(in buffer: [UInt8], from start: Int) -> Int? {
        guard start < buffer.count else { return nil }
        return buffer.withUnsafeBytes { bytes in
            memchr(bytes.baseAddress! + start, 0x0A, bytes.count - start).map { UnsafeRawPointer($0) - bytes.baseAddress! }
        }
    }

    private static func record(_ line: ArraySlice<UInt8>, number: Int) -> Line? {
        var line = line
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { return nil }
        return .record(number: number, bytes: line)
    }

    private mutating func fill() {
        // Read into a chunk of its own, then appended: room made by appending zeros went a
        // byte at a time, and with room for just one more chunk each read copied the whole line
        // so far (a long line took seconds a megabyte to skip).
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
        let error = errno
        if count < 0 && error == EINTR && Interruption.signal == nil { return }
        if count > 0 { buffer.append(contentsOf: chunk[..<count]) }
        // A signal that cut the read short ends the reading; it is no failure of the log's.
        if count < 0 && error != EINTR { failure = "cannot read the log: \(String(cString: strerror(error)))" }
        if count <= 0 { ended = true }
    }
}

/// A record's top-level members that replay reads, found without parsing the record: the
/// request is replayed as the bytes the client sent, and a record whose outcome comes back
/// byte for byte needs no parsing at all. Members spelled with escapes are not found; the
/// record is parsed in full then, and one that is not JSON is reported then.
struct ScannedRecord {
    /// `request`'s value, `outcome`'s, `responder_key`'s (a JSON string, quotes included).
    var request: Range<Int>?
    var outcome: Range<Int>?
    var responderKey: Range<Int>?
    var line: Int?
    /// `"source":"shadow"`: a shadow revision's record, which replay passes over.
    var isShadow = false
    /// The object was read to its closing brace, and nothing but space follows.
    var complete = false

    private static let requestName = Array(#""request""#.utf8)
    private static let outcomeName = Array(#""outcome""#.utf8)
    private static let keyName = Array(#""responder_key""#.utf8)
    private static let lineName = Array(#""line""#.utf8)
    private static let sourceName = Array(#""source""#.utf8)
    private static let shadowSource = Array(#""shadow""#.utf8)

    init(_ record: ArraySlice<UInt8>) {
        var index = record.startIndex
        func skipSpace() {
            while index < record.endIndex {
                switch record[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }
        /// Past the value at `index` (a string, a number or word, or a container).
        func skipValue() -> Bool {
            var depth = 0
            var inString = false
            while index < record.endIndex {
                let byte = record[index]
                if inString {
                    if byte == UInt8(ascii: "\\") { index += 1 } else if byte == UInt8(ascii: "\"") { inString = false }
                    index += 1
                    if !inString && depth == 0 { return true }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return true }
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        return true
                    }
                case UInt8(ascii: ","):
                    if depth == 0 { return true }
                default: break
                }
                index += 1
            }
            return depth == 0 && !inString
        }
        skipSpace()
        guard index < record.endIndex, record[index] == UInt8(ascii: "{") else { return }
        index += 1
        skipSpace()
        if index < record.endIndex, record[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                skipSpace()
                guard index < record.endIndex, record[index] == UInt8(ascii: "\"") else { return }
                let nameStart = index
                guard skipValue() else { return }
                let name = record[nameStart..<index]
                skipSpace()
                guard index < record.endIndex, record[index] == UInt8(ascii: ":") else { return }
                index += 1
                skipSpace()
                let valueStart = index
                guard skipValue(), index > valueStart else { return }
                var valueEnd = index
                while valueEnd > valueStart, [0x20, 0x09].contains(record[valueEnd - 1]) { valueEnd -= 1 }
                let value = valueStart..<valueEnd
                if name.elementsEqual(Self.requestName) {
                    request = value
                } else if name.elementsEqual(Self.outcomeName) {
                    outcome = value
                } else if name.elementsEqual(Self.keyName) {
                    responderKey = value
                } else if name.elementsEqual(Self.lineName) {
                    line = Int(String(decoding: record[value], as: UTF8.self))
                } else if name.elementsEqual(Self.sourceName) {
                    isShadow = record[value].elementsEqual(Self.shadowSource)
                }
                skipSpace()
                guard index < record.endIndex else { return }
                if record[index] == UInt8(ascii: "}") {
                    index += 1
                    break
                }
                guard record[index] == UInt8(ascii: ",") else { return }
                index += 1
            }
        }
        skipSpace()
        complete = index == record.endIndex
    }
}
