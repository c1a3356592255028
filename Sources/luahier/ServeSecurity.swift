#if Server
import ArgumentParser
import Glibc
import LuaHierarchyServer

/// `luahier serve`'s TLS and bearer tokens, from its flags and the environment. A token is
/// taken from a file or an environment variable, never from the command line: argv is in
/// `ps` for anyone on the machine, and in shell histories.
extension ServeRun {
    /// The environment variables that hold a route's tokens (one a line, as in a token file).
    static let dispatchTokenVariable = "LUAHIER_DISPATCH_TOKEN"
    static let reloadTokenVariable = "LUAHIER_RELOAD_TOKEN"

    /// What the flags and the environment ask for, read and checked.
    struct Security {
        var tls: RulesServer.TLS?
        var dispatchTokens: BearerTokens?
        var reloadTokens: BearerTokens?
    }

    /// Both TLS flags or neither; a route's tokens from a file or from the environment, not
    /// both.
    func validateSecurity() throws {
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")
        }
        for (file, variable, flag) in [
            (dispatchTokenFile, Self.dispatchTokenVariable, "--dispatch-token-file"), (reloadTokenFile, Self.reloadTokenVariable, "--reload-token-file"),
        ] where file != nil && getenv(variable) != nil {
            throw ValidationError("\(flag) and \(variable) both give the token: give one of them")
        }
    }

    /// The certificate, the key and the token files, read before the rules load: a file that
    /// cannot be used is told first, by name, in one line.
    func readSecurity() throws(SetupFileError) -> Security {
        var security = Security()
        if let tlsCert, let tlsKey {
            security.tls = try RulesServer.TLS(certificateChainFile: tlsCert, privateKeyFile: tlsKey)
        }
        security.dispatchTokens = try Self.tokens(file: dispatchTokenFile, route: "dispatch", variable: Self.dispatchTokenVariable)
        security.reloadTokens = try Self.tokens(file: reloadTokenFile, route: "reload", variable: Self.reloadTokenVariable)
        return security
    }

    private static func tokens(file: String?, route: String, variable: String) throws(SetupFileError) -> BearerTokens? {
        if let file { return try BearerTokens(file: file, role: "\(route) token file") }
        guard let value = getenv(variable) else { return nil }
        // Set but empty is a mistake, not a wish for an open route.
        return try BearerTokens(text: String(cString: value), source: variable, role: "\(route) token")
    }

    /// What is worth a warning in the log as the server starts.
    func securityWarnings(_ security: Security) -> [String] {
        var warnings: [String] = []
        let loopback = host == "localhost" || host == "::1" || host.hasPrefix("127.")
        if security.tls == nil && !loopback && (security.dispatchTokens != nil || security.reloadTokens != nil) {
            warnings.append("bearer tokens over plain HTTP cross the network readable: give --tls-cert and --tls-key, or a TLS proxy in front")
        }
        if reloadEndpoint && security.reloadTokens == nil && security.dispatchTokens != nil {
            warnings.append("POST /v1/reload takes no token (--reload-endpoint without --reload-token-file): anyone who reaches the port can reload the rules")
        }
        if let bundleUrl, bundleUrl.hasPrefix("http://") {
            warnings.append(
                "--bundle-url over plain http://: the signature refuses a forged bundle and the sequence an older one, "
                    + "but whoever is on the path can keep new ones from the replicas; use https://")
        }
        return warnings
    }
}
#endif
