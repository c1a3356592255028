/// One thing `luahier check` found: `file:line: (code) message`.
public struct Finding: Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// A declared type with no responder naming it at the declaring node or above.
        case requireExplicitResponders
        /// A responder no value can reach: an untyped `handle*` before it takes them all.
        case unreachableResponder
        /// A filter naming a type the tree's declarations do not know.
        case unknownType
    }

    public var code: Code
    /// Where to fix it, `file:line`.
    public var location: String
    public var message: String

    public var description: String { "\(location): (\(code.rawValue)) \(message)" }
}

/// Static checks over a tree snapshot. Nothing runs: the checks read declarations,
/// responders and filters only.
extension TreeDescription {
    /// Error types the host itself makes: always known, never typos.
    public static let hostErrorTypes: Set<String> = [
        "Error", "LuaError", "SyntaxError", "ResponderContractError", "SafetyViolation", "DispatchDepthExceeded",
        "InstructionLimitExceeded", "TimeLimitExceeded", "MemoryLimitExceeded", "MemoryError", "PayloadError",
        "HostError",
    ]

    /// Every finding, in tree order (depth-first), and on each node: declarations,
    /// unreachable responders, unknown types.
    public func check() -> [Finding] {
        var findings: [Finding] = []
        let declaredEvents = Set(entries.flatMap { $0.triggers.map(\.type) })
        let declaredErrors = Set(entries.flatMap { $0.reports.map(\.type) })
        let unreachable = entries.indices.map(unreachableResponders(on:))
        for position in entries.indices {
            findings += missingResponders(for: position, unreachable: unreachable)
            findings += unreachable[position].map(\.finding)
            findings += unknownTypes(on: position, events: declaredEvents, errors: declaredErrors)
        }
        return findings
    }

    /// `requireExplicitResponders`: each declared type needs a responder of its domain whose
    /// filter names it, on the declaring node or an ancestor. Untyped responders do not
    /// count: the point of declaring is that someone answers for the type by name; nor do
    /// responders that can never run.
    private func missingResponders(for position: Int, unreachable: [[(index: Int, finding: Finding)]]) -> [Finding] {
        let entry = entries[position]
        var findings: [Finding] = []
        for (domain, declared) in [(Domain.event, entry.triggers), (.error, entry.reports)] {
            let path = declared.isEmpty ? "" : self.path(of: position)
            for (type, location) in declared
            where !hasTypedResponder(for: type, domain, from: position, unreachable: unreachable) {
                let verb = domain == .event ? "triggers" : "reports"
                findings.append(
                    Finding(
                        code: .requireExplicitResponders, location: location,
                        message: "\(path) \(verb) '\(type)', but no \(domain.rawValue) responder that can run at \(path) or above names it in its filter"))
            }
        }
        return findings
    }

    private func hasTypedResponder(
        for type: String, _ domain: Domain, from position: Int, unreachable: [[(index: Int, finding: Finding)]]
    ) -> Bool {
        var current: Int? = position
        while let index = current {
            let dead = Set(unreachable[index].map(\.index))
            if entries[index].responders.contains(where: {
                $0.kind.domain == domain && $0.filter.contains(type) && !dead.contains($0.index)
            }) {
                return true
            }
            current = entries[index].parent
        }
        return false
    }

    /// `unreachableResponder`: follows which domains can still arrive at each position of a
    /// node's list. An untyped `handleEvent` stops every event (a `catchError` after it
    /// makes events arrive again); an untyped `handleError` stops every error. A value made
    /// inside the node (an error a responder raises) is not counted: the check is about the
    /// paths rules are written for.
    private func unreachableResponders(on position: Int) -> [(index: Int, finding: Finding)] {
        let entry = entries[position]
        var findings: [(index: Int, finding: Finding)] = []
        var stoppedBy: [Domain: Responder] = [:]
        for responder in entry.responders {
            let domain = responder.kind.domain
            if let stopper = stoppedBy[domain] {
                findings.append(
                    (responder.index,
                     Finding(
                        code: .unreachableResponder, location: responder.location,
                        message: "#\(responder.index) \(responder.kind.rawValue) on \(path(of: position)) never runs: #\(stopper.index) \(stopper.kind.rawValue) (\(stopper.location)) takes every \(domain.rawValue) before it")))
                continue
            }
            switch responder.kind {
            case .handleEvent where responder.filter.isEmpty: stoppedBy[.event] = responder
            case .handleError where responder.filter.isEmpty: stoppedBy[.error] = responder
            case .catchError: stoppedBy[.event] = nil
            default: break
            }
        }
        return findings
    }

    /// `unknownType`: once the tree declares its event (or error) types, a filter naming
    /// another one is a typo or dead code. Host error types are always known. Subscriptions
    /// are not judged: published events travel down, and declarations are about what comes up.
    private func unknownTypes(on position: Int, events: Set<String>, errors: Set<String>) -> [Finding] {
        let entry = entries[position]
        var findings: [Finding] = []
        func judge(_ types: [String], _ domain: Domain, _ what: String, _ location: String) {
            let known = domain == .event ? events : errors.union(Self.hostErrorTypes)
            guard !(domain == .event ? events : errors).isEmpty else { return }
            for type in types where !known.contains(type) {
                let verb = domain == .event ? "triggers" : "reports"
                findings.append(
                    Finding(
                        code: .unknownType, location: location,
                        message: "\(what) on \(path(of: position)) filters '\(type)', which no node \(verb) (declared: \((domain == .event ? events : errors).sorted().joined(separator: ", ")))"))
            }
        }
        for responder in entry.responders {
            judge(responder.filter, responder.kind.domain, "#\(responder.index) \(responder.kind.rawValue)", responder.location)
        }
        return findings
    }
}

extension Hierarchy {
    /// The static checks of `luahier check` over the tree as it stands.
    public func check() -> [Finding] {
        describeTree().check()
    }
}
