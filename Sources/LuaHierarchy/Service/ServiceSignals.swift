import CSignals

/// Signals for a long-running service (`serve`, `dispatch --watch`): SIGHUP asks for a
/// reload and, for `serve`, SIGTERM and SIGINT ask for a graceful shutdown. Unlike
/// `Interruption`'s, these handlers stop no running script: they set flags the service
/// polls (`RulesWatcher` polls the hang-up). A second SIGTERM or SIGINT during a shutdown
/// ends the process the default way, except during `serve`'s shutdown delay, which it ends
/// (`deferRepeatedStop`).
package enum ServiceSignals {
    /// Handles SIGHUP from now on, and unblocks it in the calling thread.
    @discardableResult
    public static func handleHangUp() -> Bool { luahier_service_handlehangup() == 0 }

    /// Handles SIGTERM and SIGINT as shutdown requests (instead of `Interruption`'s), and
    /// unblocks them in the calling thread.
    @discardableResult
    public static func handleStops() -> Bool { luahier_service_handlestops() == 0 }

    /// Whether SIGHUP came since the last call (it clears it).
    public static func takeHangUp() -> Bool { luahier_service_takehangup() != 0 }

    /// With `on`, the second SIGTERM or SIGINT only sets `stopRepeated` (a shutdown delay then
    /// ends early); the one after it ends the process. Off (the default), the second ends it.
    public static func deferRepeatedStop(_ on: Bool) { luahier_service_deferrepeatedstop(on ? 1 : 0) }

    /// Whether a second SIGTERM or SIGINT came while `deferRepeatedStop` was on.
    public static var stopRepeated: Bool { luahier_service_stoprepeated() != 0 }

    /// The first SIGTERM or SIGINT, once one came.
    public static var stopSignal: Int32? {
        let signal = luahier_service_stopsignal()
        return signal == 0 ? nil : signal
    }
}
