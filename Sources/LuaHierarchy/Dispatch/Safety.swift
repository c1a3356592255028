#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What happens when a value of a type a node did not declare passes it (contract §6).
public enum SafetyLevel: String, Sendable, CaseIterable {
    /// The value is replaced by a reported `SafetyViolation` error, which continues from
    /// the declaring node.
    case strict
    /// A warning (once per type and node), and the value goes on unchanged. The default.
    case relaxed
    /// Declarations are not checked at run time (`luahier check` still reads them).
    case disabled
}

/// An undeclared type passing a declaring node, under `SafetyLevel.relaxed`.
public struct SafetyWarning: Hashable, Sendable, CustomStringConvertible {
    /// Whether the value was an event or an error.
    public var domain: Domain
    /// The undeclared type.
    public var type: String
    /// The declaring node the value passed.
    public var node: String
    /// What that node (and the declaring nodes below it on the value's way) declared.
    public var declared: [String]
    /// Where the node's declaration was made.
    public var declaredAt: String
    /// Where the value was triggered or reported.
    public var reportedAt: String

    /// The default handler: one line on stderr, as Lua's `warn` would write it.
    public static func writeToStandardError(_ warning: SafetyWarning) {
        let line = Array("luahier: warning: \(PrintableText.field("\(warning)"))\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    /// One line: the value, where it came from, the node it passed and what that node declared.
    public var description: String {
        let verb = domain == .event ? "triggers" : "reports"
        return "safety: \(domain.rawValue) '\(type)' (from \(reportedAt)) passed \(node), which \(verb) only {\(declared.joined(separator: ", "))} (\(declaredAt))"
    }
}

/// The run-time check (contract §6), kept apart from the dispatch loop: a plan made while
/// declarations are checked has an arrival at each declaring node (ChainPlan.swift), and the
/// engine asks this what a value arriving there does.
enum SafetyCheck {
    enum Verdict {
        case pass
        case warn(SafetyWarning)
        case replace(Message)
    }

    /// Judges a value of `domain` and `type`, dispatched from `origin`, as it reaches the
    /// declaring node of `arrival` (`node` names it, only when a message needs it); `value`
    /// describes it, for a violation.
    static func verdict(
        level: SafetyLevel, at arrival: Arrival, node: () -> String, from origin: () -> String, domain: Domain, type: String,
        value: () -> Value
    ) -> Verdict {
        guard level != .disabled, arrival.declarations.location(domain) != nil, type != violationType else { return .pass }
        guard !arrival.allows(type, domain) else { return .pass }
        // A message names at most `declaredListed` of what may pass (a chain of many
        // declaring nodes would make each message as long as all of them).
        let allowed = arrival.allowedTypes(domain, limit: declaredListed)
        let warning = SafetyWarning(
            domain: domain, type: type, node: node(), declared: allowed.names + (allowed.more > 0 ? ["… \(allowed.more) more"] : []),
            declaredAt: arrival.declarations.location(domain)!, reportedAt: origin())
        guard level == .strict else { return .warn(warning) }
        var fields: [String: Value] = [
            "node": .string(warning.node), "undeclared": .string(warning.type),
            "domain": .string(domain.rawValue), "declared": .array(warning.declared.map(Value.string)),
        ]
        // An error it replaces is its cause, as for any replaced error; an event is kept too.
        fields[domain == .error ? "cause" : "event"] = value()
        let verb = domain == .event ? "triggers" : "reports"
        return .replace(
            .hostError(
                violationType,
                "\(domain.rawValue) '\(warning.type)' passed \(warning.node), which \(verb) only {\(warning.declared.joined(separator: ", "))}",
                where: warning.declaredAt, fields))
    }

    /// How many declared types a warning or a violation lists.
    static let declaredListed = 20

    /// Never checked itself, so a violation cannot cascade.
    static let violationType = "SafetyViolation"
}
