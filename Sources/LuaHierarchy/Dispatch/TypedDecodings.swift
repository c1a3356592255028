/// How typed Swift responders decode the values they are offered: once per value a dispatch
/// offers, for all the responders that take the same type.
///
/// The code that is generic over a responder's type runs unspecialized (the type is the
/// caller's), where every `T?` or generic class of `T` it touches is a type looked up at run
/// time. So a decoded value is kept in memory laid out as its type (`DecodedValue`), and the
/// per-call path touches none of them.

/// A value decoded as one type, in memory laid out as that type.
final class DecodedValue {
    /// The decoded value; nil when the value does not decode as the type.
    let storage: UnsafeMutableRawPointer?
    private let release: (UnsafeMutableRawPointer) -> Void

    init(storage: UnsafeMutableRawPointer?, release: @escaping (UnsafeMutableRawPointer) -> Void) {
        self.storage = storage
        self.release = release
    }

    deinit {
        if let storage { release(storage) }
    }
}

/// A typed responder's way of decoding, made once when it is registered.
struct TypedDecoding {
    let type: ObjectIdentifier
    /// Whether one decoding may be lent to several responders: not for a class, whose one
    /// instance shared would let one responder's changes reach the next.
    let shared: Bool
    /// The value decoded (`ValueDecoder`), a failure as no value.
    let decode: (Value) -> DecodedValue

    init<T: Decodable>(_ type: T.Type) {
        self.type = ObjectIdentifier(type)
        shared = !(type is AnyObject.Type)
        let release: (UnsafeMutableRawPointer) -> Void = { storage in
            storage.assumingMemoryBound(to: T.self).deinitialize(count: 1)
            storage.deallocate()
        }
        decode = { value in
            // Into its memory directly (a `T?` in between is a type looked up per call).
            let storage = UnsafeMutablePointer<T>.allocate(capacity: 1)
            do {
                storage.initialize(to: try ValueDecoder().decode(T.self, from: value))
            } catch {
                storage.deallocate()
                return DecodedValue(storage: nil, release: release)
            }
            return DecodedValue(storage: UnsafeMutableRawPointer(storage), release: release)
        }
    }
}

/// What typed responders decoded in the dispatches under way, per nesting depth. A dispatch
/// engine says, before each call of a Swift closure, which value it offers: `identity`, an
/// object that stands for the value while it stays the same (a replacement has another), at
/// `depth`. With no identity (the engine read the value afresh for this call) each typed
/// responder decodes it itself.
final class TypedDecodings {
    /// Unchecked: the engine holds the object for as long as the call it is set for runs.
    @exclusivity(unchecked) unowned(unsafe) var identity: AnyObject?
    @exclusivity(unchecked) var depth = 0
    @exclusivity(unchecked) private var slots: [Slot?]

    /// The value last offered at a depth, and what it decoded as, by type (the first type
    /// apart: a dispatch's typed responders mostly take one). Reused for the next value offered
    /// there.
    private final class Slot {
        @exclusivity(unchecked) var identity: AnyObject
        @exclusivity(unchecked) var firstType: ObjectIdentifier?
        @exclusivity(unchecked) var first: DecodedValue?
        @exclusivity(unchecked) var others: [(type: ObjectIdentifier, value: DecodedValue)] = []

        init(identity: AnyObject) { self.identity = identity }

        func decoded(as type: ObjectIdentifier) -> DecodedValue? {
            if firstType == type { return first }
            for entry in others where entry.type == type { return entry.value }
            return nil
        }

        func keep(_ value: DecodedValue, as type: ObjectIdentifier) {
            if firstType == nil {
                firstType = type
                first = value
            } else {
                others.append((type, value))
            }
        }

        func reuse(for identity: AnyObject) {
            self.identity = identity
            firstType = nil
            first = nil
            if !others.isEmpty { others = [] }
        }
    }

    init(depths: Int) {
        slots = Array(repeating: nil, count: depths + 1)
    }

    /// `value` decoded as `decoding` says, once per value offered.
    func decoded(_ value: Value, _ decoding: TypedDecoding) -> DecodedValue {
        let depth = depth
        guard decoding.shared, let identity, depth >= 1, depth < slots.count else { return decoding.decode(value) }
        let slot: Slot
        if let kept = slots[depth] {
            if kept.identity === identity {
                if let decoded = kept.decoded(as: decoding.type) { return decoded }
            } else {
                kept.reuse(for: identity)
            }
            slot = kept
        } else {
            slot = Slot(identity: identity)
            slots[depth] = slot
        }
        let decoded = decoding.decode(value)
        slot.keep(decoded, as: decoding.type)
        return decoded
    }
}
