#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the input, numbers its lines and cuts them into batches for the pipeline.
///
/// Lines end at `\n` (a `\r` before it is dropped); the last line needs no newline. Blank
/// lines are skipped but counted, so `line` is always the line in the file. A line longer
/// than `maxLineBytes` is not kept: the reader skips to its end and passes on only its
/// length, so memory stays bounded by one read plus one line.
struct LineReader {
    let pipeline: Pipeline
    let input: Int32
    let maxLineBytes: Int

    /// Most lines per batch: small enough to share a read among workers, large enough that
    /// handing over costs little per line.
    static let batchLimit = 512
    static let readSize = 1 << 18

    /// The fixed buffers batches are taped into, given back as each is written.
    private let tapeSlots = TapeSlots()
    private var carry: [UInt8] = []
    /// Inside a line already known to be too long: its length so far.
    private var skipping: Int?
    private var lineNumber = 0
    private var sequence = 0

    /// `lineOffset`: the number of the line before the first (0: the first is line 1).
    init(pipeline: Pipeline, input: Int32, maxLineBytes: Int, lineOffset: Int = 0) {
        self.pipeline = pipeline
        self.input = input
        self.maxLineBytes = maxLineBytes
        lineNumber = lineOffset
    }

    mutating func readAll() {
        var buffer = [UInt8](repeating: 0, count: Self.readSize)
        while !pipeline.isStopped {
            guard waitForInput() else { continue }
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress!, Self.readSize) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                pipeline.stop(ioError: "cannot read the input: \(String(cString: strerror(errno)))")
                return
            }
            if count == 0 { break }
            guard ingest(buffer[0..<count], atEnd: false) else { return }
        }
        if !pipeline.isStopped { _ = ingest([], atEnd: true) }
    }

    /// Polls for up to 100 ms, so a stopped run does not wait on a silent producer.
    private func waitForInput() -> Bool {
        var request = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
        // -1 (EINTR: a signal) goes round the loop, which checks whether the run stopped.
        return poll(&request, 1, 100) > 0
    }

    /// Adds bytes read; hands every whole line on. False once the run stopped.
    private mutating func ingest(_ bytes: ArraySlice<UInt8>, atEnd: Bool) -> Bool {
        var lines: [Batch.Line] = []
        var rest = bytes
        if let skipped = skipping {
            if let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
                lineNumber += 1
                lines.append(.init(number: lineNumber, start: 0, count: skipped + (newline - rest.startIndex), oversized: true))
                skipping = nil
                rest = rest[(newline + 1)...]
            } else if atEnd {
                lineNumber += 1
                lines.append(.init(number: lineNumber, start: 0, count: skipped, oversized: true))
                skipping = nil
            } else {
                skipping = skipped + rest.count
                return true
            }
        }
        // The last newline can only be in what this read added: a long line is not scanned
        // again at every read (that made reading it quadratic).
        let carried = carry.count
        let lastNew = rest.lastIndex(of: UInt8(ascii: "\n")).map { carried + ($0 - rest.startIndex) }
        carry.append(contentsOf: rest)
        let chunk: [UInt8]
        if atEnd {
            chunk = carry
            carry = []
        } else if let lastNewline = lastNew {
            chunk = Array(carry[...lastNewline])
            carry.removeFirst(lastNewline + 1)
        } else {
            chunk = []
        }
        cutLines(of: chunk, into: &lines)
        if carry.count > maxLineBytes {
            skipping = carry.count
            carry = []
        }
        return submit(lines, chunk: chunk)
    }

    private mutating func cutLines(of chunk: [UInt8], into lines: inout [Batch.Line]) {
        var cutter = LineCutter(maxLineBytes: maxLineBytes, lineNumber: lineNumber)
        lines += cutter.cut(chunk)
        lineNumber = cutter.lineNumber
    }

    /// Splits the lines so every worker gets a share, at most `batchLimit` each.
    private mutating func submit(_ lines: [Batch.Line], chunk: [UInt8]) -> Bool {
        guard !lines.isEmpty else { return true }
        let share = min(Self.batchLimit, max(1, (lines.count + pipeline.jobs - 1) / pipeline.jobs))
        var start = 0
        while start < lines.count {
            let end = min(lines.count, start + share)
            // Each line's JSON is read here, ahead, into its tape: the state's thread, the
            // pipeline's serial stage, only makes tables from it (a line that does not fit
            // is read there straight).
            var batchLines = Array(lines[start..<end])
            let tapes = LineTapes(chunk: chunk, lines: &batchLines, slots: tapeSlots)
            let batch = Batch(sequence: sequence, chunk: chunk, lines: batchLines, tapes: tapes)
            sequence += 1
            guard pipeline.submit(batch) else { return false }
            start = end
        }
        return true
    }
}

/// Cuts whole lines out of a chunk: `\n` ends a line and a `\r` before it is dropped; blank
/// lines are skipped but counted; a line over `maxLineBytes` is marked oversized.
struct LineCutter {
    let maxLineBytes: Int
    /// The number of the last line cut.
    var lineNumber = 0

    mutating func cut(_ chunk: [UInt8]) -> [Batch.Line] {
        var lines: [Batch.Line] = []
        chunk.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            var start = 0
            while start < bytes.count {
                // memchr: the line's end, found a vector at a time.
                let end = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
                    .map { UnsafeRawPointer($0) - UnsafeRawPointer(base) } ?? bytes.count
                lineNumber += 1
                var length = end - start
                if length > 0 && bytes[end - 1] == UInt8(ascii: "\r") { length -= 1 }
                if length > maxLineBytes {
                    lines.append(.init(number: lineNumber, start: start, count: length, oversized: true))
                } else if !UnsafeBufferPointer(rebasing: bytes[start..<start + length]).allSatisfy(Self.isBlank) {
                    lines.append(.init(number: lineNumber, start: start, count: length, oversized: false))
                }
                start = end + 1
            }
        }
        return lines
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D
    }
}
