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
