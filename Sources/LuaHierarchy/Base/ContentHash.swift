import Crypto

/// SHA-256 (swift-crypto's) as the package shows it: 64 lowercase hex digits. A revision's
/// content hash and a bundle's manifest use it.
struct ContentHash {
    private var hasher = Crypto.SHA256()

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
    }

    /// The digest of everything given so far.
    func hexDigest() -> String {
        Self.hex(Array(hasher.finalize()))
    }

    /// The SHA-256 of `bytes`, in hex.
    static func of(_ bytes: [UInt8]) -> String {
        var hash = ContentHash()
        hash.update(bytes)
        return hash.hexDigest()
    }

    /// `bytes` as lowercase hex digits, two a byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
