import Logging

/// A responder tree with its Lua host: the embedding API.
///
/// ```swift
/// let hierarchy = try Hierarchy()
/// try hierarchy.run(file: "rules.lua")
/// let outcome = try hierarchy.trigger(.event("Tap"), at: "/app/feed")
/// ```
///
/// One hierarchy is one Lua state: use it from one thread at a time.
public final class Hierarchy {
    /// How a hierarchy is set up: tracing, nesting limit, modules, libraries, limits and logger.
    public struct Options: Sendable {
        /// How much of each dispatch is recorded in its outcome. Default off.
        public var traceLevel: TraceLevel = .off
        /// How deep triggers and reports may nest inside responders (contract §4); kept within
        /// `Hierarchy.depthLimits`.
        public var depthLimit = 100
        /// Folders `require` searches after the running script's own folder.
        public var modulePaths: [String] = []
        /// The sandbox (default) or the full standard library for trusted scripts.
        public var libraries = Libraries.sandboxed
        /// Instruction, time and memory bounds.
        public var limits = Limits()
        /// Where the library logs: relaxed-safety warnings (`warning`) and, unless `output` is
        /// set, the rules' `print` (`info`, metadata `source: print`). The default discards
        /// everything: the library never writes to the process's stderr or stdout on its own.
        public var logger = Logger(label: "LuaHierarchy", factory: { _ in SwiftLogNoOpLogHandler() })
        /// Options with the defaults: the sandbox, `Limits()`, no tracing, a silent logger.
        public init() {}
    }

    /// The logger the options gave (`Options.logger`).
    public let logger: Logger

    /// The root, `/`. Its name is "root".
    public let root: Node
    let dispatcher: Dispatcher
    private let host: LuaHost
    private var bridge: LuaBridge!
    private let modulePaths: [String]
    /// The sandbox's folder list for `require` (a registry reference), 0 with full libraries.
    private var moduleFolderList: Int32 = 0

    /// Receives errors that pass the root unhandled (AppKit's `presentError:`).
    public var presenter: ((PresentedError) -> Void)?
    /// Where Lua's `print` writes, one call per line (without the newline). Bytes that are not
    /// UTF-8 arrive as U+FFFD; set `byteOutput` to get them as the script made them.
    public var output: (String) -> Void
    /// When set, Lua's `print` writes here instead of `output`: the line's bytes exactly as
    /// the script made them (Lua strings are bytes, not always UTF-8), valid for the call. An
    /// error it throws (the output failed) is raised at the script's `print`.
    public var byteOutput: ((UnsafeBufferPointer<UInt8>) throws -> Void)?
    /// Sees every finished dispatch, nested ones included, with its nesting depth (1 = top).
    public var onDispatch: ((Outcome, _ depth: Int) -> Void)? {
        didSet {
            dispatcher.observer = onDispatch.map { observe in { result, depth in observe(result.outcome, depth) } }
        }
    }

    /// Sees every subscription a publish calls, before it runs (nested publishes too).
    public var onDelivery: ((PublishDelivery) -> Void)? {
        get { dispatcher.deliveryObserver }
        set { dispatcher.deliveryObserver = newValue }
    }

    /// Run-time checking of `triggers`/`reports` declarations (contract §6). Default relaxed.
    public var safety: SafetyLevel {
        get { dispatcher.safety }
        set { dispatcher.safety = newValue }
    }

    /// Shows alerts that a `handleAlertErrors` responder handled, and may return the host's
    /// recovery choice (used when the responder chose none and it is one of the options).
    public var alertPresenter: ((Alert) -> String?)? {
        get { dispatcher.alertPresenter }
        set { dispatcher.alertPresenter = newValue }
    }

    /// Receives relaxed-safety warnings, each (domain, type, node) once. Default: the
    /// logger, at `warning` (`SafetyWarning.writeToStandardError` writes them as the CLI does).
    public var onSafetyWarning: (SafetyWarning) -> Void

    /// Whether errors from a detached subtree reach the presenter. Default drop (contract §2).
    public var detachedPolicy: DetachedPolicy {
        get { dispatcher.detachedPolicy }
        set { dispatcher.detachedPolicy = newValue }
    }

    /// How much of each dispatch is recorded in its outcome's `trace`.
    public var traceLevel: TraceLevel {
        get { dispatcher.traceLevel }
        set { dispatcher.traceLevel = newValue }
    }

    /// How deep triggers and reports may nest inside responders; a value outside
    /// `depthLimits` is taken as the nearest bound.
    public var depthLimit: Int {
        get { dispatcher.depthLimit }
        set { dispatcher.depthLimit = Self.depthLimits.clamped(newValue) }
    }

    /// The nesting limits the host can honour: Lua's C stack allows no deeper (see Dispatcher).
    public static var depthLimits: ClosedRange<Int> { Dispatcher.depthLimits }

    /// A hierarchy with only the root, and a Lua host set up as `options` say. Throws when
    /// the Lua host cannot be set up.
    public init(options: Options = Options()) throws {
        root = Node(name: "root", tree: TreeToken(), isRoot: true)
        dispatcher = Dispatcher(root: root)
        modulePaths = options.modulePaths
        let logger = options.logger
        self.logger = logger
        output = { line in logger.info("\(line)", metadata: ["source": "print"]) }
        onSafetyWarning = { warning in
            logger.warning(
                "\(warning)",
                metadata: ["type": "\(warning.type)", "domain": "\(warning.domain.rawValue)", "node": "\(warning.node)"])
        }
        host = try LuaHost(limits: options.limits, libraries: options.libraries)
        // The tree's own copies count against the host's memory cap (contract §7).
        root.tree.meter = host
        dispatcher.traceLevel = options.traceLevel
        dispatcher.depthLimit = Self.depthLimits.clamped(options.depthLimit)
        dispatcher.presenter = { [unowned self] in self.presenter?($0) }
        dispatcher.isStopping = { [unowned host] in host.interruptTripped }
        dispatcher.subscriberRaised = { [unowned host] error in host.noteRaised(type: error.type) }
        dispatcher.onSafetyWarning = { [unowned self] in self.onSafetyWarning($0) }
        let sandbox = try host.openLibraries(options.libraries)
        moduleFolderList = sandbox.folders
        bridge = try LuaBridge(host: host, hierarchy: self)
        dispatcher.engine = bridge.engine
        bridge.engine.nodeAtPath = { [unowned self] path throws(TreeError) in try node(at: path) }
        if options.libraries == .sandboxed { try host.sealGlobals(sandbox.seal) }
        setModuleFolders(nil)
    }

    deinit { host.close() }

    // MARK: Tree

    /// The node at `path` (`/` or `/a/b`), or nil. Throws on a malformed path.
    public func node(at path: String) throws(TreeError) -> Node? {
        var node = root
        for name in try Hierarchy.names(in: path) {
            guard let child = node.existingChild(name) else { return nil }
            node = child
        }
        return node
    }

    /// The node at `path`, created with its missing ancestors.
    public func makeNode(at path: String) throws(TreeError) -> Node {
        var node = root
        for name in try Hierarchy.names(in: path) { node = try node.child(name) }
        return node
    }

    /// The names along `path`: none for `/`; refuses a path without the leading `/`, with an
    /// empty name (`//`, a trailing `/`) or a name Node refuses.
    static func names(in path: String) throws(TreeError) -> [String] {
        guard path.first == "/" else { throw .invalidPath(path) }
        if path == "/" { return [] }
        let names = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !names.contains(where: \.isEmpty) else { throw .invalidPath(path) }
        return names
    }

    // MARK: Dispatch

    /// Triggers `event` (a string or a map with a string `type`) at `path`.
    public func trigger(_ event: Value, at path: String) throws -> Outcome {
        try trigger(event, at: existingNode(path))
    }

    /// Triggers `event` (a string or a map with a string `type`) at `node`, a node of this
    /// hierarchy.
    public func trigger(_ event: Value, at node: Node) throws -> Outcome {
        guard let message = Message(event, as: .event) else { throw HierarchyError.invalidEvent("\(event)") }
        return try dispatch(message, at: node)
    }

    /// Reports `error` (a string, or a map whose `type` is a string or absent) at `path`.
    /// Its `where` defaults to the Swift call site.
    public func report(_ error: Value, at path: String, file: StaticString = #fileID, line: UInt = #line) throws -> Outcome {
        try report(error, at: existingNode(path), file: file, line: line)
    }

    /// Reports `error` at `node`, a node of this hierarchy. Its `where` defaults to the Swift
    /// call site.
    public func report(_ error: Value, at node: Node, file: StaticString = #fileID, line: UInt = #line) throws -> Outcome {
        try report(error, at: node, where: "\(file):\(line)")
    }

    /// Reports `error` at `node` with `where` (unless the error has one) set to `location`,
    /// e.g. the input line it came from.
    public func report(_ error: Value, at node: Node, where location: String) throws -> Outcome {
        guard var message = Message(error, as: .error) else { throw HierarchyError.invalidError("\(error)") }
        message.setIfAbsent("where", to: location)
        return try dispatch(message, at: node)
    }

    private func dispatch(_ message: consuming Message, at node: Node) throws -> Outcome {
        try dispatchKeepingValue(message, at: node).outcome
    }

    /// A dispatch whose final value stays as the scripting side holds it (no conversion):
    /// for callers that only write it out. The message is consumed: it moves into the walk
    /// rather than being copied there (a copy and a destroy of its payload and type).
    /// What the state has done so far, deterministically (the scaling test's measure): Lua
    /// instructions counted by the hook (only under an instruction budget) and host work
    /// charged, in instructions' worth; bytes allocated for it (the Lua heap's growth and the
    /// host's charged copies). Neither is ever reset.
    var workDone: (units: Int, bytes: Int) { host.workDone }

    func dispatchKeepingValue(_ message: consuming Message, at node: Node) throws -> DispatchResult {
        guard node.tree === root.tree else { throw HierarchyError.foreignNode }
        // A closure cannot consume what it captures; it can take it out of an Optional.
        var pending = Optional(message)
        return try withDispatchBudget { () throws(DispatchDepthExceeded) in
            try dispatcher.dispatch(pending.take()!, at: node)
        }
    }

    /// Runs `body` inside a dispatch's budget: a top-level entry from Swift, or nested in the
    /// running one (contract §7).
    func withDispatchBudget<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try host.withBudget(.dispatch, body)
    }

    /// Names the input and line being answered, for the one message the process can still
    /// write if a rule gets stuck in one of Lua's own C calls (LuaHost.nameEntries).
    func nameEntries(_ name: String?, line: Int) {
        host.nameEntries(name, line: line)
    }

    /// Marks the state as a shadow candidate's, which the watchdog never ends the process for
    /// (LuaHost.markBackground).
    func markBackground() {
        host.markBackground()
    }

    /// The shallowest dispatch depth whose unhandled errors reach `presenter` (Dispatcher).
    var presentsFromDepth: Int {
        get { dispatcher.presentsFromDepth }
        set { dispatcher.presentsFromDepth = newValue }
    }

    /// Whether what the hierarchy holds fits under its memory cap, after a full collection
    /// if it seemed not to (true without a cap).
    func memoryUsedFitsTheCap() -> Bool {
        host.memoryUsedFitsTheCap()
    }

    /// How the rules failed in the last top-level entry (a request line's): kept until the
    /// next begins.
    var ruleFailures: RuleFailures { host.ruleFailures }

    /// Answers a run of `luahier dispatch` request lines in C (LuaLines.swift).
    func answerRun(
        chunk: UnsafeRawBufferPointer, lines: [LuaEngine.RunLine], from: Int, input: ContiguousArray<CChar>,
        presented: UnsafePointer<Int>, startBy: Double, keys: ResponderKeyNote? = nil, tape: UnsafePointer<UInt64>? = nil,
        deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> LuaEngine.Run {
        bridge.engine.answerRun(
            chunk: chunk, lines: lines, from: from, input: input, presented: presented, startBy: startBy, keys: keys,
            tape: tape, deliver: deliver)
    }

    /// What the JSON text `bytes` reads as in this hierarchy's Lua through a tape (the way
    /// request lines are read), read back: for tests that hold the tape to the direct reader.
    func readJSONThroughTape(_ bytes: UnsafeRawBufferPointer) throws -> Value {
        try host.readJSONThroughTape(bytes)
    }

    /// What the JSON text `bytes` reads as in this hierarchy's Lua (a payload's reading), read
    /// back: for tests that hold the reader's Lua side to its Swift side.
    func readJSONThroughLua(_ bytes: UnsafeRawBufferPointer) throws -> Value {
        try host.readJSONThroughLua(bytes)
    }

    private func existingNode(_ path: String) throws -> Node {
        guard let node = try node(at: path) else { throw HierarchyError.noSuchNode(path) }
        return node
    }

    // MARK: Scripts

    /// Runs the Lua file at `path` (text only; `-` reads standard input, as `lua.c` does, and
    /// messages name it `stdin`) with `arguments` as `...` and in `arg`. `commandLine` is
    /// what came before the script on a command line: it goes to `arg[-n] ... arg[-1]`.
    /// A first line starting with `#` (a shebang) is skipped. `require` looks in the file's
    /// folder first (the current one for stdin).
    public func run(file path: String, arguments: [String] = [], commandLine: [String] = []) throws(ScriptError) {
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        setModuleFolders(folder)
        try host.runChunk(
            path == "-" ? .standardInput : .file(path), name: path, arguments: arguments, commandLine: commandLine)
    }

    /// Runs the rules file `path` from its `text`, read once by a pool for all its states, as
    /// `run(file:)` would run the file. `require` takes the module texts in `modules` instead
    /// of reading their files, and the texts of every module it loads are returned (the
    /// sandbox only; full libraries return none). `sealed` (a bundle's rules): `require`
    /// finds only `modules`, from the rules' folder alone, and never reads a file; it needs
    /// the sandbox.
    func run(
        file path: String, text: [UInt8], modules: [String: [UInt8]], arguments: [String], sealed: Bool = false
    ) throws(ScriptError) -> [String: [UInt8]] {
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        if sealed {
            guard moduleFolderList != 0 else {
                throw ScriptError(type: "BundleError", message: "a bundle's rules run in the sandbox only: its require reads the bundle, never the disk")
            }
            host.setFolders([folder], ref: moduleFolderList)
        } else {
            setModuleFolders(folder)
        }
        if moduleFolderList != 0 { host.recordModuleSources(modules, sealed: sealed, ref: moduleFolderList) }
        try host.runChunk(.text(text), name: path, arguments: arguments)
        return moduleFolderList != 0 ? host.recordedModuleSources(ref: moduleFolderList) : [:]
    }

    /// Runs the rules of `bundle` (read and checked by ``RuleBundle/init(bytes:publicKey:maxBytes:)``)
    /// as `run(file:)` runs a file, named by the bundle's entry (`rules.lua:3` in messages):
    /// `require` finds the bundle's modules only, never a file on disk. Needs the sandbox.
    public func run(bundle: RuleBundle, arguments: [String] = []) throws(ScriptError) {
        _ = try run(file: bundle.entry, text: bundle.rulesText, modules: bundle.modules, arguments: arguments, sealed: true)
    }

    /// Runs Lua `source`; `chunkName` is how messages name it (`rules.lua` reads `rules.lua:3:`).
    public func run(source: String, chunkName: String = "source", arguments: [String] = []) throws(ScriptError) {
        try host.runChunk(.source(source), name: chunkName, arguments: arguments)
    }

    /// Makes `body` callable from Lua as the global function `name`. Its arguments arrive as
    /// plain values; a thrown error is raised in Lua (and so becomes a reported error).
    public func register(function name: String, _ body: @escaping ([Value]) throws -> Value) {
        host.setGlobalFunction(name, body)
    }

    /// `register(function:)`, its arguments read as an outcome's writer reads a value: what
    /// plain data cannot hold is described, not refused (`luahier test`'s report of a trace).
    func register(describing name: String, _ body: @escaping ([Value]) throws -> Value) {
        host.setGlobalFunction(name, describing: true, body)
    }

    /// Points `require` at `folder` (if any) and the configured module paths.
    private func setModuleFolders(_ folder: String?) {
        let folders = (folder.map { [$0] } ?? []) + modulePaths
        if moduleFolderList != 0 {
            host.setFolders(folders, ref: moduleFolderList)
        } else {
            host.setPackagePath(folders.flatMap { ["\($0)/?.lua", "\($0)/?/init.lua"] }.joined(separator: ";"))
        }
    }

    // MARK: For tests

    /// The Lua stack height of the running thread: 0 between calls.
    var luaStackTop: Int32 { host.stackTop }

    /// How many live tables carry a domain tag (luahier_tags.h), how many slots hold them, the
    /// longest probe a tag went on with, and the hash's seed.
    var domainTags: (tagged: Int, slots: Int, longestProbe: Int, seed: UInt64) { host.domainTagCounts }

    /// Sets the domain tags' seed while none is tagged.
    func setDomainTagSeed(_ seed: UInt64) { host.setDomainTagSeed(seed) }

    /// How many signals the watchdog has sent in this process (Sources/CLuaHost/watchdog.c).
    static var watchdogSignals: Int { LuaHost.watchdogSignals }

    /// The Lua the engine runs, as `_VERSION` says it: `Lua 5.4`.
    public static var luaVersion: String { LuaHost.luaVersion }

    /// Whether the Lua state has the count hook (only with an instruction or time limit).
    var countHookInstalled: Bool { host.countHookInstalled }

    /// For tests: `value` pushed into Lua and written by the C writer (nil when it declined,
    /// with its LUAHIER_JSON_* result), beside what `JSONWriter` writes for Lua's reading of it.
    func jsonTexts(of value: Value, limit: Int = .max) throws -> (fast: String?, result: Int32, reading: String) {
        try host.jsonTexts(of: value, limit: limit)
    }

    /// How many dispatches the engine ran, and how many plans it made (LuaEngine.swift).
    var engineCounts: (dispatches: Int, plans: Int) { bridge.engine.counts }

    /// The engine, for tests.
    var bridgeEngine: LuaEngine { bridge.engine }

    /// What the rules gave `hier.maskDecision`: run on each decision record this state makes.
    var decisionMask: LuaDecisionMask?

    /// Bytes the Lua state holds now, and at most since it was created.
    public var luaMemory: (used: Int, peak: Int) { (host.memoryUsed, host.memoryPeak) }

    /// For differential tests: the sandbox's pattern functions as the global table `name`.
    func exposePatternFunctions(as name: String) throws {
        try host.setGlobalPatternFunctions(name)
    }

    /// Runs a full garbage collection (finalizers included), as the host.
    public func collectGarbage() {
        host.collectGarbage()
    }
}

extension ClosedRange {
    /// `value`, or the nearest bound when it lies outside.
    func clamped(_ value: Bound) -> Bound { Swift.min(Swift.max(value, lowerBound), upperBound) }
}
