/// Counts what the host holds on the scripts' behalf against the memory cap (contract §7): the
/// host's own copies (node names and paths, registrations, traces) go in the same counter as
/// the scripting heap, so one cap covers both. The tree and the dispatcher charge through it
/// without knowing what is behind it; the Lua host implements it on the counter its allocator
/// keeps (LuaHost.swift). A tree holds its meter in `TreeToken.meter`.
protocol MemoryMeter: AnyObject {
    /// Counts `bytes` more, unless that would pass the cap: then nothing is counted, the
    /// running budget (if one is under way) trips on memory, sticky, as when the allocator
    /// refuses, and the answer is false.
    func charge(_ bytes: Int) -> Bool
    /// Gives back `bytes` charged before. Once the meter is closed, nothing.
    func release(_ bytes: Int)
    /// Charges `units` of host work (LUAHIER_HOOK_INTERVAL units are worth as many Lua
    /// instructions) to the running budget, reading the clock as they add up: false once the
    /// budget has tripped (a deadline, the cap, an interrupt), when the work must stop.
    func chargeWork(_ units: Int) -> Bool
    /// The cap in bytes, for messages (nil: none).
    var memoryLimit: Int? { get }
    /// How the tree and charges hold this meter: the meter owns it and cuts it when it goes.
    var reference: MeterReference { get }
}

/// A meter as what outlives it holds it (a tree, a charge): without keeping it alive, and
/// without a weak reference, which would give the meter a side table and slow every retain
/// of it (the Lua host, retained on every dispatch). The meter owns its reference and calls
/// `disconnect()` before it goes; after that the reference answers nil.
final class MeterReference {
    private(set) unowned(unsafe) var meter: (any MemoryMeter)?

    init(_ meter: any MemoryMeter) {
        self.meter = meter
    }

    func disconnect() { meter = nil }
}

/// What the host's copies cost, as charged: estimates at least what malloc really holds for
/// them (measured on 64-bit Linux with glibc: `Tests/LuaHierarchyTests/HostMemoryTests.swift`).
enum MemoryCost {
    /// A string's heap buffer: nothing for one of up to 15 UTF-8 bytes (held inline), else its
    /// bytes, a 32-byte header, the NUL, malloc's rounding (up to 31 bytes more when it reuses
    /// a larger chunk) and, for large ones, the page mmap rounds to.
    @inline(__always)
    static func string(_ text: String?) -> Int {
        guard let text else { return 0 }
        return bytes(text.utf8.count)
    }

    /// A string or byte array of `count` bytes.
    @inline(__always)
    static func bytes(_ count: Int) -> Int { count <= 15 ? 0 : count + 96 + count >> 6 }

    /// Looking `path` up (`Hierarchy.names(in:)`): an array of its names as substrings and
    /// as strings (48 bytes a name), and the names of more than 15 bytes copied.
    static func names(inPath path: String) -> Int {
        var names = 0
        for byte in path.utf8 where byte == UInt8(ascii: "/") { names += 1 }
        let length = path.utf8.count
        return 64 + names * 48 + length + 64 * min(names, length / 16 + 1)
    }

    /// A node, its name apart: the object (136 bytes), the extras a few nodes have (40), a
    /// slot in a wide parent's child index, with the index's growth.
    static let node = 256

    static func node(named name: String) -> Int { node + string(name) }

    /// A registration (responder or subscription), its location and filter apart: the object
    /// (at most 120 bytes), its body (56), a slot in the node's array, with the array's growth.
    static let registration = 224

    /// A filter's set of type names, and the list of them a `TypeMatcher` keeps (sharing
    /// the names' storage).
    static func filter(_ filter: TypeFilter) -> Int {
        guard case .types(let names) = filter else { return 0 }
        return names.reduce(96 + names.count * 80) { $0 + string($1) }
    }

    /// A trace step in its array, its strings and values apart: its stride (144 bytes) times
    /// three, for the array's growth (a new buffer of twice the size next to the old one).
    static let traceStep = 448

    /// A declared type in a node's declarations (a dictionary slot, with growth), its name apart.
    static let declaredType = 128

    /// A plain value as Swift holds it: strings and byte arrays, arrays of 24-byte slots,
    /// dictionaries of key and value slots at their load factor, each with growth. Walked
    /// without recursion, so a deep value cannot overflow the stack.
    static func value(_ value: Value) -> Int {
        var total = 0
        var pending: [Value] = [value]
        while let next = pending.popLast() {
            switch next {
            case .null, .bool, .int, .double: break
            case .string(let text): total += string(text)
            case .bytes(let bytes): total += self.bytes(bytes.count)
            case .array(let items):
                total += 64 + items.count * 48
                pending.append(contentsOf: items)
            case .map(let fields):
                total += 64 + fields.count * 128
                for (key, field) in fields {
                    total += string(key)
                    pending.append(field)
                }
            }
        }
        return total
    }
}

/// Bytes charged to a meter for as long as this object lives: it gives them back when it goes,
/// so whatever holds it (a trace, the declarations of a node) pays for exactly its lifetime.
final class MemoryCharge {
    /// Not the meter itself: what holds a charge may outlive the host behind the meter.
    private let reference: MeterReference?
    private var meter: (any MemoryMeter)? { reference?.meter }
    private(set) var bytes = 0

    init(meter: (any MemoryMeter)?) {
        reference = meter?.reference
    }

    deinit {
        if bytes > 0 { meter?.release(bytes) }
    }

    /// Charges `count` bytes more; false (nothing charged) when the meter refused them.
    func add(_ count: Int) -> Bool {
        guard count > 0, let meter else { return true }
        guard meter.charge(count) else { return false }
        bytes += count
        return true
    }

    /// Gives back `count` of the bytes charged.
    func remove(_ count: Int) {
        let count = min(count, bytes)
        guard count > 0 else { return }
        bytes -= count
        meter?.release(count)
    }
}
