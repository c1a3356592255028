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
    var handledBy: Node?
    var responder: ResponderInfo?
    /// The steps, with what they cost against the memory cap (held while the trace is).
    var trace: TraceRecord?
    var origin: Node
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
    /// have changed: an `unhandled` error is always presented. No default: every result
    /// says it.
    var chainCut: Bool

    var outcome: Outcome {
        Outcome(
            status: status, kind: message.domain, value: message.describedValue(),
            by: handledBy?.path, responder: responder, trace: trace?.steps, at: origin.path, choice: choice)
    }
}

/// One node of a dispatch's chain snapshot, with its responders as they were at the start.
struct ChainLink {
    let node: Node
    let responders: [Responder]
}

/// Walks a value up the chain (SPEC §4–5). Knows nodes and responders, nothing of Lua.
///
/// The rules, in the order the code applies them:
/// - the chain (each node up to the top, with its responders) is snapshotted at the start:
///   responders added meanwhile wait for the next dispatch, removed ones are skipped;
/// - a responder sees a value of its domain whose type passes its filter;
/// - whatever it produces (replacement, caught event, raised or contract error) continues at
///   the next responder of the same node: the position rule;
/// - an error that replaces an error gets `cause`; any produced error gets `where`;
/// - a tripped host limit (instructions, time, memory) ends the dispatch at once, unhandled.
final class Dispatcher {
    let root: Node
    /// Kept within `depthLimits` by whoever sets it (Hierarchy).
    var depthLimit = 100

    /// The nesting limits the host can honour. Each nested dispatch from Lua costs one level
    /// of Lua's C stack (a protected call from the host), which stops at 200 levels with
    /// "C stack overflow"; the entry's own call, a runner's loop and a message handler take
    /// a few more. At 180 the limit is always what is reached first on a plain chain of
    /// nested dispatches, with a margin for the levels a script's own `pcall`s add.
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
    var presenter: ((PresentedError) -> Void)?
    /// Whether the host is stopping every script (an interrupt): an error that passes the
    /// root then is not presented; the entry that ends says so once.
    var isStopping: () -> Bool = { false }
    /// Shows alerts that `handleAlertErrors` handled; may return the host's recovery choice.
    var alertPresenter: ((Alert) -> String?)?
    /// Calls runs of Lua responders in one go (ResponderRun.swift); nil: one call each.
    var runner: (any ResponderRunner)?
    /// The runner, for a top-level dispatch only: a run costs Lua one more C-stack level (its
    /// C loop), and Lua allows 200, so none in nested dispatches keeps the nesting limit (100)
    /// the limit that is reached.
    private var topLevelRunner: (any ResponderRunner)? { depth > 1 ? nil : runner }
    /// Sees every finished dispatch (nested ones too), e.g. to print traces.
    var observer: ((DispatchResult, _ depth: Int) -> Void)? { didSet { root.tree.noteChainChange() } }
    /// How many dispatches and publishes are under way, nested: at a fixed address, so a
    /// runner that starts top-level dispatches by itself (LuaFastPath.swift) can count too.
    let depthCounter: UnsafeMutablePointer<Int> = {
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        return counter
    }()
    var depth: Int { depthCounter.pointee }
    @exclusivity(unchecked) private var chainBuffers: [[ChainLink]] = []

    /// The run being gathered: runs happen only in top-level dispatches, so one buffer
    /// serves (a closure-scoped buffer would box the loop's variables).
    private let runTokens = UnsafeMutablePointer<Int32>.allocate(capacity: Dispatcher.runCapacity)
    private let runPositions = UnsafeMutablePointer<RunPosition>.allocate(capacity: Dispatcher.runCapacity)

    init(root: Node) {
        self.root = root
    }

    deinit {
        runTokens.deallocate()
        runPositions.deallocate()
        depthCounter.deallocate()
    }

    /// One nesting level more (a dispatch or a publish), refused past the limit (SPEC §4).
    func enterNesting() throws(DispatchDepthExceeded) {
        guard depth < depthLimit else { throw DispatchDepthExceeded(limit: depthLimit) }
        depthCounter.pointee += 1
    }

    func leaveNesting() { depthCounter.pointee -= 1 }

    func dispatch(_ initial: consuming Message, at origin: Node) throws(DispatchDepthExceeded) -> DispatchResult {
        try enterNesting()
        defer { leaveNesting() }

        let level = traceLevel
        let checksSafety = safety != .disabled && root.tree.declaringNodes > 0
        if level != .full && !checksSafety,
            let plan = keptPlans.plan(from: origin, root: root, traced: level == .path)
        {
            return walk(plan, from: initial, traced: level == .path)
        }
        // One chain buffer per nesting depth, reused: no allocation per dispatch. It is taken
        // out of `chainBuffers` while in use (nested dispatches then never copy it) and put
        // back emptied, so it keeps no node alive between dispatches.
        while chainBuffers.count < depth { chainBuffers.append([]) }
        var chain = chainBuffers[depth - 1]
        chainBuffers[depth - 1] = []
        defer {
            chain.removeAll(keepingCapacity: true)
            chainBuffers[depth - 1] = chain
        }
        var top = origin
        while true {
            chain.append(ChainLink(node: top, responders: top.responders))
            guard let parent = top.parent else { break }
            top = parent
        }
        let safetyCheck = checksSafety ? SafetyCheck(level: safety, origin: origin) : nil
        // Consecutive Lua receive responders go to the runner as one run. Not with full
        // tracing (it records the value around every call), nor while the safety check may
        // replace the value between nodes, nor in nested dispatches (`topLevelRunner`).
        let runner = level == .full || safetyCheck != nil ? nil : topLevelRunner
        return walk(
            chain, detached: top !== root, from: initial, at: origin, level: level,
            trace: level == .off ? nil : TraceRecord(meter: root.tree.meter),
            safetyCheck: safetyCheck, runner: runner, start: RunPosition(node: 0, offset: 0), after: nil)
    }

    /// Plans for dispatches started here (from Swift, or by Lua where the fast path does not
    /// apply), kept per origin.
    @exclusivity(unchecked) private var keptPlans = KeptPlans()
    /// How many dispatches went along a kept plan (for tests).
    private(set) var plannedWalks = 0
    /// How many plans are kept now (for tests).
    var keptPlanCount: Int { keptPlans.count }

    /// A dispatch along a kept plan: no chain to build. Untraced, the plan's responders of the
    /// value's domain are called here for as long as they are Swift or single-call `receive*`
    /// responders answering `notHandled`; at anything else (another kind, a Lua responder the
    /// runner calls in runs, any other answer) the general walk takes over at that responder.
    private func walk(_ plan: ChainPlan, from initial: consuming Message, traced: Bool) -> DispatchResult {
        plannedWalks &+= 1
        if traced {
            return walk(
                plan.links, detached: plan.detached, from: initial, at: plan.links[0].node, level: .path,
                trace: TraceRecord(meter: root.tree.meter),
                safetyCheck: nil, runner: topLevelRunner, start: RunPosition(node: 0, offset: 0), after: nil)
        }
        // Whether a runner calls Lua responders in runs: a flag, so the loop holds no copy of it.
        let runs = depth <= 1 && runner != nil
        var current = initial
        for entry in current.domain == .event ? plan.eventEntries : plan.errorEntries {
            // Whether the responder sees the value, and its answer if it is called here (nil:
            // the general walk calls it). A tuple: an enum of the three cases costs more per hop.
            let (sees, reply): (Bool, ResponderReply?) = entry.withResponder { responder in
                guard !responder.isRemoved, responder.matcher.matches(current.type) else { return (false, nil) }
                let kind = responder.kind
                guard (kind == .receiveEvent || kind == .receiveError) && (!runs || responder.runToken == 0)
                else { return (true, nil) }
                return (true, responder.body.call(with: &current, returning: kind.replacementDomain))
            }
            guard sees else { continue }
            if case .notHandled = reply { continue }
            let after = reply.map { ($0, entry.position) }
            return walk(
                plan.links, detached: plan.detached, from: current, at: plan.links[0].node, level: .off, trace: nil,
                safetyCheck: nil, runner: topLevelRunner, start: entry.position, after: after)
        }
        let present = current.domain == .error
        let result = DispatchResult(
            status: plan.detached ? .detached : .unhandled, message: consume current, handledBy: nil,
            responder: nil, trace: nil, origin: plan.links[0].node, hops: plan.links.count, chainCut: plan.detached)
        settle(result, present: present)
        return result
    }

    /// Whether a top-level dispatch may be walked by a runner of its own with a `ChainPlan`
    /// (LuaFastPath.swift): what such a walk skips (full-trace values, safety checks, the
    /// observer) must all be off. Path tracing is kept: the runner hands every traced
    /// dispatch back with the responders it called, and `resume` records them.
    var plansAllowed: Bool {
        traceLevel != .full && observer == nil && runner != nil
            && (safety == .disabled || root.tree.declaringNodes == 0)
    }

    /// Takes over a top-level event dispatch that a runner walked along `plan` by itself.
    /// The event entries in `passed` answered `notHandled`; then, if `reply` is given, the
    /// responder at its entry answered it, else the walk goes on at `start`. The dispatch
    /// keeps the settings it started with (those plans allow), whatever they are now.
    func resume(
        _ plan: ChainPlan, passed: [Int], reply: (ResponderReply, atEntry: Int)?, start: RunPosition,
        with message: Message
    ) throws(DispatchDepthExceeded) -> DispatchResult {
        try enterNesting()
        defer { leaveNesting() }
        var trace: TraceRecord?
        if plan.traced {
            trace = TraceRecord(meter: root.tree.meter)
            for index in passed {
                let entry = plan.eventEntries[index]
                let node = plan.links[Int(entry.position.node)].node
                trace!.append(step(node, Int(entry.position.offset), entry.responder, message.type, .notHandled, nil, nil))
            }
        }
        return walk(
            plan.links, detached: plan.detached, from: message, at: plan.links[0].node,
            level: plan.traced ? .path : .off, trace: trace, safetyCheck: nil, runner: topLevelRunner,
            start: start, after: reply.map { ($0.0, plan.eventEntries[$0.atEntry].position) })
    }

    /// Walks `initial` up `chain` from the cursor `start` (SPEC §4), first applying
    /// `after.reply`, the answer of the responder at `after.position`, if given.
    private func walk(
        _ chain: [ChainLink], detached: Bool, from initial: consuming Message, at origin: Node, level: TraceLevel,
        trace: TraceRecord?, safetyCheck: SafetyCheck?, runner: (any ResponderRunner)?, start: RunPosition,
        after: (reply: ResponderReply, position: RunPosition)?
    ) -> DispatchResult {
        var trace = trace
        var current = initial
        var safetyCheck = safetyCheck
        let changes = UnsafePointer(root.tree.chainChanges)

        let tokens = runTokens
        let positions = runPositions
        // The cursor: responder `offset` of chain entry `index`. A run is gathered as
        // the cursor moves and called when something else must happen first.
        var index = Int(start.node)
        var offset = Int(start.offset)
        var arrived = index - 1
        if let (reply, position) = after {
            let link = chain[Int(position.node)]
            let responder = link.responders[Int(position.offset)]
            if let end = apply(
                reply, of: responder, offset: Int(position.offset), at: link.node, input: current.type, before: nil,
                to: &current, trace: &trace, origin: origin, hops: chain.count, detached: detached)
            {
                return end
            }
            (index, offset) = (Int(position.node), Int(position.offset) + 1)
            arrived = index
        }
        var pending = 0
        var node = origin
        var responders: [Responder] = []
        var loaded = -1
        while true {
            if index < chain.count && index != loaded {
                node = chain[index].node
                responders = chain[index].responders
                loaded = index
            }
            // Arriving at a node (once, even one without responders): the safety check.
            if index < chain.count && index > arrived {
                arrived = index
                if safetyCheck != nil, let declarations = node.declarations {
                    switch safetyCheck!.arrive(at: node, declarations: declarations, with: current) {
                    case .pass: break
                    case .warn(let warning): warn(warning)
                    case .replace(let violation): current = violation
                    }
                }
            }
            if index < chain.count && offset >= responders.count {
                index += 1
                offset = 0
                continue
            }
            let atEnd = index == chain.count
            var single: Responder?
            if !atEnd {
                let responder = responders[offset]
                let kind = responder.kind
                guard !responder.isRemoved, kind.domain == current.domain,
                    responder.matcher.matches(current.type),
                    kind != .handleAlertErrors || current.isAlertable
                else {
                    offset += 1
                    continue
                }
                if runner != nil && responder.runToken != 0 {
                    tokens[pending] = responder.runToken
                    positions[pending] = RunPosition(node: Int32(index), offset: Int32(offset))
                    pending += 1
                    offset += 1
                    if pending < Self.runCapacity { continue }
                } else {
                    single = responder
                }
            }

            if pending > 0 {
                let count = pending
                pending = 0
                let inputType = current.type
                let result = runner!.callRun(
                    UnsafeBufferPointer(start: tokens, count: count), with: &current,
                    returning: current.domain, changes: changes
                ) { chain[Int(positions[$0].node)].responders[Int(positions[$0].offset)].location }
                let answered: Int
                switch result {
                case .continued(let called): answered = called
                case .stopped(let stoppedAt, _): answered = stoppedAt
                }
                if trace != nil {
                    for position in UnsafeBufferPointer(start: positions, count: answered) {
                        let link = chain[Int(position.node)]
                        let offset = Int(position.offset)
                        trace!.append(step(link.node, offset, link.responders[offset], inputType, .notHandled, nil, nil))
                    }
                }
                switch result {
                case .continued(let called) where called == count:
                    // The responder that ended the run was picked before the run was called,
                    // and the run may have removed it: look at it again.
                    if single != nil { continue }
                case .continued(let called):
                    // Registrations changed: go on after the last one called, checking again.
                    let last = positions[called - 1]
                    (index, offset) = (Int(last.node), Int(last.offset) + 1)
                    continue
                case .stopped(let stoppedAt, let reply):
                    let position = positions[stoppedAt]
                    let link = chain[Int(position.node)]
                    if let end = apply(
                        reply, of: link.responders[Int(position.offset)], offset: Int(position.offset),
                        at: link.node, input: inputType, before: nil, to: &current, trace: &trace,
                        origin: origin, hops: chain.count, detached: detached)
                    {
                        return end
                    }
                    (index, offset) = (Int(position.node), Int(position.offset) + 1)
                    continue
                }
            }
            if atEnd { break }
            guard let responder = single else { continue }

            let kind = responder.kind
            let inputType = current.type
            // Copied (and charged) only while the trace still records values.
            let before: Value? = level == .full ? trace?.copyBefore(current) : .none
            let reply =
                kind == .handleAlertErrors
                ? responder.body.callForChoice(with: &current)
                : responder.body.call(with: &current, returning: kind.replacementDomain)
            // The most common answer, without the general path's copies.
            if case .notHandled = reply, kind == .receiveEvent || kind == .receiveError {
                if trace != nil { trace!.append(step(node, offset, responder, inputType, .notHandled, nil, nil)) }
                offset += 1
                continue
            }
            if let end = apply(
                reply, of: responder, offset: offset, at: node, input: inputType, before: before,
                to: &current, trace: &trace, origin: origin, hops: chain.count, detached: detached)
            {
                return end
            }
            offset += 1
        }

        let result = DispatchResult(
            status: detached ? .detached : .unhandled, message: current, handledBy: nil,
            responder: nil, trace: trace, origin: origin, hops: chain.count, chainCut: detached)
        settle(result, present: result.message.domain == .error)
        return result
    }

    /// The most responders one run holds; a longer stretch is called as several runs.
    static let runCapacity = 32

    /// Applies what responder `offset` of `node` answered (SPEC §4): the dispatch's end, or
    /// nil to go on with the next responder, `current` replaced if the answer replaced it.
    private func apply(
        _ reply: ResponderReply, of responder: Responder, offset: Int, at node: Node, input inputType: String,
        before: Value?, to current: inout Message, trace: inout TraceRecord?, origin: Node, hops: Int, detached: Bool
    ) -> DispatchResult? {
        let kind = responder.kind
        var produced: Message
        var stepResult: TraceStep.Result
        switch (kind, reply) {
        case (_, .aborted(var error)):
            error.setIfAbsent("where", to: responder.location)
            if current.domain == .error { error.setIfAbsent("cause", to: current) }
            trace?.append(step(node, offset, responder, inputType, .raised(type: error.type), before, nil))
            let result = DispatchResult(
                status: .unhandled, message: error, handledBy: nil, responder: nil, trace: trace, origin: origin,
                hops: hops, chainCut: detached)
            settle(result, present: true)
            return result
        case (_, .raised(let error)):
            produced = error
            stepResult = .raised(type: error.type)
        case (.handleEvent, _), (.handleError, _), (.receiveEvent, .handled), (.receiveError, .handled):
            trace?.append(step(node, offset, responder, inputType, .handled, before, nil))
            let info = ResponderInfo(index: offset + 1, location: responder.location, kind: kind)
            let result = DispatchResult(
                status: .handled, message: current, handledBy: node, responder: info, trace: trace, origin: origin,
                hops: hops, chainCut: detached)
            settle(result, present: false)
            return result
        case (.handleAlertErrors, .choice(let choice)):
            // isAlertable read the title raw; a value that cannot be read as plain data after
            // all is left to the responders after this one.
            guard var alert = Alert(current.describedValue(bounded: true), handledBy: node.path, reportedAt: origin.path) else {
                return nil
            }
            if let choice, !alert.recovery.contains(choice) {
                produced = Message.contractError(responder, reply, options: alert.recovery)
                stepResult = .raised(type: produced.type)
                break
            }
            alert.scriptChoice = choice
            trace?.append(step(node, offset, responder, inputType, .handled, before, nil))
            var result = DispatchResult(
                status: .handled, message: current, handledBy: node,
                responder: ResponderInfo(index: offset + 1, location: responder.location, kind: kind),
                trace: trace, origin: origin, hops: hops, chainCut: detached)
            result.choice = resolve(alert)
            settle(result, present: false)
            return result
        case (.receiveEvent, .notHandled), (.receiveError, .notHandled):
            trace?.append(step(node, offset, responder, inputType, .notHandled, before, nil))
            return nil
        case (.receiveEvent, .value(let value)), (.receiveError, .value(let value)),
            (.transformEvent, .value(let value)), (.transformError, .value(let value)),
            (.catchError, .value(let value)):
            produced = value
            stepResult = .replaced(value.domain, type: value.type)
        default:
            produced = Message.contractError(responder, reply)
            stepResult = .raised(type: produced.type)
        }
        if produced.domain == .error {
            produced.setIfAbsent("where", to: responder.location)
            if current.domain == .error && !produced.isSameObject(as: current) {
                produced.setIfAbsent("cause", to: current)
            }
        }
        current = produced
        // Full tracing is what records `before`; the value after goes with it.
        let after: Value? = before != nil ? .some(current.describedValue()) : .none
        trace?.append(step(node, offset, responder, inputType, stepResult, before, after))
        return nil
    }

    /// Shows a handled alert and settles its recovery option: the responder's choice, else
    /// the host's (if it is one of the options), else none.
    private func resolve(_ alert: Alert) -> String? {
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

    /// Presents an unhandled error (unless asked not to) and lets the observer see the end.
    /// It borrows the result its caller then returns: passing it through would copy it.
    private func settle(_ result: borrowing DispatchResult, present: Bool) {
        // A cut chain reaches the presenter only when the policy says so (SPEC §2).
        if present { self.present(result.message, reportedAt: result.origin, chainCut: result.chainCut) }
        observer?(result, depth)
    }

    /// Hands an unhandled error to the presenter. One from a detached subtree (a cut chain)
    /// goes only when the policy says so, marked as such (SPEC §2). `chainCut` is how the
    /// dispatch's snapshot found the chain; nil: as the tree is now.
    func present(_ error: Message, reportedAt origin: Node, chainCut: Bool? = nil) {
        // An interrupt is not the script's error: it ends the whole entry, which says so once.
        guard let presenter, !isStopping() else { return }
        let detached = chainCut ?? !origin.isAttached(to: root)
        if detached && detachedPolicy == .drop { return }
        var presented = PresentedError(error: error.describedValue(bounded: true), reportedAt: origin.path, detached: detached)
        presented.nestingDepth = depth
        presenter(presented)
    }

    private func step(
        _ node: Node, _ offset: Int, _ responder: Responder, _ input: String,
        _ result: TraceStep.Result, _ before: Value?, _ after: Value?
    ) -> TraceStep {
        TraceStep(
            node: node.path,
            responder: ResponderInfo(index: offset + 1, location: responder.location, kind: responder.kind),
            input: input, result: result, before: before, after: after)
    }
}

extension Message {
    /// A `ResponderContractError` for a return the responder's kind does not accept.
    static func contractError(_ responder: Responder, _ reply: ResponderReply, options: [String]? = nil) -> Message {
        let got: String
        switch reply {
        case .handled: got = "\"handled\""
        case .notHandled: got = "\"notHandled\""
        case .value(let message): got = "\(message.domain == .event ? "an event" : "an error") (\(message.type))"
        case .unusable(let description): got = description
        case .raised(let message), .aborted(let message): got = "an error (\(message.type))"
        case .choice(let option): got = option.map { "\"\($0)\"" } ?? "nil"
        }
        let kind = responder.kind
        return .hostError(
            "ResponderContractError",
            "\(kind.rawValue) responder at \(responder.location) returned \(got); expected \(kind.expectedReturn)"
                + (options.map { " (" + ($0.isEmpty ? "it has none" : $0.joined(separator: ", ")) + ")" } ?? ""),
            where: responder.location,
            ["responder": .string(kind.rawValue)])
    }
}
