/// A dispatch drawn as a tree a person reads at a glance (`luahier explain --run`, and a
/// failing rule test's trace): each hop, each responder's answer, each replacement's before
/// and after, the dispatches a responder started indented under it, and where it ended.
public struct TraceDrawing: Sendable {
    /// What was dispatched: `event Alert at /org/platform/api`.
    public var title: String
    /// The dispatch's responder calls, in order.
    public var steps: [TraceStep]
    /// Dispatches started inside the responder of a step, by the step's position.
    public var nested: [Int: [TraceDrawing]] = [:]
    /// Dispatches started elsewhere while this one ran (by a publish's subscriber).
    public var alongside: [TraceDrawing] = []
    /// How it ended: `handled by /org/platform #3 (rules.lua:60): event Ticket {...}`.
    public var ending: String

    /// A drawing of `steps` under `title`, ending with `ending`; nothing nested.
    public init(title: String, steps: [TraceStep], ending: String) {
        self.title = title
        self.steps = steps
        self.ending = ending
    }

    /// The drawing of `outcome` (with its trace) for a value of `domain` and `type` sent at its `at`.
    public init(_ outcome: Outcome, sent domain: Domain, type: String) {
        self.init(
            title: "\(domain.rawValue) \(type) at \(outcome.at)", steps: outcome.trace ?? [],
            ending: Self.ending(
                status: outcome.status.rawValue, by: outcome.by, responder: outcome.responder,
                kind: outcome.kind, value: outcome.value))
    }

    /// The last line: how the dispatch ended and with what value.
    public static func ending(status: String, by: String?, responder: ResponderInfo?, kind: Domain, value: Value) -> String {
        var text = status
        if let by, let responder {
            text += " by \(by) #\(responder.index) \(responder.kind.rawValue) (\(responder.location))"
        }
        return text + ": \(kind.rawValue) \(value.typeName ?? "?") \(Self.short(value))"
    }

    /// A value on one line, at most `limit` characters.
    static func short(_ value: Value, limit: Int = 160) -> String {
        let text = PrintableText.field(value.description, limit: 100_000)
        guard text.count > limit else { return text }
        return String(text.prefix(limit - 1)) + "…"
    }

    /// The drawing, one line each.
    public func lines() -> [String] {
        var lines = [PrintableText.field(title)]
        draw(into: &lines, prefix: "")
        return lines
    }

    private func draw(into lines: inout [String], prefix: String) {
        // Steps grouped by hop: consecutive steps on the same node.
        var hops: [(node: String, steps: [Int])] = []
        for (index, step) in steps.enumerated() {
            if hops.last?.node == step.node { hops[hops.count - 1].steps.append(index) } else { hops.append((step.node, [index])) }
        }
        for hop in hops {
            lines.append(prefix + "├─ " + PrintableText.field(hop.node))
            for (position, index) in hop.steps.enumerated() {
                let last = position == hop.steps.count - 1
                let step = steps[index]
                let branch = prefix + "│  " + (last ? "└─ " : "├─ ")
                let below = prefix + "│  " + (last ? "   " : "│  ")
                lines.append(
                    branch
                        + PrintableText.field(
                            "#\(step.responder.index) \(step.responder.kind.rawValue) (\(step.responder.location)): \(step.input) → \(step.resultDescription)"))
                if let before = step.before { lines.append(below + "   before " + Self.short(before)) }
                if let after = step.after { lines.append(below + "   after  " + Self.short(after)) }
                for inner in nested[index] ?? [] {
                    lines.append(below + "   ↳ " + PrintableText.field(inner.title))
                    inner.draw(into: &lines, prefix: below + "     ")
                }
            }
        }
        for inner in alongside {
            lines.append(prefix + "├─ ↳ " + PrintableText.field(inner.title))
            inner.draw(into: &lines, prefix: prefix + "│    ")
        }
        lines.append(prefix + "└─ " + PrintableText.field(ending))
    }
}

extension TraceStep {
    /// A step as Lua reads it (`outcome.trace[i]`: node, index, kind, where, input, result,
    /// before, after), or nil when it is not one.
    init?(lua value: Value) {
        guard let node = value["node"]?.stringValue, let kindName = value["kind"]?.stringValue,
            let kind = ResponderKind(rawValue: kindName), let result = value["result"]?.stringValue
        else { return nil }
        var index = 0
        if case .int(let number)? = value["index"] { index = Int(number) }
        let parsed: Result
        switch result {
        case "handled": parsed = .handled
        case "notHandled": parsed = .notHandled
        default:
            let words = result.split(separator: " ", maxSplits: 1).map(String.init)
            let type = words.count > 1 ? words[1] : "?"
            switch words.first {
            case "event": parsed = .replaced(.event, type: type)
            case "error": parsed = .replaced(.error, type: type)
            default: parsed = .raised(type: type)
            }
        }
        self.init(
            node: node, responder: ResponderInfo(index: index, location: value["where"]?.stringValue ?? "?", kind: kind),
            input: value["input"]?.stringValue ?? "?", result: parsed, before: value["before"], after: value["after"])
    }
}

extension Hierarchy {
    /// Runs a dispatch of `value` (an event or an error, by `domain`) at `node` with full
    /// tracing and draws it with every dispatch it started (`luahier explain --run`). The
    /// hierarchy's tracing and dispatch observer are restored afterwards.
    public func drawDispatch(_ value: Value, as domain: Domain, at node: Node) throws -> (outcome: Outcome, drawing: TraceDrawing) {
        let savedTrace = traceLevel, savedObserver = onDispatch
        defer {
            traceLevel = savedTrace
            onDispatch = savedObserver
        }
        traceLevel = .full
        // Dispatches end innermost first: each one's nested ones are those that ended, deeper,
        // since the last one at its own depth.
        var pending: [Int: [(drawing: TraceDrawing, step: Int?)]] = [:]
        onDispatch = { outcome, depth in
            savedObserver?(outcome, depth)
            let type = outcome.trace?.first?.input ?? outcome.value.typeName ?? "?"
            var drawing = TraceDrawing(outcome, sent: Self.domain(ofFirst: outcome), type: type)
            for deeper in pending.keys.filter({ $0 > depth }).sorted() {
                for inner in pending.removeValue(forKey: deeper) ?? [] {
                    if deeper == depth + 1, let step = inner.step, step < drawing.steps.count {
                        drawing.nested[step, default: []].append(inner.drawing)
                    } else {
                        drawing.alongside.append(inner.drawing)
                    }
                }
            }
            pending[depth, default: []].append((drawing, outcome.enclosingStep))
        }
        let outcome = domain == .event ? try trigger(value, at: node) : try report(value, at: node, where: "explain")
        var drawing = pending[1]?.last?.drawing
            ?? TraceDrawing(outcome, sent: domain, type: value.typeName ?? value.stringValue ?? "?")
        drawing.title = "\(domain.rawValue) \(value.typeName ?? value.stringValue ?? "?") at \(outcome.at)"
        return (outcome, drawing)
    }

    /// The domain of the value a trace's first responder was offered.
    private static func domain(ofFirst outcome: Outcome) -> Domain {
        outcome.trace?.first?.responder.kind.domain ?? outcome.kind
    }
}

extension TraceDrawing {
    /// The drawing as JSON: `title`, `steps` (each with its `nested` dispatches), `alongside`
    /// and `ending`, the same content as the text.
    public var json: Value {
        .map([
            "title": .string(title),
            "steps": .array(steps.enumerated().map { index, step in
                var fields: [String: Value] = [
                    "node": .string(step.node), "index": .int(Int64(step.responder.index)),
                    "kind": .string(step.responder.kind.rawValue), "responder": .string(step.responder.location),
                    "input": .string(step.input), "result": .string(step.resultDescription),
                ]
                if let before = step.before { fields["before"] = before }
                if let after = step.after { fields["after"] = after }
                if let inner = nested[index] { fields["nested"] = .array(inner.map(\.json)) }
                return .map(fields)
            }),
            "alongside": .array(alongside.map(\.json)),
            "ending": .string(ending),
        ])
    }
}
