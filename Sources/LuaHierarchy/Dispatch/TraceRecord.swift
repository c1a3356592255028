/// A dispatch's trace as it is recorded, with what its steps cost against the memory cap
/// (SPEC §7), held for as long as any copy of the trace is (an outcome a script has not read
/// the trace of keeps it).
///
/// Nothing here can fail a dispatch: when the meter refuses a step's values (full tracing),
/// the trace goes on without values; when it refuses a step, the trace ends there. Either
/// refusal trips the running budget on memory, so the dispatch then ends as a tripped limit.
struct TraceRecord {
    private(set) var steps: [TraceStep] = []
    let charge: MemoryCharge
    /// Whether values before and after replacements are still recorded.
    private(set) var recordsValues = true
    /// Whether steps are still recorded.
    private(set) var isCut = false
    /// What the `before` value copied last costs, charged until a step takes it or not.
    private var heldBefore = 0

    init(meter: (any MemoryMeter)?) {
        charge = MemoryCharge(meter: meter)
    }

    /// With full tracing: the value a responder is called with, copied and charged (so the
    /// copies nested dispatches hold while their responders run count too), or nil once values
    /// are no longer recorded.
    mutating func copyBefore(_ message: borrowing Message) -> Value? {
        dropHeldBefore()
        guard recordsValues else { return nil }
        let value = message.describedValue()
        let cost = MemoryCost.value(value)
        guard charge.add(cost) else {
            recordsValues = false
            return nil
        }
        heldBefore = cost
        return value
    }

    /// Records `step`. Its `before` must come from the last `copyBefore`, which charged it.
    mutating func append(_ step: TraceStep) {
        var step = step
        let held = heldBefore
        heldBefore = 0
        if step.before == nil { charge.remove(held) }
        guard !isCut else {
            if step.before != nil { charge.remove(held) }
            return
        }
        if let after = step.after, !charge.add(MemoryCost.value(after)) {
            step.after = nil
            recordsValues = false
        }
        if step.after == nil && step.before != nil && !recordsValues {
            step.before = nil
            charge.remove(held)
        }
        let cost =
            MemoryCost.traceStep + MemoryCost.string(step.node) + MemoryCost.string(step.responder.location)
            + MemoryCost.string(step.input) + MemoryCost.string(step.resultType)
        guard charge.add(cost) else {
            isCut = true
            recordsValues = false
            if step.before != nil { charge.remove(held) }
            if let after = step.after { charge.remove(MemoryCost.value(after)) }
            return
        }
        steps.append(step)
    }

    /// Gives back a `before` value no step took.
    private mutating func dropHeldBefore() {
        charge.remove(heldBefore)
        heldBefore = 0
    }
}

extension TraceStep {
    /// The type named by the result, if any.
    var resultType: String? {
        switch result {
        case .handled, .notHandled: return nil
        case .replaced(_, let type), .raised(let type): return type
        }
    }
}
