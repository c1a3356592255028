/// `luahier explain` without `--run` (contract §9): which responders could see a value sent at a
/// node, in the order they would be offered it, and why each other one would not. Nothing
/// runs: it reads the chain plan a dispatch from that node would run (ChainPlan, the one
/// place the chain's order and the safety check's arrivals are decided) and follows it the
/// way the walk does, knowing only the value's type. What a responder's code decides is
/// said, not guessed: a `receive` may answer either way, a `transform` returns what it
/// returns, and any responder's code may raise or break its contract, which sends an error
/// of any type on from the next responder (contract §4). So `not offered` is given only
/// where no run can offer the value.
public struct Explanation: Sendable {
    /// Whether a responder would be offered the value.
    public enum Verdict: String, Sendable {
        /// It would be offered the value.
        case offered
        /// It would be, depending on what a responder before it returns.
        case maybe
        /// It would not be (`reason` says why).
        case notOffered
    }

    /// One responder of the chain, or a safety check as the value arrives at a declaring node.
    public struct Step: Sendable, Hashable {
        /// The node's path; one longer than 512 bytes is shown as "…" and its last names
        /// (an explanation names every step's node: whole paths would make one of a deep
        /// chain as large as the square of its depth).
        public var node: String
        /// Its position on the node; nil for a safety check.
        public var index: Int?
        /// The responder kind, or `safety`.
        public var kind: String
        /// The filter's types (empty: any); for a safety check, what may pass there.
        public var filter: [String]
        /// Where its code is, `file:line`; for a safety check, where the node's declaration was made.
        public var location: String
        /// Whether it would be offered the value.
        public var verdict: Verdict
        /// One word: `filter`, `domain`, `unreachable`, `cut chain` (not offered); `decides`,
        /// `handles`, `replaces`, `catches`, `alert` (offered); `raised` (maybe: only an error
        /// a responder before raises reaches it), `caught` (maybe: only an event a
        /// `catchError` before makes of such an error reaches it); `passes`, `warns`,
        /// `refuses`, `unchecked` (a safety check).
        public var reason: String
        /// Why, in a sentence for a person.
        public var detail: String
    }

    /// Whether the value is an event or an error.
    public var domain: Domain
    /// The value's type.
    public var type: String
    /// The path of the node the value would be sent at.
    public var at: String
    /// The hierarchy's safety level: what the safety checks on the way would do.
    public var safety: SafetyLevel
    /// The chain's responders and safety checks, in the order the value would meet them.
    public var steps: [Step]
    /// How the dispatch would end, as far as can be told without running it.
    public var ending: String
}

extension Hierarchy {
    /// Explains a dispatch of a value of `domain` and `type` from `node`, without running it.
    public func explain(_ domain: Domain, type: String, at node: Node) -> Explanation {
        let plan = ChainPlan.make(
            from: node, root: root, trace: .off, checksSafety: root.tree.declaringNodes > 0)
        var walk = ExplainWalk(
            domain: domain, type: type, safety: safety, detachedPolicy: detachedPolicy, plan: plan)
        for entry in Self.merged(plan) { walk.visit(entry) }
        if plan.detached {
            // The chain ends at the cut: the tree above it (the root's responders) never sees it.
            for (offset, responder) in root.responders.enumerated() {
                walk.steps.append(
                    Explanation.Step(
                        node: "/", index: offset + 1, kind: responder.kind.rawValue, filter: responder.filter.typeNames,
                        location: responder.location, verdict: .notOffered, reason: "cut chain",
                        detail: "the chain is cut: \(plan.origin)'s subtree was removed from the tree"))
            }
        }
        return Explanation(
            domain: domain, type: type, at: plan.origin, safety: safety, steps: walk.steps,
            ending: walk.ending(detached: plan.detached, top: node.top.path))
    }

    /// The node at `path`: one in the tree (`/a/b`), or one alive in a removed subtree, by
    /// the relative path such a node has (`tab-2/editor`; the most recently removed subtree
    /// of that name).
    public func explainableNode(at path: String) throws(TreeError) -> Node? {
        if path.hasPrefix("/") { return try node(at: path) }
        let names = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let first = names.first, !names.contains(where: \.isEmpty) else { throw .invalidPath(path) }
        for candidate in root.tree.removedTops.reversed() {
            guard let top = candidate.node, top.parent == nil, top.name == first else { continue }
            var node = top
            for name in names.dropFirst() {
                guard let child = node.existingChild(name) else { return nil }
                node = child
            }
            return node
        }
        return nil
    }

    /// Both domains' entries in chain order, each declaring node's arrival once.
    private static func merged(_ plan: ChainPlan) -> [PlanEntry] {
        var result: [PlanEntry] = []
        var events = plan.events[...], errors = plan.errors[...]
        while let next = [events.first, errors.first].compactMap({ $0 }).min(by: { $0.comes(before: $1, orWith: false) }) {
            if let event = events.first, event.link == next.link, event.offset == next.offset { events.removeFirst() }
            if let error = errors.first, error.link == next.link, error.offset == next.offset { errors.removeFirst() }
            result.append(next)
        }
        return result
    }
}

/// The static walk: what is known of the value as it goes up the plan.
private struct ExplainWalk {
    var domain: Domain
    /// The value's type, while it is known (a catch makes an event only its code knows).
    var type: String?
    let safety: SafetyLevel
    let detachedPolicy: DetachedPolicy
    let plan: ChainPlan
    var origin: String { plan.origin }
    var steps: [Explanation.Step] = []
    /// Responders before, in this domain, that may have replaced the value.
    var mayReplace: [String] = []
    /// The responder that ends the dispatch for sure, once one does (unless it raises).
    var handledBy: Explanation.Step?
    /// Responders before whose code may raise or break its contract: the error that makes
    /// goes on from the next responder whatever is known of the value above, so from the
    /// first of them on, every error responder may be offered an error of any type.
    var raisers = Responders()
    /// `catchError`s before that may turn an error the walk does not follow (a raised one,
    /// or one a responder before may have replaced) into an event of any type.
    var catchers = Responders()

    /// Responders named in a detail: how many, the first and the nearest, not all of them (a
    /// chain may be as long as the tree is deep).
    struct Responders {
        var count = 0
        var first: String?
        var last: String?
        var isEmpty: Bool { count == 0 }

        mutating func append(_ name: String) {
            count += 1
            if first == nil { first = name }
            last = name
        }
    }

    init(domain: Domain, type: String, safety: SafetyLevel, detachedPolicy: DetachedPolicy, plan: ChainPlan) {
        self.domain = domain
        self.type = type
        self.safety = safety
        self.detachedPolicy = detachedPolicy
        self.plan = plan
    }

    /// Who may have replaced the value: how many, and the nearest.
    private var replacers: String {
        let count = mayReplace.count
        return "\(count == 1 ? "one responder" : "\(count) responders") before may replace it, the nearest \(mayReplace.last!)"
    }

    /// How many of `names` there are, and the nearest.
    private static func nearest(_ names: Responders, _ what: String) -> String {
        "\(names.count == 1 ? "one \(what)" : "\(names.count) \(what)s") before may, the nearest \(names.last!)"
    }

    private var valueText: String { "the \(domain.rawValue) \(type ?? "(made by a responder)")" }

    mutating func visit(_ entry: PlanEntry) {
        switch entry.role {
        case .arrival(let arrival): arrive(at: arrival, entry)
        case .responder(let responder): offer(to: responder, entry)
        }
    }

    private mutating func arrive(at arrival: Arrival, _ entry: PlanEntry) {
        guard let location = arrival.declarations.location(domain), handledBy == nil else { return }
        let listed = arrival.allowedTypes(domain, limit: SafetyCheck.declaredListed)
        let allowed = listed.names + (listed.more > 0 ? ["… \(listed.more) more"] : [])
        let node = plan.shownPath(of: entry.node)
        var step = Explanation.Step(
            node: node, index: nil, kind: "safety", filter: allowed, location: location, verdict: .offered,
            reason: "passes", detail: "")
        let verb = domain == .event ? "triggers" : "reports"
        guard let type else {
            step.verdict = .maybe
            step.reason = "unchecked"
            step.detail = "checked against {\(allowed.joined(separator: ", "))} (\(verb)) once the value is known (hier.safety = \(safety.rawValue))"
            steps.append(step)
            return
        }
        // SafetyCheck says what the check does: the same judgement the dispatch makes.
        switch SafetyCheck.verdict(level: safety, at: arrival, node: { node }, from: { origin }, domain: domain, type: type, value: { .null }) {
        case .pass:
            step.detail = safety == .disabled
                ? "not checked (hier.safety = disabled)"
                : "\(type) is declared (\(verb) {\(allowed.joined(separator: ", "))})"
            step.reason = safety == .disabled ? "unchecked" : "passes"
        case .warn:
            step.reason = "warns"
            step.detail = "\(type) is not declared (\(verb) {\(allowed.joined(separator: ", "))}): hier.safety = relaxed warns once and lets it pass"
        case .replace(let violation):
            step.reason = "refuses"
            step.detail = "\(type) is not declared (\(verb) {\(allowed.joined(separator: ", "))}): hier.safety = strict replaces it with a \(violation.type) error, which goes on from \(node)'s first error responder"
            domain = .error
            self.type = violation.type
            mayReplace = []
        }
        steps.append(step)
    }

    private mutating func offer(to responder: Responder, _ entry: PlanEntry) {
        var step = Explanation.Step(
            node: plan.shownPath(of: entry.node), index: Int(entry.offset) + 1, kind: responder.kind.rawValue,
            filter: responder.filter.typeNames, location: responder.location, verdict: .offered, reason: "", detail: "")
        let name = "\(step.node) #\(step.index!) \(responder.kind.rawValue) (\(responder.location))"
        judge(responder, name: name, &step)
        if step.verdict == .notOffered { considerDetours(responder.kind, &step) }
        if step.verdict != .notOffered {
            if responder.kind == .catchError, step.verdict == .maybe { catchers.append(name) }
            if responder.mayRaise { raisers.append(name) }
        }
        steps.append(step)
    }

    /// A `not offered` the followed value gives, turned into `maybe` where a value the walk
    /// does not follow (a raised error, or an event a catch made of one) can still come.
    private func considerDetours(_ kind: ResponderKind, _ step: inout Explanation.Step) {
        let takes = step.filter.isEmpty ? "an \(kind.domain.rawValue)" : "an \(kind.domain.rawValue) of one of those types"
        switch kind.domain {
        case .error where !raisers.isEmpty:
            step.verdict = .maybe
            step.reason = "raised"
            let raises = step.filter.isEmpty ? "raises an error or breaks its contract" : "raises \(takes)"
            step.detail += ", but it is offered if a responder before \(raises) (\(Self.nearest(raisers, "responder")))"
        case .event where !catchers.isEmpty:
            step.verdict = .maybe
            step.reason = "caught"
            step.detail += ", but it is offered if a catchError before turns an error into \(takes) (\(Self.nearest(catchers, "catchError")))"
        default:
            break
        }
    }

    /// The verdict the followed value gives, and what offering it changes of that value.
    private mutating func judge(_ responder: Responder, name: String, _ step: inout Explanation.Step) {
        if let handledBy {
            step.verdict = .notOffered
            step.reason = "unreachable"
            step.detail = "\(handledBy.node) #\(handledBy.index ?? 0) \(handledBy.kind) (\(handledBy.location)) handles it first"
            return
        }
        let kind = responder.kind
        guard kind.domain == domain else {
            step.verdict = .notOffered
            step.reason = "domain"
            step.detail = "it takes \(kind.domain.rawValue)s; the value is an \(domain.rawValue) here"
            return
        }
        let names = responder.filter.typeNames
        var ifStill = ""
        if !names.isEmpty {
            let list = names.joined(separator: ", ")
            if let type, !names.contains(type) {
                if mayReplace.isEmpty {
                    step.verdict = .notOffered
                    step.reason = "filter"
                    step.detail = "it takes only {\(list)}; the value is \(type)"
                    return
                }
                step.verdict = .maybe
                step.reason = "filter"
                step.detail = "it takes only {\(list)}: offered if a responder before replaces \(valueText) with one of those (\(replacers))"
                return
            }
            if type == nil {
                step.verdict = .maybe
                step.reason = "filter"
                step.detail = "it takes only {\(list)}: offered if \(valueText) is one of those"
                return
            }
            if !mayReplace.isEmpty {
                step.verdict = .maybe
                ifStill = ", if the value is still \(type!) (\(replacers))"
            }
        }
        if ifStill.isEmpty, responder.declinesWhatDoesNotDecode {
            step.verdict = .maybe
            ifStill = ", if the value decodes as its Swift type"
        }
        switch kind {
        case .handleEvent, .handleError:
            step.reason = "handles"
            step.detail = "it handles \(valueText): the dispatch ends here" + ifStill
            if ifStill.isEmpty { handledBy = step }
        case .handleAlertErrors:
            step.reason = "alert"
            step.detail = "it handles the error if it is alertable (a string title); other errors pass it" + ifStill
        case .receiveEvent, .receiveError:
            step.reason = "decides"
            step.detail = "its code decides: \"handled\" ends the dispatch, \"notHandled\" passes it on, a value replaces it" + ifStill
            mayReplace.append(name)
        case .transformEvent, .transformError:
            step.reason = "replaces"
            step.detail = "its code returns the \(domain.rawValue) that goes on in its place" + ifStill
            mayReplace.append(name)
        case .catchError:
            step.reason = "catches"
            step.detail = "it turns the error into the event its code returns, which goes on as an event" + ifStill
            if ifStill.isEmpty {
                domain = .event
                type = nil
                mayReplace = []
            }
        }
    }

    func ending(detached: Bool, top: String) -> String {
        let followed = ending(of: domain, handledBy: handledBy, detached: detached, top: top)
        guard let first = raisers.first else { return followed }
        let raised = ending(of: .error, handledBy: nil, detached: detached, top: top)
        let raising = "if a responder from \(first) on raises an error or breaks its contract"
        if raised == followed { return "\(followed); likewise \(raising)" }
        return "\(followed); \(raising), that error goes on from the next responder, and \(raised)"
    }

    /// How a value of `domain` ends: handled by `handledBy` if one handles it for sure.
    private func ending(of domain: Domain, handledBy: Explanation.Step?, detached: Bool, top: String) -> String {
        if let handledBy {
            return "handled by \(handledBy.node) #\(handledBy.index ?? 0) \(handledBy.kind) (\(handledBy.location)), unless a responder before it ends the dispatch"
        }
        if detached {
            let presenter = domain == .error
                ? (detachedPolicy == .drop
                    ? " (hier.detached = drop: nothing reaches the presenter)"
                    : " (hier.detached = presenter: the presenter sees it, marked detached)")
                : ""
            return "if no responder handles it: detached at \(top), the top of a removed subtree\(presenter)"
        }
        return domain == .error
            ? "if no responder handles it: unhandled at /, and the error reaches the presenter"
            : "if no responder handles it: unhandled at /"
    }
}

extension Explanation {
    /// The explanation as text, one line per responder, grouped by node.
    public func lines() -> [String] {
        var lines = ["\(domain.rawValue) \(type) at \(at) (hier.safety = \(safety.rawValue))"]
        var currentNode: String?
        for step in steps {
            if step.node != currentNode {
                currentNode = step.node
                lines.append(PrintableText.field(step.node))
            }
            let filter = step.filter.isEmpty ? "any" : step.filter.joined(separator: ", ")
            let head = step.index.map { "#\($0) \(step.kind) \(filter)" } ?? "safety \(filter)"
            let verdict: String
            switch step.verdict {
            case _ where step.index == nil: verdict = "safety \(step.reason)"
            case .offered: verdict = "offered"
            case .maybe: verdict = "maybe"
            case .notOffered: verdict = "not offered (\(step.reason))"
            }
            lines.append(PrintableText.field("  \(head)  \(step.location)"))
            lines.append(PrintableText.field("      \(verdict): \(step.detail)", limit: 4000))
        }
        if steps.isEmpty { lines.append("(no responder on the chain)") }
        lines.append(PrintableText.field("ends: \(ending)", limit: 4000))
        return lines
    }

    /// The explanation as a JSON value (format version 1).
    public var json: Value {
        .map([
            "version": 1,
            "kind": .string(domain.rawValue), "type": .string(type), "at": .string(at), "safety": .string(safety.rawValue),
            "chain": .array(steps.map { step in
                var object: [String: Value] = [
                    "node": .string(step.node), "kind": .string(step.kind), "filter": .array(step.filter.map(Value.string)),
                    "where": .string(step.location), "verdict": .string(step.verdict.rawValue), "reason": .string(step.reason),
                    "detail": .string(step.detail),
                ]
                if let index = step.index { object["index"] = .int(Int64(index)) }
                return .map(object)
            }),
            "ends": .string(ending),
        ])
    }
}

extension Responder {
    /// Whether calling it runs code that may raise or break its contract: every Lua function
    /// and Swift closure; only the host's own alert body (`handleAlertErrors()`) cannot.
    fileprivate var mayRaise: Bool { !(body is HostChoiceBody) }

    /// Whether a value its filter lets through may still pass it untouched: a typed Swift
    /// responder is offered only values that decode as its type.
    fileprivate var declinesWhatDoesNotDecode: Bool { (body as? SwiftResponderBody)?.isTyped == true }
}
