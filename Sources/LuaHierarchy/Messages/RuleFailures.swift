/// The ways a request's rules failed while it was answered: the errors the host made of a
/// responder failing (a raise, a broken responder contract, a limit that tripped), whether or
/// not a responder caught them afterwards.
///
/// An error a rule reports of its own type, or one a request carried in, is not a failure:
/// a server counts failures apart from `unhandled` outcomes, so a bad deploy shows as such
/// whatever its clients send. A rule that raises a table typed as one of these (`error({type =
/// "LuaError"})`) counts as that failure; a limit counts only when its budget tripped.
public struct RuleFailures: OptionSet, Sendable, Hashable {
    /// The failures' bits, one per error type (the host's C flags map onto them in `LuaHost`).
    public let rawValue: UInt32

    /// Makes the set whose bits `rawValue` holds.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `LuaError`: a responder raised (Lua's own runtime error, or a value that is not an error).
    public static let luaError = RuleFailures(rawValue: 1 << 0)
    /// `ResponderContractError`: a responder returned what its kind may not, or yielded.
    public static let responderContractError = RuleFailures(rawValue: 1 << 1)
    /// `DispatchDepthExceeded`: dispatches nested past the depth limit.
    public static let dispatchDepthExceeded = RuleFailures(rawValue: 1 << 2)
    /// `HostError`: the host failed a responder's call.
    public static let hostError = RuleFailures(rawValue: 1 << 3)
    /// `PayloadError`: a value could not cross between Lua and Swift.
    public static let payloadError = RuleFailures(rawValue: 1 << 4)
    /// `MemoryError`: memory ran out with no memory limit set.
    public static let memoryError = RuleFailures(rawValue: 1 << 5)
    /// `InstructionLimitExceeded`: the instruction limit tripped.
    public static let instructionLimitExceeded = RuleFailures(rawValue: 1 << 6)
    /// `TimeLimitExceeded`: the time limit tripped.
    public static let timeLimitExceeded = RuleFailures(rawValue: 1 << 7)
    /// `MemoryLimitExceeded`: the memory limit refused an allocation.
    public static let memoryLimitExceeded = RuleFailures(rawValue: 1 << 8)

    /// Each failure alone, with the error type the host gives it.
    public static let errorTypes: [(failure: RuleFailures, type: String)] = [
        (.luaError, "LuaError"), (.responderContractError, "ResponderContractError"),
        (.dispatchDepthExceeded, "DispatchDepthExceeded"), (.hostError, "HostError"), (.payloadError, "PayloadError"),
        (.memoryError, "MemoryError"), (.instructionLimitExceeded, "InstructionLimitExceeded"),
        (.timeLimitExceeded, "TimeLimitExceeded"), (.memoryLimitExceeded, "MemoryLimitExceeded"),
    ]

    /// The limits among them: `instructionLimitExceeded`, `timeLimitExceeded`, `memoryLimitExceeded`.
    public static let limits: RuleFailures = [.instructionLimitExceeded, .timeLimitExceeded, .memoryLimitExceeded]

    /// The error types of the failures in the set, in `errorTypes`' order.
    public var types: [String] { Self.errorTypes.filter { contains($0.failure) }.map(\.type) }
}
