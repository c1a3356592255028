import CLuaHost

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard input read as `run(file: "-")` reads a script from it: a read a signal cut
/// short ends it (`Interruption`), and bytes read ahead to tell what it holds are given
/// back, so the script's reader gets them first.
enum StandardInput {
    /// Up to `count` (at most 16) first bytes, read and given back: fewer at the end of
    /// input. A failed read (an interrupt: `Interrupted system call`) is `CannotRead`.
    static func peek(_ count: Int) throws(ScriptError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: min(count, Int(LUAHIER_STDIN_AHEAD)))
        var filled = 0
        var ended = false
        while filled < bytes.count {
            let read = bytes.withUnsafeMutableBytes { luahier_readstdin($0.baseAddress! + filled, $0.count - filled) }
            if read == 0 { ended = true; break }
            if read < 0 {
                if errno == EINTR && luahier_interrupt_pending() == 0 { continue }
                let reason = errno
                luahier_unreadstdin(bytes, filled, 0)
                throw failure(reason)
            }
            filled += read
        }
        luahier_unreadstdin(bytes, filled, ended ? 1 : 0)
        return Array(bytes[..<filled])
    }

    /// Everything left, or (`whole` false) the first bytes past `limit`: the read stops there.
    static func readAll(limit: Int) throws(ScriptError) -> (bytes: [UInt8], whole: Bool) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let read = buffer.withUnsafeMutableBytes { luahier_readstdin($0.baseAddress, $0.count) }
            if read == 0 { return (bytes, true) }
            if read < 0 {
                if errno == EINTR && luahier_interrupt_pending() == 0 { continue }
                throw failure(errno)
            }
            bytes.append(contentsOf: buffer[..<read])
            if bytes.count > limit { return (bytes, false) }
        }
    }

    private static func failure(_ code: Int32) -> ScriptError {
        ScriptError(type: "CannotRead", message: "cannot read stdin: \(String(cString: strerror(code)))")
    }
}
