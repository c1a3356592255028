#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Decision records appended to a file as NDJSON, rotated by size: once the file would pass
/// `maxBytes`, it becomes `FILE.1` (`FILE.1` becomes `FILE.2`, and so on) and a new `FILE`
/// begins; `keep` files at most are kept, `FILE` included, the oldest removed. A record is
/// never split across files (one larger than `maxBytes` has a file of its own).
public final class DecisionFileSink: DecisionSink, @unchecked Sendable {
    /// Why the file could not be opened or written.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// `cannot open decisions.ndjson: Permission denied`.
        public let description: String
    }

    /// The file written now.
    public let path: String
    /// The size at which the file is rotated.
    public let maxBytes: Int
    /// Files kept, the one written now included.
    public let keep: Int
    /// Used by the log's thread only.
    private var descriptor: Int32
    private var size: Int

    /// The most files a sink keeps: each rotation renames every one of them, so the number
    /// bounds a rotation's work.
    public static let keepLimit = 1000

    /// Opens (or creates) `path` to append to. `keep` is at least 1 and at most `keepLimit`.
    public init(path: String, maxBytes: Int = 64 << 20, keep: Int = 5) throws(Failure) {
        guard keep <= Self.keepLimit else {
            throw Failure(description: "keep \(keep) files: at most \(Self.keepLimit) are kept (each rotation renames them all)")
        }
        self.path = path
        self.maxBytes = max(maxBytes, 1)
        self.keep = max(keep, 1)
        (descriptor, size) = try Self.open(path)
    }

    deinit {
        if descriptor >= 0 { closeFile(descriptor) }
    }

    /// Records are written as they come.
    public var batching: DecisionBatching { .immediate }

    /// Appends `records`, rotating between two of them when the file would pass `maxBytes`.
    public func write(_ records: [[UInt8]]) throws {
        var chunk: [UInt8] = []
        for record in records {
            if size + chunk.count + record.count > maxBytes && size + chunk.count > 0 {
                try append(chunk)
                chunk.removeAll(keepingCapacity: true)
                try rotate()
            }
            chunk.append(contentsOf: record)
        }
        try append(chunk)
    }

    /// Closes the file.
    public func close() {
        if descriptor >= 0 { closeFile(descriptor) }
        descriptor = -1
    }

    private func append(_ bytes: [UInt8]) throws(Failure) {
        guard !bytes.isEmpty else { return }
        if descriptor < 0 { (descriptor, size) = try Self.open(path) }
        if let code = bytes.withUnsafeBytes({ OutputWriter.writeAll($0, to: descriptor) }) {
            throw Failure(description: "cannot write \(path): \(String(cString: strerror(code)))")
        }
        size += bytes.count
    }

    /// `FILE.(keep-1)` removed, each `FILE.n` renamed `FILE.(n+1)`, `FILE` renamed `FILE.1`,
    /// and a new `FILE` opened.
    private func rotate() throws(Failure) {
        closeFile(descriptor)
        descriptor = -1
        if keep == 1 {
            unlink(path)
        } else {
            unlink("\(path).\(keep - 1)")
            var number = keep - 2
            while number >= 1 {
                rename("\(path).\(number)", "\(path).\(number + 1)")
                number -= 1
            }
            rename(path, "\(path).1")
        }
        (descriptor, size) = try Self.open(path)
    }

    private static func open(_ path: String) throws(Failure) -> (Int32, Int) {
        let descriptor = openFile(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        var status = stat()
        let size = fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
        return (descriptor, size)
    }
}

// At file scope, where `close` and `open` are the C functions, not the sink's members.
private func closeFile(_ descriptor: Int32) { close(descriptor) }
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
