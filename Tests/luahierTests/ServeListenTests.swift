#if Server
import Foundation
import Testing

/// `luahier serve` on an address it cannot listen on: one line saying why and what to change,
/// exit 2 (the command line names the address, as it names a missing file).
@Suite("luahier serve, an address it cannot listen on", .ownThreads)
struct ServeListenTests {
    /// A loopback socket listening on a free port, held by the test; closed by `close`.
    struct HeldPort {
        let socket: Int32
        let port: UInt16

        init() throws {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.socket = socket
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(socket, pointer, length) == 0 && listen(socket, 1) == 0 && getsockname(socket, pointer, &length) == 0
                }
            }
            try #require(bound, "cannot hold a port: \(String(cString: strerror(errno)))")
            port = UInt16(bigEndian: address.sin_port)
        }

        func close() { _ = Glibc.close(socket) }
    }

    /// Whether this process may not bind a privileged port (not root, no CAP_NET_BIND_SERVICE).
    static var privilegedPortsAreRefused: Bool {
        let probe = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { _ = Glibc.close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(1).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result != 0 && errno == EACCES
    }

    func serve(_ arguments: [String]) throws -> Luahier.Result {
        try Luahier.run(["serve", try Luahier.script("", name: "rules.lua")] + arguments)
    }

    @Test func aPortInUseIsNamedWithWhatToDo() throws {
        let held = try HeldPort()
        defer { held.close() }
        let result = try serve(["--port", String(held.port)])
        #expect(!result.signaled)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == """
            luahier: cannot listen on 127.0.0.1:\(held.port): the address is in use \
            (another process listens there; pick another --port)

            """)
    }

    @Test func anAddressNotOnThisMachineIsNamed() throws {
        // 192.0.2.0/24 is TEST-NET-1, set aside for documentation: no machine has it.
        let result = try serve(["--host", "192.0.2.1", "--port", "8080"])
        #expect(result.status == 2)
        #expect(result.stderr == """
            luahier: cannot listen on 192.0.2.1:8080: the address is not on this machine \
            (give --host an address of this machine: 127.0.0.1, or 0.0.0.0 for every interface)

            """)
    }

    @Test func aHostThatDoesNotResolveIsNamed() throws {
        // .invalid never resolves (RFC 2606).
        let result = try serve(["--host", "nosuch.invalid", "--port", "8080"])
        #expect(result.status == 2)
        #expect(result.stderr == """
            luahier: cannot listen on nosuch.invalid:8080: no such host \
            (give --host an address, or a name that resolves)

            """)
    }

    @Test(.enabled(if: privilegedPortsAreRefused, "this process may bind privileged ports"))
    func aPrivilegedPortIsNamedWithWhatToDo() throws {
        let result = try serve(["--port", "1"])
        #expect(result.status == 2)
        #expect(result.stderr == """
            luahier: cannot listen on 127.0.0.1:1: permission denied \
            (a port below 1024 needs privileges; pick a --port of 1024 or more)

            """)
    }
}
#endif
