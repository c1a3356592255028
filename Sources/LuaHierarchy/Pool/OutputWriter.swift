#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing output that a signal must be able to abandon. A blocking write to a pipe whose
/// reader stopped reading waits forever, and a signal does not end it reliably: it goes to
/// one thread, maybe not the writer, and a write that has written part returns the part,
/// then the next one blocks again. So a watchful write never blocks: it waits for room with
/// `poll` (100 ms at a time, looking at `Interruption.signal` in between) and writes at most
/// PIPE_BUF bytes, which fit whenever poll says there is room. Once an interrupt has come,
/// every write is watchful, and one that finds no room for `patience` gives up.
package enum OutputWriter {
    /// The errno `writeAll` returns when it gave up: an interrupt came and the reader took
    /// nothing for `patience`.
    public static let abandoned = ECANCELED
    static let patience = 1.0

    /// Writes all of `bytes` to `descriptor`, across short writes and signals; nil, or the
    /// errno of the failure. `watchful`: never block, even before an interrupt (for writers
    /// other than the thread a signal reaches); a regular file never blocks and is written
    /// as it is.
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, watchful: Bool = false) -> Int32? {
        var offset = 0
        var waited = 0.0
        var regular: Bool?
        while offset < bytes.count {
            var count = bytes.count - offset
            if watchful || Interruption.signal != nil {
                if regular == nil {
                    var status = stat()
                    regular = fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
                }
                if regular == false {
                    var request = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    let ready = poll(&request, 1, 100)
                    if ready < 0 && errno != EINTR { return errno }
                    if ready <= 0 {
                        if Interruption.signal != nil {
                            waited += 0.1
                            if waited >= patience { return abandoned }
                        }
                        continue
                    }
                    waited = 0
                    count = min(count, Int(PIPE_BUF))
                }
            }
            let written = write(descriptor, bytes.baseAddress! + offset, count)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }
}
