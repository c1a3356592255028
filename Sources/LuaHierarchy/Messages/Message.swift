/// The two kinds of value that travel the chain.
public enum Domain: String, Sendable, Hashable {
    case event
    case error
}

/// A value held by a scripting side (a Lua table) that the dispatcher passes along without
/// converting it, so responders on that side see one object and the hot path copies nothing.
protocol ForeignPayload: AnyObject {
    /// A strict copy as plain data; throws a `PayloadError` on functions, cycles, odd keys.
    func toValue() throws -> Value
    /// A total, lossy copy for messages and presenters: what cannot be converted is described.
    /// `bounded`: at most what the memory cap leaves (LuaValues.swift), for copies that only
    /// describe (presenters, alerts, script failures); traces and outcomes copy whole.
    func describedValue(bounded: Bool) -> Value
    /// Sets `key` unless the value already has it. `value` may itself be a message.
    func setIfAbsent(_ key: String, to value: Message)
    /// Sets `key` unless the value already has it.
    func setIfAbsent(_ key: String, to text: String)
    /// Appends the value as JSON, as `describedValue()` would read (without building it).
    func writeJSON(into writer: inout JSONWriter)
}

/// What a message is made of: plain data, or a value a scripting side owns.
enum Payload {
    case value(Value)
    case foreign(any ForeignPayload)
}

/// One event or error on its way up the chain. `type` is read once, when it is made.
struct Message {
    var domain: Domain
    var type: String
    var payload: Payload

    /// Normalizes a plain value into a message of `domain` following contract §3: a string is
    /// shorthand (`{type = s}` for events, `{type = "Error", message = s}` for errors); an
    /// error's `type` defaults to "Error"; an event needs a string `type`. Nil when not valid.
    init?(_ value: Value, as domain: Domain) {
        switch (value, domain) {
        case (.string(let type), .event):
            self.init(domain: .event, type: type, payload: .value(.event(type)))
        case (.string(let text), .error):
            self.init(domain: .error, type: "Error", payload: .value(.error(message: text)))
        case (.map(let map), _):
            switch Self.typeField(of: map) {
            case .string(let type)?:
                self.init(domain: domain, type: type, payload: .value(value))
            case nil where domain == .error:
                var map = map
                map["type"] = "Error"
                self.init(domain: .error, type: "Error", payload: .value(.map(map)))
            default:
                return nil
            }
        default:
            return nil
        }
    }

    /// `map["type"]`. A message is usually a few fields, and for a few a scan that compares
    /// keys costs less than hashing "type" (SipHash: ~300 instructions a dispatch).
    private static func typeField(of map: [String: Value]) -> Value? {
        guard map.count <= 8 else { return map["type"] }
        for (key, value) in map where key == "type" { return value }
        return nil
    }

    init(domain: Domain, type: String, payload: Payload) {
        self.domain = domain
        self.type = type
        self.payload = payload
    }

    /// A host-made error: `{type, message, where}` plus fields.
    static func hostError(_ type: String, _ message: String, where location: String?, _ fields: [String: Value] = [:]) -> Message {
        var map = fields
        map["type"] = .string(type)
        map["message"] = .string(message)
        if let location { map["where"] = .string(location) }
        return Message(domain: .error, type: type, payload: .value(.map(map)))
    }

    /// A strict plain-data copy (see `ForeignPayload.toValue`).
    func toValue() throws -> Value {
        switch payload {
        case .value(let value): return value
        case .foreign(let foreign): return try foreign.toValue()
        }
    }

    /// A total plain-data copy for messages and presenters.
    func describedValue(bounded: Bool = false) -> Value {
        switch payload {
        case .value(let value): return value
        case .foreign(let foreign): return foreign.describedValue(bounded: bounded)
        }
    }

    /// Appends the value as JSON.
    func writeJSON(into writer: inout JSONWriter) {
        switch payload {
        case .value(let value): writer.write(value)
        case .foreign(let foreign): foreign.writeJSON(into: &writer)
        }
    }

    /// The type of the error an interrupt (SIGINT, SIGTERM) ends every dispatch with. Only
    /// for messages: whether a dispatch was interrupted is read from its budget.
    static let interruptedType = "Interrupted"

    mutating func setIfAbsent(_ key: String, to value: Message) {
        switch payload {
        case .value(.map(var map)) where map[key] == nil:
            map[key] = value.describedValue()
            payload = .value(.map(map))
        case .foreign(let foreign):
            foreign.setIfAbsent(key, to: value)
        default:
            break
        }
    }

    mutating func setIfAbsent(_ key: String, to text: String) {
        switch payload {
        case .value(.map(var map)) where map[key] == nil:
            map[key] = .string(text)
            payload = .value(.map(map))
        case .foreign(let foreign):
            foreign.setIfAbsent(key, to: text)
        default:
            break
        }
    }
}

/// Why a value could not be copied as plain data.
public struct PayloadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where in the value, e.g. `.user.tags[3]`; empty for the value itself.
    public var path: String
    /// What cannot be copied there, e.g. `a table that contains itself (a cycle)`.
    public var reason: String
    /// A failure at `path` (empty for the value itself), for `reason`.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
    /// The reason, followed by `at` and the path when there is one.
    public var description: String { path.isEmpty ? reason : "\(reason) at \(path)" }

    /// The same failure seen from the value that holds this one under `key` (`.name`, `[3]`).
    func inside(_ key: String) -> PayloadError {
        PayloadError(path: key + path, reason: reason)
    }
}
