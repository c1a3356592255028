#if Server
internal import Hummingbird
import LuaHierarchy
internal import NIOCore
import Synchronization

/// `/v1/shadow`: a candidate revision beside the live one (docs/shadow.md).
///
/// - `GET` reports the candidate and its counts (`{"active": false}` with none), open as
///   `/metrics` is: it holds counts and request ids, no payloads.
/// - `POST` loads a candidate, replacing the one running and its counts. The body is empty
///   or `{"rules": "FILE", "sample": 0.1}`; without `rules` it loads the file last given
///   (`--shadow`) again. 200 with the report; 422 `ShadowLoadFailed` when the file does not
///   load (the candidate running, if any, goes on); 400 `InvalidBody`; 409 `NoShadowFile`, or
///   `ShadowLoadUnderWay` while another `POST` loads one (loads run one at a time: each makes
///   a pool of states, and twenty at once held twenty pools, an attacker's find); 403
///   `ShadowFileRefused` for a file that is not a `.lua` file in the live rules' folder
///   (`Options.candidatesFolder`): any readable file was taken, and Lua's error quoted its
///   first token, another attacker's find.
/// - `DELETE` stops shadowing and answers the last report.
///
/// `POST` and `DELETE` are behind the reload token, as `POST /v1/reload`: with neither
/// `reloadEndpoint` nor `reloadTokens`, they answer 403 `ReloadDisabled`.
extension RulesServer {
    func addShadowRoutes(to router: Router<ServerContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/v1/shadow", method: method) { request, _ in
                Response.json(.ok, self.shadowReport(), head: request.method == .head)
            }
        }
        let behindToken = guarded(router, by: options.reloadTokens, route: "/v1/shadow")
        behindToken.post("/v1/shadow") { request, _ in
            await self.loadShadow(request)
        }
        behindToken.delete("/v1/shadow") { _, _ in
            if let refused = self.shadowChangesRefused() { return refused }
            let report = self.shadowReport()
            await self.stopShadow()
            return Response.json(.ok, report)
        }
    }

    /// The report of the candidate running, or `{"active": false}`.
    func shadowReport() -> [String: Value] {
        shadow?.report(live: pool.revision) ?? ["active": false]
    }

    private func shadowChangesRefused() -> Response? {
        reloadRoutesRefused(doing: "changing the shadow revision")
    }

    private func loadShadow(_ request: Request) async -> Response {
        if let refused = shadowChangesRefused() { return refused }
        var body = ByteBuffer()
        do {
            body = try await request.body.collect(upTo: 64 << 10)
        } catch {
            return ErrorBody.response(.badRequest, type: "InvalidBody", message: "the body must be a JSON object of at most 64 KiB")
        }
        var settings: Value = .map([:])
        if body.readableBytes > 0 {
            guard let parsed = body.json, case .map(let members) = parsed
            else {
                return ErrorBody.response(.badRequest, type: "InvalidBody", message: #"the body must be a JSON object: {"rules": "FILE", "sample": 0.1}"#)
            }
            if let unknown = members.keys.sorted().first(where: { !["rules", "sample", "workers"].contains($0) }) {
                return ErrorBody.response(.badRequest, type: "InvalidBody", message: "unknown member \"\(PrintableText.field(unknown))\"; the members are rules, sample and workers")
            }
            settings = parsed
        }
        // Each member, when given, of its type and range; else what runs, else the options'.
        func invalid(_ message: String) -> Response { ErrorBody.response(.badRequest, type: "InvalidBody", message: message) }
        if let rules = settings["rules"], (rules.stringValue ?? "").isEmpty { return invalid("rules must be a file's path") }
        if let sample = settings["sample"], !(Self.number(sample).map { (0...1).contains($0) } ?? false) {
            return invalid("sample must be a number from 0 to 1")
        }
        if let workers = settings["workers"], !(workers.intValue.map { (1...Int64(pool.workers)).contains($0) } ?? false) {
            return invalid("workers must be a whole number from 1 to the live workers (\(pool.workers))")
        }
        let running = shadow
        let file = settings["rules"]?.stringValue ?? running?.file ?? options.shadow?.rulesFile
        let sample = settings["sample"].flatMap(Self.number) ?? running?.sample ?? options.shadow?.sample ?? 0.1
        let workers = settings["workers"]?.intValue.map(Int.init) ?? options.shadow?.workers ?? 1
        guard var file else {
            return ErrorBody.response(.conflict, type: "NoShadowFile", message: #"no candidate file: give {"rules": "FILE"}, or start luahier serve with --shadow FILE"#)
        }
        // Every file a client named is checked, the running candidate's again when a client
        // named it (it may since have been made a link out), and then read only as a `.lua`
        // file in the folder as opened: a link swapped in after the check is caught then (an
        // attacker's find, both). The operator's `--shadow` file and a file the embedder
        // started are theirs.
        var folder: String?
        let given = file == options.shadow?.rulesFile || (file == running?.file && running?.folder == nil)
        if !given {
            guard let allowed = candidateFile(file) else {
                return ErrorBody.response(
                    .forbidden, type: "ShadowFileRefused",
                    message: "\"\(PrintableText.field(file))\" is not a .lua file in the live rules' folder: a candidate named here must be one")
            }
            (file, folder) = allowed
        }
        let started = shadowLoading.withLock { loading in
            if loading { return false }
            loading = true
            return true
        }
        guard started else {
            return ErrorBody.response(.conflict, type: "ShadowLoadUnderWay", message: "a candidate is being loaded; ask again once it has loaded")
        }
        defer { shadowLoading.withLock { $0 = false } }
        let loaded = await unlessDraining { [file, folder] () async -> Result<Void, ScriptError> in
            do throws(ScriptError) {
                try await self.startShadow(rulesFile: file, sample: sample, workers: workers, within: folder)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        switch loaded {
        case nil:
            return shuttingDown("the candidate's load")
        case .failure(let error):
            return ErrorBody.response(
                .unprocessableContent, type: "ShadowLoadFailed", message: error.description, extra: ["shadow": .map(shadowReport())])
        case .success:
            return Response.json(.ok, shadowReport())
        }
    }

    /// The file a `rules` member names, when the route may load it, and its folder: a `.lua`
    /// file under `Options.candidatesFolder`, named from that folder or by a full path under
    /// it, with no `.` or `..` component (judged on the text first: no file system call on
    /// a name outside), every symbolic link followed. Nil for any other, existing or not
    /// (the answer says nothing of what lies outside the folder): the file's text is run,
    /// and a file that does not load is answered with Lua's error, which quotes it.
    private func candidateFile(_ named: String) -> (file: String, folder: String)? {
        let live = pool.options
        let fromFile = live.bundle == nil && live.rulesSource == nil
        guard let folder = options.candidatesFolder ?? (fromFile ? Revision.folder(of: live.rulesFile) : nil),
              named.hasSuffix(".lua"), FolderPaths.plainName(named, under: folder)
        else { return nil }
        // The file the name leads to is a `.lua` file too: not a link named so to another.
        guard let resolved = FolderPaths.resolve(named.hasPrefix("/") ? named : folder + "/" + named, under: folder),
              resolved.hasSuffix(".lua")
        else { return nil }
        return (resolved, folder)
    }

    private static func number(_ value: Value) -> Double? {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    /// With a candidate running, sampled by `requestID`: `answer`'s body written, then the
    /// request handed to the candidate (the live answer is on its way first).
    func shadowed(_ response: Response, body: [UInt8], requestID: String, answer: RulesPool.Answer) -> Response {
        guard let shadow, shadow.samples(requestID) else { return response }
        var response = response
        let bytes = ByteBuffer(bytes: answer.json + [UInt8(ascii: "\n")])
        let log = pool.options.decisionLog
        response.body = ResponseBody(contentLength: bytes.readableBytes) { writer in
            try await writer.write(bytes)
            try await writer.finish(nil)
            shadow.submit(
                body, batch: false, requestID: requestID, live: [.init(json: answer.json, responderKey: answer.responderKey)],
                liveRevision: answer.revision, log: log)
        }
        return response
    }
}

/// A sampled batch's live answers, kept for the candidate while they stream to the client
/// (from the state's thread), up to `Shadow.maxPendingBytes`: a larger batch is not shadowed.
final class ShadowCapture: Sendable {
    private struct Kept {
        var answers: [RulesPool.LiveAnswer] = []
        var bytes = 0
        var overflowed = false
        var revision: Revision?
    }
    private let state = Mutex(Kept())

    func add(_ answer: UnsafeRawBufferPointer, key: String?, bodyBytes: Int) {
        state.withLock { kept in
            guard !kept.overflowed else { return }
            kept.bytes += answer.count
            if kept.bytes + bodyBytes > Shadow.maxPendingBytes {
                kept.overflowed = true
                kept.answers = []
                return
            }
            kept.answers.append(.init(json: Array(answer), responderKey: key))
        }
    }

    /// The batch was answered, all of it by `revision`.
    func answered(by revision: Revision) {
        state.withLock { $0.revision = revision }
    }

    /// The answers kept and their revision, once the batch was answered; nil when it was not,
    /// none were, or there were too many to keep.
    var taken: ([RulesPool.LiveAnswer], Revision)? {
        state.withLock { kept in
            guard !kept.overflowed, !kept.answers.isEmpty, let revision = kept.revision else { return nil }
            return (kept.answers, revision)
        }
    }
}
#endif
