#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `luahier test` (contract §9): runs the tests of `*_test.lua` files, each test on a fresh
/// hierarchy with the file's rules loaded, so no test sees another's state, and one that
/// fails, raises or trips a limit never stops the others. With `coverage`, it counts which
/// registered responders and subscriptions each test reached.
package struct RuleTestRunner {
    /// Options for every test's hierarchy (sandbox and limits); tracing is always full.
    public var options: Hierarchy.Options
    /// Runs only tests whose name contains this text (nil: all of them).
    public var filter: String?
    /// Counts reached responders and subscriptions.
    public var coverage: Bool
    /// Where the tests' `print` goes.
    public var output: (String) -> Void

    /// A runner with these options; by default all tests, no coverage, and `print` for output.
    public init(options: Hierarchy.Options = Hierarchy.Options(), filter: String? = nil, coverage: Bool = false,
                output: @escaping (String) -> Void = { print($0) }) {
        self.options = options
        self.filter = filter
        self.coverage = coverage
        self.output = output
    }

    /// The test files under `paths`, sorted: a file is taken as it is; a folder is searched
    /// for `*_test.lua`, skipping hidden folders and `.build`. Throws for a path that does not
    /// exist.
    public static func testFiles(in paths: [String]) throws(TestDiscoveryError) -> [String] {
        var found: [String] = []
        for path in paths {
            var status = stat()
            guard stat(path, &status) == 0 else { throw TestDiscoveryError(path: path, reason: "no such file or folder") }
            if (status.st_mode & S_IFMT) == S_IFDIR {
                found += filesBelow(path)
            } else {
                found.append(path)
            }
        }
        var seen = Set<String>()
        return found.filter { seen.insert($0).inserted }
    }

    private static func filesBelow(_ folder: String) -> [String] {
        var result: [String] = []
        var pending = [folder]
        while let current = pending.popLast() {
            guard let directory = opendir(current) else { continue }
            defer { closedir(directory) }
            var names: [(String, Bool)] = []
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix(".") { continue }
                let path = current == "." ? name : current + "/" + name
                var status = stat()
                guard stat(path, &status) == 0 else { continue }
                names.append((path, (status.st_mode & S_IFMT) == S_IFDIR))
            }
            for (path, isFolder) in names.sorted(by: { $0.0 > $1.0 }) {
                if isFolder { pending.append(path) } else if path.hasSuffix("_test.lua") { result.append(path) }
            }
        }
        return result.sorted()
    }

    /// Runs every test of `files`, in order, calling `report` as each ends.
    public func run(files: [String], report: (TestResult) -> Void = { _ in }) -> TestRun {
        var run = TestRun()
        let started = Self.now()
        var coverage = CoverageCounter()
        for file in files {
            run.files += 1
            runFile(file, coverage: &coverage) { result in
                run.results.append(result)
                report(result)
            }
        }
        run.seconds = Self.now() - started
        if self.coverage { run.coverage = coverage.report() }
        return run
    }

    /// One test file: its tests listed once, then each run on its own hierarchy.
    private func runFile(_ file: String, coverage: inout CoverageCounter, report: (TestResult) -> Void) {
        let started = Self.now()
        var listed: [(name: String, location: String)] = []
        let first: Session
        do {
            first = try Session(file: file, runner: self)
            try first.hierarchy.run(source: "for i = 1, __luahier_count() do __luahier_listed(__luahier_name(i)) end",
                                    chunkName: "=luahier test")
            listed = first.listed
        } catch {
            report(TestResult(file: file, name: "(loading \(file))", location: file, status: .error,
                              seconds: Self.now() - started, failure: TestFailure(message: Self.describe(error))))
            return
        }
        if listed.isEmpty {
            report(TestResult(file: file, name: "(no tests in \(file))", location: file, status: .error, seconds: 0,
                              failure: TestFailure(message: "\(file) defines no test: call test(name, function() ... end)")))
            return
        }
        var reuse: Session? = first
        for (index, test) in listed.enumerated() {
            if let filter, !test.name.contains(filter) {
                report(TestResult(file: file, name: test.name, location: test.location, status: .skipped, seconds: 0))
                continue
            }
            let started = Self.now()
            var result = TestResult(file: file, name: test.name, location: test.location, status: .passed, seconds: 0)
            do {
                // The listing's hierarchy ran nothing but the file: the first test takes it.
                let session = try reuse ?? Session(file: file, runner: self)
                reuse = nil
                if self.coverage { coverage.register(session.hierarchy.describeTree()) }
                // What the rules did as they loaded is not the test's.
                session.reached.removeAll()
                session.presented.removeAll()
                session.deliveries.removeAll()
                try session.hierarchy.run(source: "__luahier_run(\(index + 1))", chunkName: "=luahier test")
                if let outcome = session.result {
                    result.status = outcome.status
                    result.failure = outcome.failure
                } else {
                    result.status = .error
                    result.failure = TestFailure(message: "the test ended without a result")
                }
                if self.coverage { coverage.reached(session.reached) }
            } catch {
                result.status = .error
                result.failure = TestFailure(message: Self.describe(error))
            }
            result.seconds = Self.now() - started
            report(result)
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? ScriptError {
            let text = "\(error.location.map { "\($0): " } ?? "")\(error.type): \(error.message)"
            return error.traceback.map { text + "\n" + $0 } ?? text
        }
        return "\(error)"
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// One fresh hierarchy with the prelude and the test file loaded.
    private final class Session {
        let hierarchy: Hierarchy
        var listed: [(name: String, location: String)] = []
        var result: (status: TestResult.Status, failure: TestFailure?)?
        var presented: [PresentedError] = []
        var deliveries: [PublishDelivery] = []
        /// Coverage keys of what this test reached.
        var reached = Set<CoverageCounter.Key>()

        init(file: String, runner: RuleTestRunner) throws {
            var options = runner.options
            options.traceLevel = .full
            hierarchy = try Hierarchy(options: options)
            hierarchy.output = runner.output
            hierarchy.onSafetyWarning = { _ in }
            hierarchy.presenter = { [unowned self] error in presented.append(error) }
            hierarchy.onDelivery = { [unowned self] delivery in
                deliveries.append(delivery)
                reached.insert(.subscription(node: delivery.node, location: delivery.location))
            }
            hierarchy.onDispatch = { [unowned self] outcome, _ in
                for step in outcome.trace ?? [] {
                    reached.insert(.responder(node: step.node, index: step.responder.index, location: step.responder.location))
                }
            }
            // A failure's trace holds copies of the values, keys of every type and all: they
            // are described in the report as in an outcome, never a reason for an error.
            hierarchy.register(describing: "__luahier_result") { [unowned self] arguments in
                result = Self.result(from: arguments.first ?? .null)
                return .null
            }
            hierarchy.register(function: "__luahier_listed") { [unowned self] arguments in
                listed.append((Self.text(arguments.first), Self.text(arguments.dropFirst().first)))
                return .null
            }
            hierarchy.register(function: "__luahier_presented") { [unowned self] _ in
                .array(presented.map { .map(["at": .string($0.reportedAt), "error": $0.error, "detached": .bool($0.detached)]) })
            }
            hierarchy.register(function: "__luahier_deliveries") { [unowned self] _ in
                defer { deliveries.removeAll() }
                return .array(deliveries.map { .map(["node": .string($0.node), "where": .string($0.location), "type": .string($0.type)]) })
            }
            try hierarchy.run(source: TestPrelude.source, chunkName: TestPrelude.chunkName)
            try hierarchy.run(file: file)
        }

        /// A Lua string as text, its bytes that are not UTF-8 as U+FFFD.
        static func text(_ value: Value?) -> String {
            switch value {
            case .string(let text)?: return text
            case .bytes(let bytes)?: return String(decoding: bytes, as: UTF8.self)
            default: return "?"
            }
        }

        static func result(from value: Value) -> (TestResult.Status, TestFailure?) {
            switch value["status"]?.stringValue {
            case "passed": return (.passed, nil)
            case let status:
                var failure = TestFailure(message: value["message"].map { Self.text($0) } ?? "failed")
                failure.location = value["where"]?.stringValue
                failure.expected = value["expected"]?.stringValue
                failure.actual = value["actual"]?.stringValue
                if case .array(let steps)? = value["trace"] { failure.trace = steps.compactMap(TraceStep.init(lua:)) }
                return (status == "failed" ? .failed : .error, failure)
            }
        }
    }
}

/// A test path that cannot be searched.
package struct TestDiscoveryError: Error, CustomStringConvertible {
    /// The path as it was given.
    public var path: String
    /// Why it cannot be searched, e.g. `no such file or folder`.
    public var reason: String
    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }
}

/// How one test went.
package struct TestResult: Sendable {
    /// How a test ended.
    public enum Status: String, Sendable {
        /// Every assertion held.
        case passed
        /// An assertion did not hold.
        case failed
        /// The test raised an error or tripped a limit (or its file did not load).
        case error
        /// Left out by the filter.
        case skipped
    }

    /// The test file it is in.
    public var file: String
    /// The name the test was given.
    public var name: String
    /// Where the test was declared, `file:line`.
    public var location: String
    /// How it ended.
    public var status: Status
    /// How long it ran, in seconds; 0 for a skipped test.
    public var seconds: Double
    /// Why it failed or raised; nil for one that passed or was skipped.
    public var failure: TestFailure?
}

/// Why a test failed: the assertion's message and place, expected against actual, and the
/// trace of the dispatch it was about.
package struct TestFailure: Sendable {
    /// What went wrong: the assertion's message, or the error's description.
    public var message: String
    /// Where the assertion failed, `file:line`, when known.
    public var location: String?
    /// What the assertion expected, when it says.
    public var expected: String?
    /// What it found instead, when it says.
    public var actual: String?
    /// The trace of the dispatch the assertion was about, when there is one.
    public var trace: [TraceStep]?

    /// A failure with only a message.
    public init(message: String) { self.message = message }
}

/// A whole run.
package struct TestRun: Sendable {
    /// Every test's result, in the order they ran.
    public var results: [TestResult] = []
    /// How many test files were run.
    public var files = 0
    /// How long the whole run took, in seconds.
    public var seconds = 0.0
    /// Which responders and subscriptions the tests reached; nil unless coverage was asked for.
    public var coverage: CoverageReport?

    /// How many tests ended with `status`.
    public func count(_ status: TestResult.Status) -> Int { results.filter { $0.status == status }.count }
    /// Every test that ran passed.
    public var succeeded: Bool { results.allSatisfy { $0.status == .passed || $0.status == .skipped } }
}
