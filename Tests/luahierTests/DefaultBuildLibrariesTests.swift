#if !Server
import Foundation
import Testing

/// Without the Server trait, nothing `luahier` is built from imports Foundation (the library
/// and swift-argument-parser take FoundationEssentials, swift-crypto from 4.0 too): a build
/// with Swift's runtime as shared libraries loads neither Foundation nor ICU at its start
/// (docs/performance.md, Startup). With the trait, the server's packages bring Foundation in.
@Suite("luahier without the Server trait: the libraries it loads", .ownThreads)
struct DefaultBuildLibrariesTests {
    @Test func neitherFoundationNorICUIsNeeded() throws {
        let readelf = try Luahier.run(["readelf", "--dynamic", Luahier.binary.path], input: nil, executable: URL(fileURLWithPath: "/usr/bin/env"))
        let text = readelf.stdout
        let needed = text.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        // A binary linked statically needs no library at all; this one is the dynamic build.
        guard !needed.isEmpty else { return }
        #expect(needed.contains { $0.contains("[libswiftCore.so]") }, "\(needed)")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(!needed.contains { $0.contains("[\(library)]") }, "\(library) is loaded at every start: \(needed)")
        }
    }
}
#endif
