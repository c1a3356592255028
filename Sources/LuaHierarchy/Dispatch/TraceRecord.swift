/// What an engine recorded of a dispatch's steps, read on demand (LuaEngine.swift keeps it
/// in Lua: a full trace's copies there share the strings of the values they copy).
protocol RecordedSteps: AnyObject {
    var count: Int { get }
    /// Step `index`, without its values.
    func step(_ index: Int) -> TraceStep
    /// With full tracing: a copy of the value before (or after) step `index`'s replacement, if
    /// it recorded one, at most half of what the memory cap leaves (a longer one is cut).
    func value(ofStep index: Int, after: Bool) -> Value?
    /// With full tracing: appends the JSON of the value before (or after) step `index`'s
    /// replacement straight from where it is recorded, within what the memory cap leaves.
    /// Nil: the step recorded none; false: it did not fit (nothing appended).
    func writeValue(ofStep index: Int, after: Bool, into writer: inout JSONWriter) -> Bool?
    /// Whether step `index` recorded a value before (or after) its replacement.
    func hasValue(ofStep index: Int, after: Bool) -> Bool
}

/// A dispatch's trace (contract §5), made Swift values when first read, within the memory cap
/// (contract §7): each step and each value is charged as it is made, for as long as the trace is
/// held. Once the cap refuses a value, the steps go on without values; once it refuses a step,
/// the trace ends there. (A refusal trips the running budget on memory, if one is running.)
final class DispatchTrace {
    private let recorded: any RecordedSteps
    let charge: MemoryCharge
    private var made: [TraceStep]?

    init(_ recorded: any RecordedSteps, meter: (any MemoryMeter)?) {
        self.recorded = recorded
        charge = MemoryCharge(meter: meter)
    }

    var count: Int { made?.count ?? recorded.count }

    /// Step `index` without its values (for writers that write them from the record).
    func step(_ index: Int) -> TraceStep { recorded.step(index) }

    /// Appends the JSON of step `index`'s value before (or after) its replacement, read from
    /// the record within the cap: nil when it has none, false when it did not fit.
    func writeValue(ofStep index: Int, after: Bool, into writer: inout JSONWriter) -> Bool? {
        recorded.writeValue(ofStep: index, after: after, into: &writer)
    }

    /// Whether step `index` recorded a value before (or after) its replacement.
    func hasValue(ofStep index: Int, after: Bool) -> Bool { recorded.hasValue(ofStep: index, after: after) }

    var steps: [TraceStep] {
        if let made { return made }
        var steps: [TraceStep] = []
        var recordsValues = true
        for index in 0..<recorded.count {
            var step = recorded.step(index)
            let cost =
                MemoryCost.traceStep + MemoryCost.string(step.node) + MemoryCost.string(step.responder.location)
                + MemoryCost.string(step.input) + MemoryCost.string(step.resultType)
            guard charge.add(cost) else { break }
            for after in [false, true] {
                guard recordsValues else {
                    // A value left out is said to be, never silently dropped.
                    if recorded.hasValue(ofStep: index, after: after) { step.valuesOmitted = true }
                    continue
                }
                guard let value = recorded.value(ofStep: index, after: after) else { continue }
                guard charge.add(MemoryCost.value(value)) else {
                    recordsValues = false
                    step.before = nil
                    step.after = nil
                    step.valuesOmitted = true
                    continue
                }
                if after { step.after = value } else { step.before = value }
            }
            steps.append(step)
        }
        made = steps
        return steps
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

