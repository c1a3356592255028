#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What rules `print`, written to a descriptor by a thread of its own, so a state never waits
/// for a reader: a service's stderr may be a pipe no one drains, and a blocking write there
/// would hold the state (and its request) forever, out of reach of every time limit.
///
/// Up to `capacity` bytes wait to be written; while that much waits, more text is dropped and
/// counted (`dropped`), and once writing goes on again a line says how many were dropped.
/// Text is escaped and bounded as all text the host prints for a script.
///
/// ```swift
/// let printer = DetachedPrinter()
/// options.print = printer.print
/// ```
public final class DetachedPrinter: @unchecked Sendable {
    private let descriptor: Int32
    private let capacity: Int
    private let monitor = Monitor()
    // Guarded by `monitor`.
    private var waiting: [UInt8] = []
    private var droppedLines = 0
    private var droppedUnreported = 0
    private var writing = false

    /// Starts the writing thread for `descriptor` (stderr by default).
    public init(descriptor: Int32 = 2, capacity: Int = 1 << 20) {
        self.descriptor = descriptor
        self.capacity = capacity
        _ = LargeStack.detached(size: 128 << 10) { [self] in writeForever() }
    }

    /// Queues one printed line (from any thread, never blocking on the descriptor).
    public func print(_ line: String) {
        let text = PrintableText.block(line) + "\n"
        monitor.locked {
            if waiting.count + text.utf8.count > capacity {
                droppedLines += 1
                droppedUnreported += 1
                return
            }
            waiting.append(contentsOf: text.utf8)
            monitor.broadcast()
        }
    }

    /// Queues one line as it is (a log record its formatter made printable): from any
    /// thread, never blocking on the descriptor; dropped and counted as `print`'s lines.
    public func write(line: String) {
        let count = line.utf8.count + 1
        monitor.locked {
            if waiting.count + count > capacity {
                droppedLines += 1
                droppedUnreported += 1
                return
            }
            waiting.append(contentsOf: line.utf8)
            waiting.append(UInt8(ascii: "\n"))
            monitor.broadcast()
        }
    }

    /// Lines dropped so far because too much waited.
    public var dropped: Int { monitor.locked { droppedLines } }

    /// Waits until what was printed is written, or `seconds` passed (before the process exits).
    public func flush(seconds: Double) {
        let deadline = Monitor.now + seconds
        monitor.locked {
            while (!waiting.isEmpty || writing) && Monitor.now < deadline { monitor.wait(until: min(deadline, Monitor.now + 0.05)) }
        }
    }

    private func writeForever() {
        while true {
            let text: [UInt8] = monitor.locked {
                while waiting.isEmpty && droppedUnreported == 0 { monitor.wait() }
                var text = waiting
                waiting.removeAll(keepingCapacity: true)
                if droppedUnreported > 0 {
                    text += Array("luahier: \(droppedUnreported) printed lines dropped: stderr was not being read\n".utf8)
                    droppedUnreported = 0
                }
                writing = true
                return text
            }
            _ = text.withUnsafeBytes { OutputWriter.writeAll($0, to: descriptor) }
            monitor.locked {
                writing = false
                monitor.broadcast()
            }
        }
    }
}
