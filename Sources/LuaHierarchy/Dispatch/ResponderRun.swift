/// Calls a run of consecutive responders in one go, when the side that owns them can do that
/// cheaper than one call each (Lua: one protected call for the whole run, instead of one per
/// responder). The dispatcher stays in charge of the rules: it hands over only `receive*`
/// responders that match the current value, in order, and applies the one answer that ends
/// the run as it would any other.
protocol ResponderRunner: AnyObject {
    /// Calls the responders `tokens` name (each a `Responder.runToken`), in order, with
    /// `input`, while each answers `notHandled`. It stops early, after a call, when
    /// `changes` moves: a responder removed meanwhile must not be called. `location(i)` is
    /// where responder `i`'s code is, for the messages of a failure.
    func callRun(
        _ tokens: UnsafeBufferPointer<Int32>, with input: inout Message, returning domain: Domain,
        changes: UnsafePointer<Int>, location: (Int) -> String
    ) -> RunResult
}

/// How a run went.
enum RunResult {
    /// The first `called` responders answered `notHandled` (all of them, unless registrations
    /// changed and the run stopped early).
    case continued(called: Int)
    /// The ones before `index` answered `notHandled`; the one at `index` gave `reply`.
    case stopped(index: Int, reply: ResponderReply)
}

/// Where a responder of a run sits in the dispatch's chain snapshot.
struct RunPosition {
    var node: Int32
    var offset: Int32
}
