/// How typed Swift responders decode the values they are offered: once per value a dispatch
/// offers, for all the responders that take the same type.
///
/// The code that is generic over a responder's type runs unspecialized (the type is the
/// caller's), where every `T?` or generic class of `T` it touches is a type looked up at run
/// time. So a decoded value is kept in memory laid out as its type (`DecodedValue`), and the
/// per-call path touches none of them.

/// A value decoded as one type, in memory laid out as that type. Its memory is kept for the
/// next value decoded as the same type at the same depth (`TypedDecoding.redecode`).
final class DecodedValue {
    /// The decoded value; nil when the value does not decode as the type.
    fileprivate(set) var storage: UnsafeMutableRawPointer?
    /// Room for one value of the type, the decoded one or none.
    fileprivate let room: UnsafeMutableRawPointer
    private let release: (UnsafeMutableRawPointer?, UnsafeMutableRawPointer) -> Void

    fileprivate init(room: UnsafeMutableRawPointer, release: @escaping (UnsafeMutableRawPointer?, UnsafeMutableRawPointer) -> Void) {
        self.room = room
        self.release = release
    }

    deinit { release(storage, room) }
}

/// A typed responder's way of decoding, made once when it is registered.
struct TypedDecoding {
    let type: ObjectIdentifier
    /// Whether one decoding may be lent to several responders: not for a class, whose one
    /// instance shared would let one responder's changes reach the next.
    let shared: Bool
    /// The value decoded (`ValueDecoder`), a failure as no value, with the containers kept by
    /// the engine decoding it, if any.
    let decode: (Value, KeptContainers?) -> DecodedValue
    /// The value decoded into the memory of an earlier decoding of the same type, which no one
    /// else holds: the one before is given up first.
    let redecode: (Value, DecodedValue, KeptContainers?) -> Void

    init<T: Decodable>(_ type: T.Type) {
        self.type = ObjectIdentifier(type)
        shared = !(type is AnyObject.Type)
        let release: (UnsafeMutableRawPointer?, UnsafeMutableRawPointer) -> Void = { storage, room in
            storage?.assumingMemoryBound(to: T.self).deinitialize(count: 1)
            room.deallocate()
        }
        // Into its memory directly (a `T?` in between is a type looked up per call).
        let decodeInto: (Value, DecodedValue, KeptContainers?) -> Void = { value, decoded, kept in
            let room = decoded.room.assumingMemoryBound(to: T.self)
            do {
                if let kept {
                    room.initialize(to: try kept.decode(T.self, from: value))
                } else {
                    room.initialize(to: try ValueDecoding.decode(T.self, from: value, at: nil))
                }
                decoded.storage = decoded.room
            } catch {
                decoded.storage = nil
            }
        }
        decode = { value, kept in
            let decoded = DecodedValue(room: UnsafeMutableRawPointer(UnsafeMutablePointer<T>.allocate(capacity: 1)), release: release)
            decodeInto(value, decoded, kept)
            return decoded
        }
        redecode = { value, decoded, kept in
            if let storage = decoded.storage {
                decoded.storage = nil
                storage.assumingMemoryBound(to: T.self).deinitialize(count: 1)
            }
            decodeInto(value, decoded, kept)
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
    /// The keyed containers the engine's typed responders decode with.
    private let containers = KeptContainers()

    /// The value last offered at a depth, and what it decoded as, by type (the first type
    /// apart: a dispatch's typed responders mostly take one). Reused for the next value offered
    /// there, and so is the first type's decoding when the next value's first type is the same.
    private final class Slot {
        @exclusivity(unchecked) var identity: AnyObject
        @exclusivity(unchecked) var firstType: ObjectIdentifier?
        /// The first type's decoding: of the value `identity` stands for when `firstIsCurrent`,
        /// else of a value before it (its memory to reuse).
        @exclusivity(unchecked) var first: DecodedValue?
        @exclusivity(unchecked) var firstIsCurrent = false
        @exclusivity(unchecked) var others: [(type: ObjectIdentifier, value: DecodedValue)] = []

        init(identity: AnyObject) { self.identity = identity }

        func decoded(as type: ObjectIdentifier) -> DecodedValue? {
            if firstIsCurrent, firstType == type { return first }
            for entry in others where entry.type == type { return entry.value }
            return nil
        }

        /// `value` decoded as `decoding` says, kept as what the current value decodes as.
        func decode(_ value: Value, _ decoding: TypedDecoding, _ containers: KeptContainers) -> DecodedValue {
            guard !firstIsCurrent else {
                let decoded = decoding.decode(value, containers)
                others.append((decoding.type, decoded))
                return decoded
            }
            firstIsCurrent = true
            // The memory of the last value's decoding, when it is of this type and no one else
            // holds it (a responder of that dispatch that is still running).
            if firstType == decoding.type, isKnownUniquelyReferenced(&first), let earlier = first {
                decoding.redecode(value, earlier, containers)
                return earlier
            }
            let decoded = decoding.decode(value, containers)
            firstType = decoding.type
            first = decoded
            return decoded
        }

        func reuse(for identity: AnyObject) {
            self.identity = identity
            firstIsCurrent = false
            if !others.isEmpty { others = [] }
        }
    }

    init(depths: Int) {
        slots = Array(repeating: nil, count: depths + 1)
    }

    /// `value` decoded as `decoding` says, once per value offered.
    func decoded(_ value: Value, _ decoding: TypedDecoding) -> DecodedValue {
        let depth = depth
        guard decoding.shared, let identity, depth >= 1, depth < slots.count else { return decoding.decode(value, containers) }
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
        return slot.decode(value, decoding, containers)
    }
}
