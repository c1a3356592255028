#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a reload left the running revision in place.
public struct ReloadFailure: Error, Sendable, CustomStringConvertible {
    /// The rules' error (`rules.lua:3: ...`), or why the file could not be read.
    public let error: ScriptError
    /// When it failed (seconds since 1970).
    public let at: Double

    /// The rules' error, as `ScriptError` describes it.
    public var description: String { error.description }
}

/// What a reload did.
public enum ReloadResult: Sendable, Equatable {
    /// A new revision is answering.
    case loaded(Revision)
    /// The files are what the running revision loaded: it keeps answering, under its number.
    case unchanged(Revision)
    /// The new files failed to load: the running revision keeps answering.
    case failed(running: Revision, message: String)
}

/// A file's identity and version as `stat` sees them: a change to any of it is a change.
struct FileStamp: Equatable {
    var device: UInt64 = 0, inode: UInt64 = 0, size: Int64 = -1, seconds: Int = 0, nanoseconds: Int = 0

    init(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Glibc)
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
        #else
        seconds = Int(info.st_mtimespec.tv_sec)
        nanoseconds = Int(info.st_mtimespec.tv_nsec)
        #endif
    }
}

/// The most a rules file may hold when no memory cap bounds it: 256 MiB.
let rulesFileLimitWithoutCap = 256 << 20

/// Reads a whole rules file of at most `limit` bytes (its text is then loaded into every
/// state, under the memory cap, so the cap is its bound; `rulesFileLimitWithoutCap` without
/// one). Only a regular file is read: a FIFO would block the reader, and a device or a file
/// that grows while it is read would never end. It is opened without blocking and checked
/// before a byte is read; one that grows past `limit` is refused once it has, having read no
/// more than `limit` + 64 KiB. `kind` names the file in messages, with where its limit comes
/// from (a rules file's is the memory cap). With `within`, the file must be a `.lua` file
/// under that folder as opened (the last component not a link, the descriptor's own path
/// checked), else it is refused before a byte is read: what a client named may not lead out.
func readRulesFile(_ path: String, limit: Int?, kind: ReadFileKind = .rules, within folder: String? = nil) -> Result<[UInt8], ScriptError> {
    let limit = limit ?? rulesFileLimitWithoutCap
    func failure(_ message: String) -> Result<[UInt8], ScriptError> {
        .failure(ScriptError(type: "CannotRead", message: message))
    }
    let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (folder == nil ? 0 : O_NOFOLLOW))
    if let folder, descriptor < 0 || !FolderPaths.descriptor(descriptor, liesUnder: folder, suffix: ".lua") {
        if descriptor >= 0 { close(descriptor) }
        return failure("cannot read \(path): not a .lua file in \(folder)")
    }
    guard descriptor >= 0 else { return failure("cannot open \(path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return failure("cannot read \(path): \(String(cString: strerror(errno)))") }
    guard info.st_mode & S_IFMT == S_IFREG else {
        return failure("cannot read \(path): not a regular file (\(fileKind(info.st_mode))); \(kind.plural) are read from regular files only")
    }
    guard Int(info.st_size) <= limit else {
        return failure("cannot read \(path): \(info.st_size) bytes, more than the \(limit) \(kind.mayHold)")
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(Int(info.st_size))
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            return failure("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        if count == 0 { return .success(bytes) }
        bytes.append(contentsOf: buffer[..<count])
        if bytes.count > limit {
            return failure("cannot read \(path): it grew past the \(limit) bytes \(kind.mayHold)")
        }
    }
}

/// What `readRulesFile` reads, as its messages name it.
enum ReadFileKind {
    case rules, bundle, key

    var plural: String {
        switch self {
        case .rules: "rules"
        case .bundle: "bundles"
        case .key: "keys"
        }
    }

    /// The limit's phrase: "a rules file may hold (the memory cap)".
    var mayHold: String {
        switch self {
        case .rules: "a rules file may hold (the memory cap)"
        case .bundle: "a bundle may hold"
        case .key: "a key file may hold"
        }
    }
}

/// What a file that is not regular is, for messages.
func fileKind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: "a directory"
    case S_IFIFO: "a FIFO"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    default: "not a plain file"
    }
}
