/// How much a dispatch records about itself.
public enum TraceLevel: String, Sendable, CaseIterable {
    case off
    /// Every responder call: node, responder, input type, result.
    case path
    /// As `path`, plus the value before and after each replacement.
    case full
}

/// How a dispatch ended, with the final value as the scripting side holds it.
struct DispatchResult {
    var status: Outcome.Status
    var message: Message
    /// The path of the node whose responder handled it, as it was when the dispatch began.
    var by: String?
    var responder: ResponderInfo?
    /// The steps, made Swift values when first read (held, and charged, while the trace is).
    var trace: DispatchTrace?
    /// The origin's path, as it was when the dispatch began.
    var at: String
    /// How many nodes the chain had: the host's work, which Lua hosts charge for.
    var hops = 0
    /// The recovery option chosen for an alert that a `handleAlertErrors` handled.
    var choice: String?
    /// An interrupt (SIGINT) ended it: the host is stopping every script, so it was not
    /// answered.
    var interrupted = false
    /// The chain was cut (its top was not the root) when the dispatch began: an error it
    /// ends with never reaches the root, so the presenter sees it only if the policy says so.
    /// Read from the snapshot, never from the tree at the end, which the responders may
    /// have changed. No default: every result says it.
    var chainCut: Bool
    /// Observed with tracing on, for a dispatch a responder started: which step of the
    /// enclosing dispatch's trace that responder's is (0-based).
    var enclosingStep: Int?

    var outcome: Outcome {
        Outcome(
            status: status, kind: message.domain, value: message.describedValue(),
            by: by, responder: responder, trace: trace?.steps, at: at, choice: choice,
            enclosingStep: enclosingStep)
    }
}

/// What runs dispatches along plans: the walk that applies contract §4's rules to each responder
/// of a chain snapshot (for a Lua-hosted hierarchy, LuaEngine.swift and the C engine it drives).
protocol DispatchEngine: AnyObject {
    /// Dispatches `message` from `origin` inside the running budget. Throws when it would nest
    /// past the depth limit.
    func dispatch(_ message: consuming Message, at origin: Node) throws(DispatchDepthExceeded) -> DispatchResult
    /// The dispatcher's settings changed (the depth limit, whether errors are presented or
    /// dispatches observed).
    func settingsChanged()
}

/// A hierarchy's dispatch settings and what happens around a dispatch (contract §2, §4–6): the
/// chain snapshot it runs along (`plan(from:)`), nesting, presenting unhandled errors, safety
/// warnings, alerts. Knows nodes and responders, nothing of Lua: the dispatches themselves run
/// in the engine, which asks this for each of these.
final class Dispatcher {
    let root: Node
    /// Runs the dispatches (set by the hierarchy once its host is ready).
    unowned(unsafe) var engine: (any DispatchEngine)! { didSet { engine?.settingsChanged() } }
    /// Kept within `depthLimits` by whoever sets it (Hierarchy).
    var depthLimit = 100 { didSet { engine?.settingsChanged() } }

    /// The nesting limits the host can honour. Each nested dispatch from Lua costs one level
    /// of Lua's C stack (the engine's protected call of its walk), which stops at 200 levels
    /// with "C stack overflow"; the entry's own call and a message handler take a few more.
    /// At 180 the limit is always what is reached first on a plain chain of nested
    /// dispatches, with a margin for the levels a script's own `pcall`s add.
    static let depthLimits = 1...180
    // The settings a `ChainPlan` depends on count as chain changes.
    var traceLevel = TraceLevel.off { didSet { root.tree.noteChainChange() } }
    var safety = SafetyLevel.relaxed { didSet { root.tree.noteChainChange() } }
    var detachedPolicy = DetachedPolicy.drop
    /// Receives relaxed-safety warnings, each (type, domain, node) once.
    var onSafetyWarning: ((SafetyWarning) -> Void)?
    private var warned: Set<SafetyWarning> = []
    /// What `warned` costs against the memory cap.
    private var warnedCharge: MemoryCharge?
    /// Receives errors that pass the root unhandled.
    var presenter: ((PresentedError) -> Void)? { didSet { engine?.settingsChanged() } }
    /// The shallowest nesting depth whose unhandled errors go to the presenter: 1, all of them;
    /// 2 where the caller reports the top-level dispatch's end itself (a `dispatch` line's
    /// outcome is its own), so describing it for the presenter would be work for nothing.
    var presentsFromDepth = 1 { didSet { engine?.settingsChanged() } }
    /// Whether the host is stopping every script (an interrupt): an error that passes the
    /// root then is not presented; the entry that ends says so once.
    var isStopping: () -> Bool = { false }
    /// Shows alerts that `handleAlertErrors` handled; may return the host's recovery choice.
    var alertPresenter: ((Alert) -> String?)?
    /// Sees every finished dispatch (nested ones too), e.g. to print traces.
    var observer: ((DispatchResult, _ depth: Int) -> Void)? { didSet { engine?.settingsChanged() } }
    /// Sees every subscription a publish calls, before it is called (tools: test coverage).
    var deliveryObserver: ((PublishDelivery) -> Void)?
    /// Sees each error a subscriber raised, before it is reported at its node: the host notes
    /// it among the rules' failures (`RuleFailures`), as the walk does a responder's.
    var subscriberRaised: ((Message) -> Void)?
    /// How many dispatches and publishes are under way, nested: at a fixed address, so the
    /// engine's C driver counts its dispatches in the same place.
    let depthCounter: UnsafeMutablePointer<Int> = {
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        return counter
    }()
    var depth: Int { depthCounter.pointee }

    init(root: Node) {
        self.root = root
    }

    deinit {
        depthCounter.deallocate()
    }

    /// One nesting level more (a dispatch or a publish), refused past the limit (contract §4).
    func enterNesting() throws(DispatchDepthExceeded) {
        guard depth < depthLimit else { throw DispatchDepthExceeded(limit: depthLimit) }
        depthCounter.pointee += 1
    }

    func leaveNesting() { depthCounter.pointee -= 1 }

    /// Dispatches `message` from `origin` (contract §4–5), inside the running budget.
    func dispatch(_ message: consuming Message, at origin: Node) throws(DispatchDepthExceeded) -> DispatchResult {
        try engine.dispatch(message, at: origin)
    }

    /// The chain snapshot a dispatch from `origin` runs along, as the tree and the settings are
    /// now: safety arrivals only while declarations are checked.
    func plan(from origin: Node) -> ChainPlan {
        let checksSafety = safety != .disabled && root.tree.declaringNodes > 0
        return ChainPlan.make(
            from: origin, root: root, trace: traceLevel, checksSafety: checksSafety, meter: root.tree.meter)
    }

    /// The safety check as a value of `domain` and `type` arrives at a declaring node (contract
    /// §6): nil to go on (a relaxed warning is passed on first), or the `SafetyViolation`
    /// that replaces the value. `value` describes the value, for the violation.
    func arrive(
        at arrival: Arrival, node: () -> String, from origin: () -> String, domain: Domain, type: String,
        value: () -> Value
    ) -> Message? {
        switch SafetyCheck.verdict(level: safety, at: arrival, node: node, from: origin, domain: domain, type: type, value: value) {
        case .pass: return nil
        case .warn(let warning):
            warn(warning)
            return nil
        case .replace(let violation): return violation
        }
    }

    /// Shows a handled alert and settles its recovery option: the responder's choice, else
    /// the host's (if it is one of the options), else none.
    func resolve(_ alert: Alert) -> String? {
        let hostChoice = alertPresenter?(alert)
        if let choice = alert.scriptChoice { return choice }
        guard let hostChoice, alert.recovery.contains(hostChoice) else { return nil }
        return hostChoice
    }

    /// Passes a warning on, the first time this type passes this node undeclared.
    private func warn(_ warning: SafetyWarning) {
        var key = warning
        key.reportedAt = ""
        key.declared = []
        // Bounded: a stream of ever-new types must not grow it without end.
        if warned.count >= 10_000 {
            warned.removeAll()
            warnedCharge = nil
        }
        guard !warned.contains(key) else { return }
        // What the set keeps is charged to the memory cap: a refusal (which trips the running
        // budget) keeps nothing and warns no more.
        if warnedCharge == nil { warnedCharge = MemoryCharge(meter: root.tree.meter) }
        let cost = 128 + MemoryCost.string(key.type) + MemoryCost.string(key.node) + MemoryCost.string(key.declaredAt)
        guard warnedCharge!.add(cost) else { return }
        warned.insert(key)
        onSafetyWarning?(warning)
    }

    /// Hands an unhandled error to the presenter. One from a detached subtree (a cut chain)
    /// goes only when the policy says so, marked as such (contract §2). `chainCut` is how the
    /// dispatch's snapshot found the chain.
    func present(_ error: Message, reportedAt origin: String, chainCut: Bool) {
        // An interrupt is not the script's error: it ends the whole entry, which says so once.
        guard let presenter, depth == 0 || depth >= presentsFromDepth, !isStopping() else { return }
        if chainCut && detachedPolicy == .drop { return }
        var presented = PresentedError(error: error.describedValue(bounded: true), reportedAt: origin, detached: chainCut)
        presented.nestingDepth = depth
        presenter(presented)
    }
}

extension Message {
    /// A `ResponderContractError` for a responder of `kind` at `location` that returned what
    /// `got` describes; `options`, for an alert responder, the recovery options it had.
    static func contractError(_ kind: ResponderKind, at location: String, returned got: String, options: [String]? = nil) -> Message {
        .hostError(
            "ResponderContractError",
            "\(kind.rawValue) responder at \(location) returned \(got); expected \(kind.expectedReturn)"
                + (options.map { " (" + ($0.isEmpty ? "it has none" : $0.joined(separator: ", ")) + ")" } ?? ""),
            where: location,
            ["responder": .string(kind.rawValue)])
    }
}
