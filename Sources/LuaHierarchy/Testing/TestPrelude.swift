/// The Lua side of `luahier test`: the globals a test file uses, run in each test's fresh
/// hierarchy before the test file. It talks to `RuleTestRunner` through three host functions:
/// `__luahier_result(table)` (how the test went), `__luahier_presented()` (errors that reached
/// the presenter since the test began) and `__luahier_deliveries()` (subscriptions the last
/// `publish` reached).
///
/// Assertions raise a failure table; the runner's own call of the test (`__luahier_run`)
/// catches it and reports it with the assertion's `file:line` (found by letting `error` name
/// the caller's line: the sandbox has no `debug`). Limits are not catchable in Lua, so a test
/// that trips one ends its chunk, and the runner reports the limit error.
enum TestPrelude {
    static let chunkName = "=luahier test"

    /// Lua/test_prelude.lua, embedded at build time.
    static var source: String { LuaSources.testPrelude }
}
