/// Responder coverage for `luahier test --coverage`: every responder and subscription the
/// rules registered (as each test's fresh tree has them before the test runs), with how many
/// tests reached it. A responder is reached when a dispatch offered it a value (its trace
/// step); a subscription, when a publish delivered to it.
struct CoverageCounter {
    enum Key: Hashable {
        case responder(node: String, index: Int, location: String)
        case subscription(node: String, location: String)
    }

    private var registered: [Key: CoverageReport.Entry] = [:]
    private var order: [Key] = []
    private var tests: [Key: Int] = [:]

    /// Adds what `tree` has registered (once per key), leaving out test files' own.
    mutating func register(_ tree: TreeDescription) {
        tree.forEachPath { position, path in
            let entry = tree.entries[position]
            for responder in entry.responders where !Self.isTestFile(responder.location) {
                add(.responder(node: path, index: responder.index, location: responder.location),
                    CoverageReport.Entry(
                        location: responder.location, node: path, index: responder.index,
                        kind: responder.kind.rawValue, filter: responder.filter, tests: 0))
            }
            for subscription in entry.subscriptions where !Self.isTestFile(subscription.location) {
                add(.subscription(node: path, location: subscription.location),
                    CoverageReport.Entry(
                        location: subscription.location, node: path, index: nil, kind: "subscribe",
                        filter: subscription.types, tests: 0))
            }
        }
    }

    private mutating func add(_ key: Key, _ entry: CoverageReport.Entry) {
        guard registered[key] == nil else { return }
        registered[key] = entry
        order.append(key)
    }

    /// One test reached these.
    mutating func reached(_ keys: Set<Key>) {
        for key in keys { tests[key, default: 0] += 1 }
    }

    static func isTestFile(_ location: String) -> Bool {
        CoverageReport.file(of: location).hasSuffix("_test.lua")
    }

    /// Sorted by file, line, node and position: the same order every run, whatever order
    /// the rules built the tree in (`pairs` order varies from run to run).
    func report() -> CoverageReport {
        let entries = order.map { key in
            var entry = registered[key]!
            entry.tests = tests[key] ?? 0
            return entry
        }
        return CoverageReport(entries: entries.sorted { a, b in
            let (fileA, lineA) = Self.split(a.location), (fileB, lineB) = Self.split(b.location)
            if fileA != fileB { return fileA < fileB }
            if lineA != lineB { return lineA < lineB }
            if a.node != b.node { return a.node < b.node }
            return (a.index ?? 0) < (b.index ?? 0)
        })
    }

    private static func split(_ location: String) -> (String, Int) {
        let file = CoverageReport.file(of: location)
        return (file, Int(location.dropFirst(file.count + 1)) ?? 0)
    }
}

/// What `--coverage` prints: each registered responder and subscription, by `file:line`, with
/// the number of tests that reached it, and a total per rules file.
package struct CoverageReport: Sendable {
    /// One registered responder or subscription, and how many tests reached it.
    public struct Entry: Sendable, Hashable {
        /// Where its code is, `file:line`.
        public var location: String
        /// The path of the node it is registered on.
        public var node: String
        /// Its position on the node (nil for a subscription).
        public var index: Int?
        /// The responder kind, or `subscribe`.
        public var kind: String
        /// The type names it takes, sorted; empty when it takes any type.
        public var filter: [String]
        /// How many tests reached it.
        public var tests: Int
    }

    /// How many of one rules file's responders and subscriptions the tests reached.
    public struct FileTotal: Sendable, Hashable {
        /// The rules file.
        public var file: String
        /// Entries at least one test reached.
        public var reached: Int
        /// Entries in the file.
        public var total: Int
        /// The share reached, 0 to 100; 100 for a file with no entries.
        public var percent: Double { total == 0 ? 100 : Double(reached) * 100 / Double(total) }
    }

    /// Every entry, sorted by file, line, node and position.
    public var entries: [Entry]

    /// Per rules file, in the order files first appear.
    public var files: [FileTotal] {
        var totals: [String: FileTotal] = [:]
        var order: [String] = []
        for entry in entries {
            let file = Self.file(of: entry.location)
            if totals[file] == nil {
                totals[file] = FileTotal(file: file, reached: 0, total: 0)
                order.append(file)
            }
            totals[file]!.total += 1
            if entry.tests > 0 { totals[file]!.reached += 1 }
        }
        return order.map { totals[$0]! }
    }

    /// The file part of `file:line`.
    static func file(of location: String) -> String {
        guard let colon = location.lastIndex(of: ":") else { return location }
        return String(location[..<colon])
    }
}
