#if Server
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file the server needs before it starts (its TLS certificate or key, a token file) that
/// cannot be used: which one, as what, and why. `luahier serve` prints it as one line and
/// exits 2, as for any file of its command line that is not there.
public struct SetupFileError: Error, Sendable, CustomStringConvertible {
    /// The file's path, or the name of the environment variable that held the text.
    public var source: String
    /// What it was to be: `TLS certificate chain`, `TLS private key`, `dispatch token file`.
    public var role: String
    /// What is wrong with it, never quoting it (it may hold a secret).
    public var why: String

    /// The failure of `source`, to be `role`, because of `why`.
    public init(source: String, role: String, why: String) {
        self.source = source
        self.role = role
        self.why = why
    }

    /// `cannot use certs/key.pem as the TLS private key: no such file or directory`
    public var description: String { "cannot use \(source) as the \(role): \(why)" }
}

/// Reads the small files the server is set up with, whole.
enum SetupFile {
    /// Certificates, keys and tokens are a few KiB; past this the path is the wrong file (or a
    /// device that never ends).
    static let limit = 1 << 20

    static func read(_ path: String, as role: String) throws(SetupFileError) -> [UInt8] {
        func failure(_ why: String) -> SetupFileError { SetupFileError(source: path, role: role, why: why) }
        // Non-blocking: opening a FIFO would wait for a writer; it is refused below instead.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw failure(reason(errno)) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw failure(reason(errno)) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw failure("it is not a regular file") }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { Self.readSome(descriptor, $0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw failure(reason(errno)) }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
            if bytes.count > limit { throw failure("it is larger than \(limit >> 20) MiB") }
        }
    }

    private static func readSome(_ descriptor: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        #if canImport(Glibc)
        Glibc.read(descriptor, buffer.baseAddress, buffer.count)
        #else
        Darwin.read(descriptor, buffer.baseAddress, buffer.count)
        #endif
    }

    /// `no such file or directory`: the system's words, as the rest of a sentence.
    private static func reason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
#endif
