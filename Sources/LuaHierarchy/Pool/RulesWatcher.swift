/// Reloads a pool when its rules change (`--watch`: the rules file or a module it loaded) or
/// on SIGHUP, from a thread of its own, and reports each reload.
///
/// It polls: every `interval` it looks for a hang-up, and compares `stat` of the running
/// revision's files with what it saw. A change is reloaded once the files hold still for one
/// more interval (an editor saves in several steps). A reload that fails leaves the running
/// revision answering; the next change tries again.
public final class RulesWatcher: @unchecked Sendable {
    /// Why a reload ran.
    public enum Trigger: String, Sendable {
        case fileChanged = "file changed"
        case hangUp = "SIGHUP"
    }

    private let pool: RulesPool
    private let watchesFiles: Bool
    private let interval: Double
    private let report: @Sendable (ReloadResult, Trigger) -> Void
    private let monitor = Monitor()
    private var running = true
    private var thread: LargeStack.Joinable?

    /// Starts watching: the files of the running revision when `files`, SIGHUP when
    /// `hangUp` (its handler is installed here). `report` gets each reload's result, from
    /// the watcher's thread.
    public init(
        pool: RulesPool, files: Bool, hangUp: Bool, interval: Double = 0.2,
        report: @escaping @Sendable (ReloadResult, Trigger) -> Void
    ) {
        self.pool = pool
        self.watchesFiles = files
        self.interval = interval
        self.report = report
        if hangUp { ServiceSignals.handleHangUp() }
        thread = LargeStack.spawn(size: 512 << 10) { [self] in watch(hangUp: hangUp) }
    }

    /// Stops watching. `waiting` (the default): returns once a reload under way completed;
    /// call it before the pool shuts down, since the watcher's thread holds it until then.
    /// Without, it returns at once, and a reload under way goes on until it loads, fails or
    /// the process exits (a server that must stop within its grace does not wait for a
    /// rules file that takes long to load).
    public func stop(waiting: Bool = true) {
        monitor.locked {
            running = false
            monitor.broadcast()
        }
        if waiting { thread?.join() } else { thread?.detach() }
        thread = nil
    }

    private func watch(hangUp: Bool) {
        // As the running revision read them: a change since (while it loaded, or before this
        // thread began) is a change.
        var stamps = pool.loadedStamps
        while monitor.locked({ () -> Bool in
            if running { monitor.wait(until: Monitor.now + interval) }
            return running
        }) {
            var trigger: Trigger?
            if hangUp && ServiceSignals.takeHangUp() { trigger = .hangUp }
            if trigger == nil && watchesFiles && Self.stamps(of: Array(stamps.keys)) != stamps {
                trigger = .fileChanged
                // Until the files hold still (at most ~10 intervals), so a save is read whole.
                var seen = Self.stamps(of: Array(stamps.keys))
                for _ in 0..<10 {
                    monitor.locked { monitor.wait(until: Monitor.now + interval) }
                    let now = Self.stamps(of: Array(stamps.keys))
                    if now == seen { break }
                    seen = now
                }
            }
            guard let trigger else { continue }
            // Seen before the reload reads them: a change during the reload is seen next time.
            stamps = Self.stamps(of: Array(stamps.keys))
            let result = pool.reloadBlocking()
            if case .loaded = result { stamps = pool.loadedStamps }
            report(result, trigger)
        }
    }

    private static func stamps(of files: [String]) -> [String: FileStamp] {
        Dictionary(uniqueKeysWithValues: files.map { ($0, FileStamp(path: $0)) })
    }
}
