import CLuaHost

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Stopping running scripts on SIGINT and SIGTERM, as `lua.c` does on Ctrl-C (contract §8).
///
/// Once asked (by a signal, or by `request`), every Lua state of the process stops at its
/// next instruction, or at the next charge of long host work: its running dispatches end
/// `unhandled` with the error `{type = "Interrupted", message = "interrupted", signal,
/// where, traceback}`, which no `pcall` catches, out to the top-level entry, which fails with
/// it (`ScriptError`, naming the `file:line` the script was stopped at). No new entry runs
/// an instruction until `reset()`. The mechanism is the limits' own: the handler reaches a
/// running state through the watchdog's signal, so the hook is set on the state's thread.
public enum Interruption {
    /// The `type` of the error an interrupted entry fails with.
    public static let errorType = Message.interruptedType

    /// Installs the handlers for SIGINT and SIGTERM (one the process started with ignored,
    /// as a background job, stays ignored) and unblocks them in the calling thread. After the
    /// first signal a second one ends the process the default way (for a host stuck outside
    /// Lua). The handler restarts no system call: a blocked read returns EINTR. False if
    /// they could not be installed.
    @discardableResult
    public static func installSignalHandlers() -> Bool {
        luahier_interrupt_install() == 0
    }

    /// Handles SIGHUP as SIGTERM is handled (`installSignalHandlers`), for a command that
    /// does not reload on it: a closed terminal stops it with its output kept, and its exit
    /// status is 129.
    @discardableResult
    package static func installHangUpHandler() -> Bool {
        luahier_interrupt_install_hangup() == 0
    }

    /// The name of a signal that asks to stop, for messages.
    package static func name(of signal: Int32) -> String {
        switch signal {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(signal)"
        }
    }

    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, one that only waits (for a thread
    /// that runs scripts): the signal then goes to a thread whose wait it cuts short.
    public static func blockSignalsOnThisThread() {
        luahier_interrupt_block()
    }

    /// The signal that asked to stop (SIGINT, SIGTERM), nil while none did.
    public static var signal: Int32? {
        let pending = luahier_interrupt_pending()
        return pending == 0 ? nil : pending
    }

    /// Asks every running script to stop as `signal` would; callable from any thread.
    public static func request(signal: Int32 = SIGINT) {
        luahier_interrupt_request(signal)
    }

    /// Lets scripts run again (call `installSignalHandlers()` to handle the next signal).
    public static func reset() {
        luahier_interrupt_reset()
    }
}
