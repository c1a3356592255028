#if Server
internal import NIOSSL

extension RulesServer {
    /// The certificate chain and private key the server answers HTTPS with (`luahier serve
    /// --tls-cert FILE --tls-key FILE`). Both files are PEM; they are read and checked when
    /// this is made, so that a wrong file is told, by its name, before the server starts.
    ///
    /// Only paths cross the library's API: an embedder needs no TLS package of its own, and
    /// the TLS stack under it (swift-nio-ssl) can change without changing this type. The
    /// server takes TLS 1.2 and 1.3, and HTTP/1.1 only.
    public struct TLS: Sendable {
        /// The server's certificate first, then any intermediates that lead to its CA.
        public let certificateChainFile: String
        /// The certificate's private key, unencrypted.
        public let privateKeyFile: String
        /// What the TLS handler of each connection is made from.
        let configuration: TLSConfiguration

        /// Reads both files and checks that the key is the certificate's; the error names the
        /// file at fault and what is wrong with it.
        public init(certificateChainFile: String, privateKeyFile: String) throws(SetupFileError) {
            let chainRole = "TLS certificate chain", keyRole = "TLS private key"
            let chainPEM = try SetupFile.read(certificateChainFile, as: chainRole)
            let keyPEM = try SetupFile.read(privateKeyFile, as: keyRole)
            // NIOSSL's own errors name neither the file nor what it should have held.
            let chain = (try? NIOSSLCertificate.fromPEMBytes(chainPEM)) ?? []
            guard !chain.isEmpty else {
                throw SetupFileError(source: certificateChainFile, role: chainRole, why: "it holds no PEM certificate (BEGIN CERTIFICATE)")
            }
            guard let key = try? NIOSSLPrivateKey(bytes: keyPEM, format: .pem) else {
                throw SetupFileError(
                    source: privateKeyFile, role: keyRole,
                    why: "it holds no unencrypted PEM private key (BEGIN PRIVATE KEY; an encrypted one needs its passphrase removed)")
            }
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            configuration.applicationProtocols = ["http/1.1"]
            // Made once here, only to see that the key is the certificate's: the server makes
            // its own when it starts.
            guard (try? NIOSSLContext(configuration: configuration)) != nil else {
                throw SetupFileError(
                    source: privateKeyFile, role: keyRole, why: "it is not the key of the certificate in \(certificateChainFile)")
            }
            self.certificateChainFile = certificateChainFile
            self.privateKeyFile = privateKeyFile
            self.configuration = configuration
        }
    }
}
#endif
