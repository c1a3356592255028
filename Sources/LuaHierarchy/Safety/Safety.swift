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

/// The types a node declared its subtree may raise: `node:triggers{...}` (events) and
/// `node:reports{...}` (errors), each with where it was first declared.
final class Declarations {
    private(set) var events: [String: String] = [:]
    private(set) var errors: [String: String] = [:]
    /// Where the first declaration of each domain was made, for messages.
    private(set) var eventsLocation: String?
    private(set) var errorsLocation: String?
    /// What the declared types cost against the memory cap, held while they are.
    let charge: MemoryCharge

    init(meter: (any MemoryMeter)?) {
        charge = MemoryCharge(meter: meter)
    }

    /// What declaring `types` would add: the types not declared yet, and the location once.
    func cost(of types: [String], as domain: Domain, at location: String) -> Int {
        let known = domain == .event ? events : errors
        var total = 0
        for type in types where known[type] == nil { total += MemoryCost.declaredType + MemoryCost.string(type) }
        return total > 0 ? total + MemoryCost.string(location) : 0
    }

    func declare(_ types: [String], as domain: Domain, at location: String) {
        for type in types {
            if domain == .event {
                if events[type] == nil { events[type] = location }
                if eventsLocation == nil { eventsLocation = location }
            } else {
                if errors[type] == nil { errors[type] = location }
                if errorsLocation == nil { errorsLocation = location }
            }
        }
    }

    func types(_ domain: Domain) -> [String: String] { domain == .event ? events : errors }
    func location(_ domain: Domain) -> String? { domain == .event ? eventsLocation : errorsLocation }
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

extension Node {
    /// Declares the event types this subtree may trigger (`node:triggers{...}`). Repeated
    /// declarations add up.
    public func declareTriggers(_ types: [String], file: StaticString = #fileID, line: UInt = #line) {
        declare(types, as: .event, at: "\(file):\(line)")
    }

    /// Declares the error types this subtree may report (`node:reports{...}`).
    public func declareReports(_ types: [String], file: StaticString = #fileID, line: UInt = #line) {
        declare(types, as: .error, at: "\(file):\(line)")
    }

    /// Declares `types`, charging the new ones to the tree's memory meter; false (nothing
    /// declared) when the meter refuses them. Swift callers are not refused.
    @discardableResult
    func declare(_ types: [String], as domain: Domain, at location: String, metered: Bool = false) -> Bool {
        let extras = makeExtras()
        if extras.declarations == nil {
            extras.declarations = Declarations(meter: tree.meter)
            tree.declaringNodes += 1
        }
        let declarations = extras.declarations!
        let cost = declarations.cost(of: types, as: domain, at: location)
        // Swift callers declare whatever the meter says (only scripts are refused).
        if !declarations.charge.add(cost) && metered { return false }
        declarations.declare(types, as: domain, at: location)
        tree.noteChainChange()
        return true
    }

    /// The types this node declared for `domain`, sorted (empty when it declared none).
    public func declaredTypes(_ domain: Domain) -> [String] {
        declarations?.types(domain).keys.sorted() ?? []
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
