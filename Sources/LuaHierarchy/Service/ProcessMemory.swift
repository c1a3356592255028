import CProcess

/// The C library's memory settings an executable makes once at its start (the CLI does):
/// the library never changes them, as they are the whole process's, not an engine's.
package enum ProcessMemory {
    /// Keeps freed memory with the process up to a few megabytes (glibc: a trim threshold of
    /// 4 MiB and a top pad of 1 MiB) rather than giving it back to the kernel and faulting it
    /// in again for the next lines. Call it before starting any thread. Whether the C library
    /// took the settings (false where it has none).
    @discardableResult
    package static func keepFreedMemory() -> Bool { luahier_process_keepfreedmemory() != 0 }
}
