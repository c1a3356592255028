import Testing
@testable import LuaHierarchy

/// The malloc settings the CLI makes at its start (`ProcessMemory`): where the C library is
/// glibc, it takes them.
@Suite("Process memory settings", .ownThreads)
struct ProcessMemoryTests {
    @Test func glibcTakesTheSettingsToKeepFreedMemory() {
        #if canImport(Glibc)
        #expect(ProcessMemory.keepFreedMemory())
        #else
        #expect(!ProcessMemory.keepFreedMemory())
        #endif
    }
}
