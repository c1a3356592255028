#if Server
internal import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the server could not listen on its address: what `RulesServer.run` throws then, in
/// place of the socket layer's own error (`bind(descriptor:ptr:bytes:): ... (errno: 98)`).
public struct ListenFailure: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Another socket listens on that address and port (EADDRINUSE).
        case addressInUse
        /// Not permitted, as for a port below 1024 without the privilege (EACCES).
        case permissionDenied
        /// No interface of this machine has that address (EADDRNOTAVAIL).
        case addressNotOnThisMachine
        /// The host name did not resolve to an address.
        case unknownHost
        /// Any other failure, as the socket layer describes it.
        case other(String)

        /// A failure none of the others name.
        public var isOther: Bool {
            if case .other = self { true } else { false }
        }
    }

    public var host: String
    public var port: Int
    public var reason: Reason

    public init(host: String, port: Int, reason: Reason) {
        self.host = host
        self.port = port
        self.reason = reason
    }

    /// The failure `error` is, when it came from binding or resolving the address; nil for
    /// anything else.
    init?(_ error: any Error, host: String, port: Int) {
        let reason: Reason
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE: reason = .addressInUse
            case EACCES, EPERM: reason = .permissionDenied
            case EADDRNOTAVAIL: reason = .addressNotOnThisMachine
            default: reason = .other(String(cString: strerror(error.errnoCode)))
            }
        } else if error is SocketAddressError.UnknownHost {
            reason = .unknownHost
        } else {
            return nil
        }
        self.init(host: host, port: port, reason: reason)
    }

    /// `127.0.0.1:8080`, `[::1]:8080`: the address as a URL would show it.
    public var address: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// What went wrong, without advice: `the address is in use`.
    public var why: String {
        switch reason {
        case .addressInUse: "the address is in use"
        case .permissionDenied: "permission denied"
        case .addressNotOnThisMachine: "the address is not on this machine"
        case .unknownHost: "no such host"
        case .other(let text): text
        }
    }

    public var description: String { "cannot listen on \(address): \(why)" }
}
#endif
