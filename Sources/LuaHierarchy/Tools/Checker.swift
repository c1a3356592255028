/// One thing `luahier check` found: `file:line: (code) message`.
public struct Finding: Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem a finding is.
    public enum Code: String, Sendable, CaseIterable {
        /// A declared type with no responder naming it at the declaring node or above.
        case requireExplicitResponders
        /// A responder no value can reach: an untyped `handle*` before it takes them all.
        case unreachableResponder
        /// A filter naming a type the tree's declarations do not know.
        case unknownType
    }

    /// What kind of problem it is.
    public var code: Code
    /// Where to fix it, `file:line`.
    public var location: String
    /// What is wrong, for a person.
    public var message: String

    /// `file:line: (code) message`.
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
        // Made once: each finding names some of the declared types.
        let declared = DeclaredTypes(events: declaredEvents, errors: declaredErrors)
        let named = namedTypes(unreachable: unreachable)
        let missing = missingTypes(named: named)
        for position in entries.indices {
            findings += missingResponders(for: position, missing: missing[position])
            findings += unreachable[position].map(\.finding)
            findings += unknownTypes(on: position, declared: declared)
        }
        return findings
    }

    /// The declared types of each domain, what counts as known, and how messages list them.
    struct DeclaredTypes {
        let events: Set<String>, errors: Set<String>
        let knownErrors: Set<String>
        let eventList: String, errorList: String

        init(events: Set<String>, errors: Set<String>) {
            self.events = events
            self.errors = errors
            knownErrors = errors.union(TreeDescription.hostErrorTypes)
            eventList = TreeDescription.list(events.sorted())
            errorList = TreeDescription.list(errors.sorted())
        }
    }

    /// `requireExplicitResponders`: each declared type needs a responder of its domain whose
    /// filter names it, on the declaring node or an ancestor. Untyped responders do not
    /// count: the point of declaring is that someone answers for the type by name; nor do
    /// responders that can never run.
    private func missingResponders(for position: Int, missing: [(Domain, String, String)]) -> [Finding] {
        guard !missing.isEmpty else { return [] }
        let path = messagePath(of: position)
        return missing.map { domain, type, location in
            let verb = domain == .event ? "triggers" : "reports"
            return Finding(
                code: .requireExplicitResponders, location: location,
                message: "\(path) \(verb) '\(type)', but no \(domain.rawValue) responder that can run at \(path) or above names it in its filter")
        }
    }

    /// Per node, its declared types (domain, type, where declared) that no responder on it or
    /// above names. One walk in preorder, keeping a count of the names along the path from
    /// the top: each lookup is one, so a deep chain of declaring nodes costs no walk up per
    /// type (that was the square of the depth).
    private func missingTypes(named: [[Domain: Set<String>]]) -> [[(Domain, String, String)]] {
        var counts: [Domain: [String: Int]] = [.event: [:], .error: [:]]
        var path: [Int] = []
        var result = [[(Domain, String, String)]](repeating: [], count: entries.count)
        func leave(_ position: Int) {
            for (domain, names) in named[position] {
                for name in names {
                    let left = counts[domain]![name]! - 1
                    counts[domain]![name] = left == 0 ? nil : left
                }
            }
        }
        for (position, entry) in entries.enumerated() {
            while let last = path.last, last != entry.parent {
                leave(last)
                path.removeLast()
            }
            path.append(position)
            for (domain, names) in named[position] {
                for name in names { counts[domain]![name, default: 0] += 1 }
            }
            for (domain, declared) in [(Domain.event, entry.triggers), (.error, entry.reports)] {
                for (type, location) in declared where counts[domain]![type] == nil {
                    result[position].append((domain, type, location))
                }
            }
        }
        return result
    }

    /// The path of the entry at `position` as a message shows it: at most its last
    /// `PathText.shownBytes` bytes, after "…" (one finding per node of a deep chain would make the
    /// findings as large as the square of its depth). Walks up no further than it shows.
    func messagePath(of position: Int) -> String {
        var names: [String] = []
        var length = 0
        var current = position
        while let parent = entries[current].parent {
            if length > PathText.shownBytes { return "…/" + names.reversed().joined(separator: "/") }
            names.append(entries[current].name)
            length += entries[current].name.utf8.count + 1
            current = parent
        }
        let base = topPath == "/" ? "" : topPath
        return names.isEmpty ? topPath : base + "/" + names.reversed().joined(separator: "/")
    }

    /// Per node and domain, the type names its responders that can run name in their filters
    /// (made once per check: looking a type up is then one set lookup per ancestor).
    private func namedTypes(unreachable: [[(index: Int, finding: Finding)]]) -> [[Domain: Set<String>]] {
        entries.indices.map { position in
            let dead = Set(unreachable[position].map(\.index))
            var named: [Domain: Set<String>] = [:]
            for responder in entries[position].responders where !dead.contains(responder.index) {
                named[responder.kind.domain, default: []].formUnion(responder.filter)
            }
            return named
        }
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
                        message: "#\(responder.index) \(responder.kind.rawValue) on \(messagePath(of: position)) never runs: #\(stopper.index) \(stopper.kind.rawValue) (\(stopper.location)) takes every \(domain.rawValue) before it")))
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
    private func unknownTypes(on position: Int, declared: DeclaredTypes) -> [Finding] {
        let entry = entries[position]
        var findings: [Finding] = []
        func judge(_ types: [String], _ domain: Domain, _ what: String, _ location: String) {
            let known = domain == .event ? declared.events : declared.knownErrors
            guard !(domain == .event ? declared.events : declared.errors).isEmpty else { return }
            for type in types where !known.contains(type) {
                let verb = domain == .event ? "triggers" : "reports"
                findings.append(
                    Finding(
                        code: .unknownType, location: location,
                        message: "\(what) on \(messagePath(of: position)) filters '\(type)', which no node \(verb) (declared: \(domain == .event ? declared.eventList : declared.errorList))"))
            }
        }
        for responder in entry.responders {
            judge(responder.filter, responder.kind.domain, "#\(responder.index) \(responder.kind.rawValue)", responder.location)
        }
        return findings
    }
}

extension TreeDescription {
    /// Names for a message, at most 10 of them: a finding is one line however many types the
    /// rules declare (8,000 declared types made 8,000 findings of 8,000 names each).
    static func list(_ names: [String]) -> String {
        let shown = names.prefix(10).joined(separator: ", ")
        return names.count > 10 ? shown + ", … \(names.count - 10) more" : shown
    }
}

extension Hierarchy {
    /// The static checks of `luahier check` over the tree as it stands.
    public func check() -> [Finding] {
        describeTree().check()
    }

}
