#if Server
internal import AsyncHTTPClient
import LuaHierarchy
internal import Logging
internal import NIOCore
internal import NIOHTTP1
import Synchronization

/// Pulls signed rule bundles from a URL (`luahier serve --bundle-url`, docs/bundles.md): every
/// `interval` seconds a GET with `If-None-Match` (the ETag of the last bundle taken); a 304
/// changes nothing; a new bundle is read and checked (`RuleBundle(bytes:publicKey:)`: its
/// size, its files' hashes, its signature) and loaded by a reload of the pool
/// (`RulesPool.reload(bundle:)`), so every guarantee of a reload holds. A bundle that is
/// refused (unsigned, badly signed, damaged, too large, or not newer than the running bundle
/// by its signed sequence: an older bundle served again) or fails to load leaves the running
/// revision answering; the refusal is logged (once per ETag), counted and shown in
/// `/readyz`. A refused bundle is fetched again at the next poll: a refusal may have been
/// transient (a body cut short), and a publisher may put a good bundle under the same ETag.
final class BundlePoller: Sendable {
    /// What became of each poll (`luahier_bundle_polls_total{result}`).
    enum Result: String, CaseIterable {
        /// A new bundle, loaded as a new revision.
        case loaded
        /// A bundle of the running revision's hash.
        case unchanged
        /// 304: the bundle of the last ETag.
        case notModified = "not_modified"
        /// The bundle was refused, or its rules failed to load.
        case refused
        /// No answer, or one other than 200 and 304.
        case failed
    }

    let options: RulesServer.BundleSource
    private let pool: RulesPool
    private let logger: Logger
    private let onPoll: @Sendable (Result, ReloadResult?) -> Void
    /// The ETag of the last bundle taken; why the last one fetched was refused (until one is
    /// taken), and its ETag (its refusal is logged once).
    private let state = Mutex<(etag: String?, refusal: String?, refusedETag: String?)>((nil, nil, nil))
    /// The sequence of the running bundle, the one the pool started with or the last one
    /// taken: a bundle of other files must come after it (`RuleBundle.checkOrder(after:)`).
    private let runningSequence: Mutex<Int64?>

    init(options: RulesServer.BundleSource, pool: RulesPool, logger: Logger, onPoll: @escaping @Sendable (Result, ReloadResult?) -> Void) {
        self.options = options
        self.pool = pool
        runningSequence = Mutex(pool.options.bundle?.sequence)
        self.logger = logger
        self.onPoll = onPoll
    }

    /// Why the last bundle fetched was refused, while no later one was taken.
    var refusal: String? { state.withLock { $0.refusal } }

    /// The running bundle's sequence, when it has one.
    var sequence: Int64? { runningSequence.withLock { $0 } }

    /// Polls until the task is cancelled: at once, then every `interval` seconds.
    func run() async {
        while !Task.isCancelled {
            let result = await poll()
            onPoll(result.0, result.1)
            try? await Task.sleep(for: .milliseconds(Int64(options.interval * 1000)))
        }
    }

    /// One poll: what became of it, and the reload it ran, if it ran one.
    func poll() async -> (Result, ReloadResult?) {
        var request = HTTPClientRequest(url: options.url)
        let etag = state.withLock { $0.etag }
        if let etag { request.headers.add(name: "If-None-Match", value: etag) }
        let response: HTTPClientResponse
        do {
            // The process's shared client: nothing to shut down, whoever made the poller.
            response = try await HTTPClient.shared.execute(request, timeout: .milliseconds(Int64(options.timeout * 1000)))
        } catch {
            logger.warning("bundle: cannot fetch \(options.url): \(error)")
            return (.failed, nil)
        }
        if response.status == .notModified { return (.notModified, nil) }
        guard response.status == .ok else {
            logger.warning("bundle: \(options.url) answered \(response.status.code)")
            return (.failed, nil)
        }
        let received = response.headers.first(name: "ETag")
        let tooLarge = "it is over the limit of \(options.maxBytes) bytes"
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > options.maxBytes {
            return refuse("the bundle at \(options.url) was refused: \(tooLarge)", etag: received)
        }
        let bytes: [UInt8]
        let timeout = options.timeout
        do {
            // One byte over the limit is enough to refuse it: the rest is not read. The whole
            // body within the timeout: a server that drips it cannot hold the polling up.
            let body = try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
                group.addTask { [maxBytes = options.maxBytes] in try await response.body.collect(upTo: maxBytes) }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let body = first else { throw BodyTimeout() }
                return body
            }
            bytes = Array(body.readableBytesView)
        } catch is NIOTooManyBytesError {
            return refuse("the bundle at \(options.url) was refused: \(tooLarge)", etag: received)
        } catch {
            logger.warning("bundle: cannot read \(options.url): \(error)")
            return (.failed, nil)
        }
        let bundle: RuleBundle
        do {
            bundle = try RuleBundle(bytes: bytes, publicKey: options.publicKey, maxBytes: options.maxBytes)
        } catch {
            return refuse("the bundle at \(options.url) was refused: \(error)", etag: received)
        }
        if bundle.revisionHash == pool.revision.hash {
            // The running files under a later number (a release of the same rules, as a rollback
            // is): the number is taken, so an older bundle is refused after it (an attack's find:
            // kept at the old number, the replica then took a bundle the rollback superseded).
            if let offered = bundle.sequence {
                runningSequence.withLock { running in running = max(running ?? offered, offered) }
            }
            state.withLock { $0 = (received, nil, nil) }
            return (.unchanged, .unchanged(pool.revision))
        }
        do throws(RuleBundle.Refusal) {
            try bundle.checkOrder(after: sequence)
        } catch {
            return refuse("the bundle at \(options.url) was refused: \(error)", etag: received)
        }
        let reload = await pool.reload(bundle: bundle)
        if case .failed(_, let message) = reload {
            return (refuse("the bundle at \(options.url) did not load: \(message)", etag: received).0, reload)
        }
        state.withLock { $0 = (received, nil, nil) }
        if case .loaded = reload { runningSequence.withLock { $0 = bundle.sequence } }
        if case .loaded(let revision) = reload {
            logger.notice("bundle: loaded revision \(revision) from \(options.url)")
        }
        return (.loaded, reload)
    }

    /// The body did not come whole within the timeout.
    struct BodyTimeout: Error, CustomStringConvertible {
        var description: String { "the body did not arrive whole within the timeout" }
    }

    /// Notes `message` as the refusal; logs it unless the bundle of `etag` was refused just
    /// before (a bad publish that stays is logged once, and counted at each poll).
    private func refuse(_ message: String, etag: String?) -> (Result, ReloadResult?) {
        let repeated: Bool = state.withLock { state in
            defer { (state.refusal, state.refusedETag) = (message, etag) }
            return etag != nil && etag == state.refusedETag && message == state.refusal
        }
        if !repeated { logger.error("bundle: \(message); revision \(pool.revision.shortHash) goes on answering") }
        return (.refused, nil)
    }
}
#endif
