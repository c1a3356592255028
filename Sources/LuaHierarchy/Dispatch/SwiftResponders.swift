/// What a Swift `receive` responder returns.
public enum ReceiveResult {
    /// The value is handled: the dispatch stops here.
    case handled
    /// The value goes on, unchanged, to the next responder.
    case notHandled
    /// Continue with this value in place of the original (same domain; a string is shorthand).
    case replace(Value)

    /// The seeds' other name for `notHandled` (HierarchyResponder's prose says "unhandled"; Lua
    /// rules may return either string): the value goes on unchanged.
    public static var unhandled: ReceiveResult { .notHandled }
}

/// A Swift closure as a responder body. It sees values as plain data.
final class SwiftResponderBody: ResponderBody {
    /// Nil: the value was not offered to it after all (a typed responder's value that does
    /// not decode as its type), so it passes untouched, as one a filter leaves out.
    private let closure: (Value) throws -> ReceiveResult?
    /// A typed responder's closure as a dispatch engine calls it: with the values decoded so
    /// far in the dispatch, which it decodes its input through.
    private let typedClosure: ((Value, TypedDecodings) throws -> ReceiveResult?)?
    private let location: String

    init(location: String, _ closure: @escaping (Value) throws -> ReceiveResult?) {
        self.closure = closure
        self.typedClosure = nil
        self.location = location
    }

    /// A typed responder's body: offered only values that decode as `T`.
    init<T: Decodable>(location: String, decoding type: T.Type, _ body: @escaping (T) throws -> ReceiveResult) {
        let decoding = TypedDecoding(type)
        self.closure = { value in try SwiftResponderBody.answer(of: body, given: decoding.decode(value, nil)) }
        self.typedClosure = { value, decodings in
            try SwiftResponderBody.answer(of: body, given: decodings.decoded(value, decoding))
        }
        self.location = location
    }

    /// `body`'s answer for the value `decoded` holds; nil when the value did not decode. (Code
    /// generic over `T` runs unspecialized here: it touches no `T?`, whose type would be looked
    /// up at run time on every call.)
    private static func answer<T>(of body: (T) throws -> ReceiveResult, given decoded: DecodedValue) rethrows -> ReceiveResult? {
        guard let storage = decoded.storage else { return nil }
        return try body(storage.assumingMemoryBound(to: T.self).pointee)
    }

    /// The closure's own answer, for a dispatch engine that reads answers itself; nil when
    /// the value was not for it. `decodings`: what typed responders decoded in this dispatch.
    /// Whether it is offered only values that decode as its type (the rest pass it untouched).
    var isTyped: Bool { typedClosure != nil }

    @inline(__always)
    func receive(_ value: Value, decodings: TypedDecodings) throws -> ReceiveResult? {
        if let typedClosure { return try typedClosure(value, decodings) }
        return try closure(value)
    }

    func call(with input: inout Message, returning domain: Domain) -> ResponderReply {
        do {
            let answer: ReceiveResult?
            // A plain value is lent to the closure as it is, without a copy.
            if case .value(let value) = input.payload {
                answer = try closure(value)
            } else {
                answer = try closure(try input.toValue())
            }
            guard let result = answer else { return .notHandled }
            switch result {
            case .handled: return .handled
            case .notHandled: return .notHandled
            // The verdict words mean what they mean from Lua, whichever kind returns them.
            case .replace("handled"): return .handled
            case .replace("notHandled"): return .notHandled
            case .replace(let value):
                guard let message = Message(value, as: domain) else {
                    return .unusable(description: "\(value)")
                }
                return .value(message)
            }
        } catch {
            return .raised(Message(swiftError: error, where: location))
        }
    }

    /// Alert closures answer `.replace(.string(option))` or a verdict (no choice).
    func callForChoice(with input: inout Message) -> ResponderReply {
        do {
            switch try closure(try input.toValue()) {
            case nil, .handled, .notHandled: return .choice(nil)
            case .replace(.string(let option)): return .choice(option)
            case .replace(let value): return .unusable(description: "\(value)")
            }
        } catch {
            return .raised(Message(swiftError: error, where: location))
        }
    }
}

/// What Swift responders are registered on: a node, or the handle of a registration, which
/// registers the next responder on the same node, so modifiers chain as in the seeds
/// (`node.receiveError { ... }.transformError { ... }`).
public protocol ResponderRegistering {
    /// The node the next responder is registered on.
    var registrationNode: Node { get }
}

extension Node: ResponderRegistering {
    /// The node itself.
    public var registrationNode: Node { self }
}

extension ResponderHandle: ResponderRegistering {
    /// The node this handle's responder was registered on.
    public var registrationNode: Node { node }
}

/// Swift closures as responders (contract §4): the same kinds, filters and rules as Lua's.
/// A thrown error is a reported error that continues at the next responder.
extension ResponderRegistering {
    /// Registers a `receive` responder: `.handled` stops the event, `.notHandled` (or
    /// `.unhandled`) passes it on, `.replace(value)` continues with `value` in its place.
    @discardableResult
    public func receiveEvent(
        _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> ReceiveResult
    ) -> ResponderHandle {
        register(.receiveEvent, filter, file, line, body)
    }

    /// Registers a `handle` responder: it consumes every event its filter matches.
    @discardableResult
    public func handleEvent(
        _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> Void
    ) -> ResponderHandle {
        register(.handleEvent, filter, file, line) { try body($0); return .handled }
    }

    /// Registers a `transform` responder: the event it returns continues in place of the one
    /// it was given.
    @discardableResult
    public func transformEvent(
        _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> Value
    ) -> ResponderHandle {
        register(.transformEvent, filter, file, line) { .replace(try body($0)) }
    }

    /// Registers a `receive` responder for errors (see `receiveEvent`).
    @discardableResult
    public func receiveError(
        _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> ReceiveResult
    ) -> ResponderHandle {
        register(.receiveError, filter, file, line, body)
    }

    /// Registers a `handle` responder for errors: it consumes every error its filter matches.
    @discardableResult
    public func handleError(
        _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> Void
    ) -> ResponderHandle {
        register(.handleError, filter, file, line) { try body($0); return .handled }
    }

    /// Registers a `transform` responder for errors: the error it returns continues in place
    /// of the one it was given, with that one as its `cause`.
    @discardableResult
    public func transformError(
        _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> Value
    ) -> ResponderHandle {
        register(.transformError, filter, file, line) { .replace(try body($0)) }
    }

    /// `body` turns the error into an event, which continues up the chain as an event.
    @discardableResult
    public func catchError(
        _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (Value) throws -> Value
    ) -> ResponderHandle {
        register(.catchError, filter, file, line) { .replace(try body($0)) }
    }

    /// Handles alertable errors (a string `title`): the hierarchy's `alertPresenter` shows
    /// them. `body`, if given, may pick one of the error's `recovery` options (or nil).
    @discardableResult
    public func handleAlertErrors(
        file: StaticString = #fileID, line: UInt = #line, _ body: ((Value) throws -> String?)? = nil
    ) -> ResponderHandle {
        register(.handleAlertErrors, .any, file, line) { value in
            guard let body, let option = try body(value) else { return .notHandled }
            return .replace(.string(option))
        }
    }

    // MARK: Typed responders (the seeds' `handleError(MyError.self) { ... }`)

    /// Registers a `receive` responder offered only events that decode as `T`
    /// (`ValueDecoder`); any other passes it untouched, as one a filter leaves out.
    @discardableResult
    public func receiveEvent<T: Decodable>(
        _ type: T.Type, _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (T) throws -> ReceiveResult
    ) -> ResponderHandle {
        register(.receiveEvent, filter, file, line, decoding: type, body)
    }

    /// Registers a `handle` responder that consumes the events that decode as `T`.
    @discardableResult
    public func handleEvent<T: Decodable>(
        _ type: T.Type, _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (T) throws -> Void
    ) -> ResponderHandle {
        register(.handleEvent, filter, file, line, decoding: type) { try body($0); return .handled }
    }

    /// Registers a `receive` responder offered only errors that decode as `T`.
    @discardableResult
    public func receiveError<T: Decodable>(
        _ type: T.Type, _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (T) throws -> ReceiveResult
    ) -> ResponderHandle {
        register(.receiveError, filter, file, line, decoding: type, body)
    }

    /// Registers a `handle` responder that consumes the errors that decode as `T`, as the
    /// seeds' typed `handleError(MyError.self) { (error: MyError) in ... }` does.
    @discardableResult
    public func handleError<T: Decodable>(
        _ type: T.Type, _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (T) throws -> Void
    ) -> ResponderHandle {
        register(.handleError, filter, file, line, decoding: type) { try body($0); return .handled }
    }

    /// Registers a `catch` responder that turns the errors that decode as `T` into the event
    /// it returns.
    @discardableResult
    public func catchError<T: Decodable>(
        _ type: T.Type, _ filter: TypeFilter = .any, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping (T) throws -> Value
    ) -> ResponderHandle {
        register(.catchError, filter, file, line, decoding: type) { .replace(try body($0)) }
    }

    private func register<T: Decodable>(
        _ kind: ResponderKind, _ filter: TypeFilter, _ file: StaticString, _ line: UInt, decoding type: T.Type,
        _ body: @escaping (T) throws -> ReceiveResult
    ) -> ResponderHandle {
        let location = "\(file):\(line)"
        return register(kind, filter, location, SwiftResponderBody(location: location, decoding: type, body))
    }

    private func register(
        _ kind: ResponderKind, _ filter: TypeFilter, _ file: StaticString, _ line: UInt,
        _ body: @escaping (Value) throws -> ReceiveResult?
    ) -> ResponderHandle {
        let location = "\(file):\(line)"
        return register(kind, filter, location, SwiftResponderBody(location: location, body))
    }

    private func register(
        _ kind: ResponderKind, _ filter: TypeFilter, _ location: String, _ body: SwiftResponderBody
    ) -> ResponderHandle {
        let responder = Responder(kind: kind, filter: filter, body: body, location: location)
        let node = registrationNode
        node.appendResponder(responder)
        return ResponderHandle(responder: responder, node: node)
    }
}
