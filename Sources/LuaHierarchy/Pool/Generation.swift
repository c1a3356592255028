import Dispatch

/// The states of one revision: a thread each, with its own hierarchy and the rules loaded
/// from the same text, taking jobs from one queue (contract §7: one state, one thread).
///
/// A generation loads in full before it answers anything: the first state loads the rules
/// from the text the pool read once, recording the text of every module they `require`;
/// the others load the same texts, never the disk, so no two states of a revision differ.
/// Retired, it answers the jobs already queued to it, then its threads close their states
/// and end.
final class Generation: @unchecked Sendable {
    /// Known once the first state loaded (the modules are part of the hash).
    private(set) var revision: Revision!
    /// The revision's files as `stat` saw them when they were read (the rules file's before
    /// its text was read): what `--watch` compares with, so a change made while the pool
    /// loaded, or before a watcher started, is still a change.
    private(set) var stamps: [String: FileStamp] = [:]
    /// `,"revision":{...}` for the outcomes it writes, when the pool stamps them.
    private(set) var stamp: [UInt8] = []

    private let monitor = Monitor()
    // Guarded by `monitor`.
    private var jobs: [PoolJob?] = []
    private var head = 0
    /// Jobs still in `jobs` that their wait bound already refused (a worker skips them).
    private var expiredInQueue = 0
    private var idle = 0
    /// Since when every worker has been busy, none coming free (nil while one is free or
    /// before they all started): how long a request queued now may have to wait.
    private var allBusySince: ContinuousClock.Instant?
    private var retired = false
    /// When the timer that refuses the queued jobs whose wait bound passed is due, if one is
    /// set: one for the queue, at its earliest bound, not one per job (a timer per waiting
    /// request was a cost of every request behind a busy state).
    private var reaperDue: DispatchTime?
    private var loaded = 0
    private var loadFailure: ScriptError?
    private var modules: [String: [UInt8]]?
    private var threads: [LargeStack.Joinable] = []

    /// Workers in this generation.
    let size: Int

    /// Loads `text`, the rules file `options.rulesFile`, into `options.workers` new states, as
    /// revision `number`. Returns once every state is ready to answer; throws the first load
    /// failure (every state it made is closed then).
    init(options: RulesPool.Options, text: [UInt8], stamp: FileStamp, number: Int) throws(ScriptError) {
        size = max(1, options.workers)
        stamps = [options.rulesFile: stamp]
        for index in 0..<size {
            guard let thread = LargeStack.spawn({ [self] in run(index: index, options: options, text: text, number: number) }) else {
                fail(ScriptError(type: "HostError", message: "could not start \(size) worker threads"))
                break
            }
            monitor.locked { threads.append(thread) }
        }
        // Every worker reports, loaded or failed (those waiting for the first one's modules
        // fail with it).
        let failure: ScriptError? = monitor.locked {
            while loaded < threads.count { monitor.wait() }
            return loadFailure
        }
        if let failure {
            retire()
            join()
            throw failure
        }
    }

    // MARK: The queue

    /// Queues `job`; `.retired` once retired (the pool then queues it to the generation
    /// after). A job that must wait and has a wait bound is refused by a timer when the bound
    /// passes before a worker takes it, so a request never waits longer than its bound, even
    /// while every worker is stuck in a long dispatch.
    func enqueue(_ job: PoolJob, maxWaiting: Int) -> PoolJob.Admission {
        let (admission, reapAt): (PoolJob.Admission, DispatchTime?) = monitor.locked {
            if retired { return (.retired, nil) }
            let waiting = jobs.count - head - expiredInQueue
            if idle == 0 && waiting >= maxWaiting { return (.overloaded, nil) }
            jobs.append(job)
            // Only the workers' `take` waits on the condition once the states are loaded, and
            // one job needs one of them.
            monitor.signal()
            guard idle <= waiting else { return (.started, nil) }
            guard let wait = job.maxWait, wait.isFinite else { return (.waiting, nil) }
            let deadline = DispatchTime.now() + wait
            job.deadline = deadline
            if let due = reaperDue, due <= deadline { return (.waiting, nil) }
            reaperDue = deadline
            return (.waiting, deadline)
        }
        if let reapAt { setReaper(at: reapAt) }
        return admission
    }

    /// The reaper holds the generation weakly, and the jobs not at all: a job holds its
    /// request (a batch's body and lines), and one a worker took and answered must go then,
    /// not when its wait bound passes. Held for `--max-wait` after every request that waited
    /// (behind a single worker, most of them), those bodies grew `serve`'s memory with every
    /// batch.
    private func setReaper(at time: DispatchTime) {
        DispatchQueue.global().asyncAfter(deadline: time) { [weak self] in self?.reap(due: time) }
    }

    /// Refuses every queued job whose wait bound passed and no worker took, and sets the
    /// reaper again for the earliest bound still to come, if any. A timer set for another
    /// time than `reaperDue` was superseded by an earlier one, which does this.
    private func reap(due: DispatchTime) {
        let now = DispatchTime.now()
        let (refused, next): ([PoolJob], DispatchTime?) = monitor.locked {
            guard reaperDue == due else { return ([], nil) }
            var refused: [PoolJob] = []
            var next: DispatchTime?
            for index in head..<jobs.count {
                guard let job = jobs[index], !job.taken, let deadline = job.deadline else { continue }
                if deadline <= now {
                    job.taken = true
                    expiredInQueue += 1
                    refused.append(job)
                } else if next.map({ deadline < $0 }) ?? true {
                    next = deadline
                }
            }
            reaperDue = next
            return (refused, next)
        }
        for job in refused { job.refuse() }
        if let next { setReaper(at: next) }
    }

    /// The next job, waiting for one; nil once retired and drained.
    private func take() -> PoolJob? {
        monitor.locked {
            idle += 1
            allBusySince = nil
            defer {
                idle -= 1
                if idle == 0 { allBusySince = .now }
            }
            while true {
                while head == jobs.count && !retired { monitor.wait() }
                guard head < jobs.count, let job = jobs[head] else { return nil }
                jobs[head] = nil
                head += 1
                if head > 64 && head * 2 > jobs.count {
                    jobs.removeFirst(head)
                    head = 0
                }
                if job.taken {
                    expiredInQueue -= 1   // refused while it waited
                    continue
                }
                job.taken = true
                return job
            }
        }
    }

    /// Takes no more jobs: the workers answer those queued and end.
    func retire() {
        monitor.locked {
            retired = true
            monitor.broadcast()
        }
    }

    /// Waits until every thread ended (after `retire`). Each thread is joined once: a second
    /// call, or `detach` after it, finds none.
    func join() {
        for thread in takeThreads() { thread.join() }
    }

    /// Lets the threads end unwaited for (after `retire`), their stacks given back as they do:
    /// for a pool let go without a shutdown.
    func detach() {
        for thread in takeThreads() { thread.detach() }
    }

    private func takeThreads() -> [LargeStack.Joinable] {
        monitor.locked {
            defer { threads = [] }
            return threads
        }
    }

    /// Jobs queued and not yet taken.
    var waiting: Int { monitor.locked { jobs.count - head - expiredInQueue } }

    /// Its workers' business now: free ones, jobs waiting, and how long all have been busy.
    var load: RulesPool.Load {
        monitor.locked {
            let busyFor = allBusySince.map { ContinuousClock.now - $0 }
            return RulesPool.Load(
                workers: size, idle: idle, waiting: jobs.count - head - expiredInQueue,
                allBusyFor: busyFor.map { Double($0.components.seconds) + Double($0.components.attoseconds) * 1e-18 })
        }
    }

    // MARK: A worker

    private func run(index: Int, options: RulesPool.Options, text: [UInt8], number: Int) {
        if options.background { ThreadPriority.background() }
        let worker: PoolWorker
        do {
            // The first state reads the modules from disk (a bundle's: from the bundle only);
            // the others wait for its texts.
            let known: [String: [UInt8]] = try monitor.locked { () throws(ScriptError) -> [String: [UInt8]] in
                guard index > 0 else { return options.bundle?.modules ?? [:] }
                while modules == nil && loadFailure == nil { monitor.wait() }
                if let loadFailure { throw loadFailure }
                return modules!
            }
            let hierarchy = try Hierarchy(options: options.hierarchy)
            if options.background { hierarchy.markBackground() }
            let request = RequestTag()
            if let print = options.printForRequest {
                hierarchy.output = { [request] line in print(line, request.id) }
            } else if let print = options.print {
                hierarchy.output = print
            }
            if let setup = options.setup {
                do {
                    try setup(hierarchy)
                } catch let error as ScriptError {
                    throw error
                } catch {
                    throw ScriptError(type: "SetupError", message: "the pool's setup failed: \(error)")
                }
            }
            hierarchy.presenter = nil
            if index == 0, number == 1, let present = options.presentWhileLoading { hierarchy.presenter = { present($0) } }
            let read = try hierarchy.run(
                file: options.rulesFile, text: text, modules: known, arguments: options.arguments, sealed: options.bundle != nil)
            hierarchy.presenter = nil
            if index == 0 {
                let revision = Revision(
                    number: number, hash: Revision.hash(path: options.rulesFile, rules: text, modules: read),
                    files: [options.rulesFile] + read.keys.sorted(), loadedAt: Monitor.now)
                var stamps = self.stamps
                // A bundle's modules are no files to watch.
                for module in read.keys where options.bundle == nil { stamps[module] = FileStamp(path: module) }
                monitor.locked {
                    self.revision = revision
                    self.stamps = stamps
                    stamp = options.stampsRevision ? revision.stamp : []
                    modules = read
                    monitor.broadcast()
                }
            }
            let processor = LineProcessor(
                hierarchy: hierarchy, inputName: options.inputName, maxLineBytes: options.maxLineBytes,
                responderKeys: options.responderKeys || options.decisionLog != nil)
            worker = PoolWorker(processor: processor, generation: self, request: request, decisionLog: options.decisionLog)
        } catch let error as ScriptError {
            fail(error)
            return
        } catch {
            fail(ScriptError(type: "HostError", message: "\(error)"))
            return
        }
        monitor.locked {
            loaded += 1
            monitor.broadcast()
        }
        while let job = take() {
            job.run(on: worker)
        }
    }

    private func fail(_ error: ScriptError) {
        monitor.locked {
            if loadFailure == nil { loadFailure = error }
            loaded += 1
            retired = true
            monitor.broadcast()
        }
    }
}

/// Work for a pool's state: a request, a batch of lines, a run of `dispatch` input.
final class PoolJob: @unchecked Sendable {
    enum Admission { case started, waiting, overloaded, retired }

    /// Seconds it may wait for a state (nil: no bound); past it, it is refused unanswered.
    let maxWait: Double?
    /// A worker took it, or its wait bound refused it (guarded by its generation's monitor).
    var taken = false
    /// When its wait bound passes, once it waits for a state (guarded by the same monitor).
    var deadline: DispatchTime?
    private let work: (PoolWorker) -> Void
    private let refused: () -> Void

    init(maxWait: Double? = nil, work: @escaping (PoolWorker) -> Void, refused: @escaping () -> Void = {}) {
        self.maxWait = maxWait
        self.work = work
        self.refused = refused
    }

    func run(on worker: PoolWorker) { work(worker) }

    func refuse() { refused() }
}
