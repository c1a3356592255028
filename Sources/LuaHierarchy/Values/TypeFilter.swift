/// Which values a responder sees; the others pass it untouched.
public enum TypeFilter: Hashable, Sendable {
    case any
    case types(Set<String>)

    /// A filter that takes only values of the type `name`.
    public static func type(_ name: String) -> TypeFilter { .types([name]) }

    /// `any`, `Tap`, or `[A, B]` (sorted): how tools and messages show a filter.
    public var summary: String {
        switch self {
        case .any: return "any"
        case .types(let names) where names.count == 1: return names.first!
        case .types(let names): return "[" + names.sorted().joined(separator: ", ") + "]"
        }
    }

    /// The type names, sorted; empty for `any`.
    public var typeNames: [String] {
        if case .types(let names) = self { return names.sorted() }
        return []
    }
}

/// A `TypeFilter` in the form a dispatch checks it in, built once per registration: a
/// filter of a few types compares the names (a type name is usually a small string, which
/// compares as two words) instead of hashing the value's type on every check.
struct TypeMatcher {
    private let matchesAny: Bool
    /// The names, when there are at most `listed` of them; else `set` holds them.
    private let names: [String]
    private let set: Set<String>?
    private static let listed = 8

    init(_ filter: TypeFilter) {
        switch filter {
        case .any:
            (matchesAny, names, set) = (true, [], nil)
        case .types(let types) where types.count <= Self.listed:
            (matchesAny, names, set) = (false, Array(types), nil)
        case .types(let types):
            (matchesAny, names, set) = (false, [], types)
        }
    }

    @inline(__always)
    func matches(_ type: String) -> Bool {
        if matchesAny { return true }
        if let set { return set.contains(type) }
        for name in names where name == type { return true }
        return false
    }
}
