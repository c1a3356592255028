#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a path lies under a folder, decided on the paths the file system resolves (every
/// symbolic link followed), not on their text: a name under the folder may lead out of it.
/// Used for what a bundle may hold and for what `POST /v1/shadow` may load.
package enum FolderPaths {
    /// `path`, every symbolic link in it followed, when it exists and lies under `folder`
    /// (followed too). Nil otherwise: a path that does not exist and one outside the folder
    /// are not told apart, so the answer is no oracle of what exists outside it.
    package static func resolve(_ path: String, under folder: String) -> String? {
        guard let base = real(folder), let found = real(path) else { return nil }
        return found.hasPrefix(base.hasSuffix("/") ? base : base + "/") ? found : nil
    }

    /// `path` with every symbolic link followed (`realpath`; an empty path is the root); nil
    /// when it does not exist.
    package static func real(_ path: String) -> String? {
        guard let resolved = realpath(path.isEmpty ? "/" : path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether `name` names a file under a folder by its text alone: relative, or absolute
    /// under `folder`'s own path or its resolved one; no empty, `.` or `..` component. So a
    /// name is judged before any file system call on it, and `/PROBE/../FOLDER/x.lua` tells
    /// nothing of whether `/PROBE` exists (an attacker's find).
    package static func plainName(_ name: String, under folder: String) -> Bool {
        var rest = Substring(name)
        if name.hasPrefix("/") {
            let bases = [folder, real(folder) ?? folder].filter { $0.hasPrefix("/") }
            guard let base = bases.first(where: { name.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }) else { return false }
            rest = name.dropFirst(base.hasSuffix("/") ? base.count : base.count + 1)
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        return !parts.isEmpty && parts.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." } && !name.utf8.contains(0)
    }

    /// Whether the file open on `descriptor` lies under `folder` and its name ends in `suffix`,
    /// by the path the kernel has for the descriptor (`/proc/self/fd`): what was opened, not
    /// what a name led to when it was checked, so a link swapped in between is caught.
    package static func descriptor(_ descriptor: Int32, liesUnder folder: String, suffix: String) -> Bool {
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(descriptor)", &target, target.count - 1)
        guard length > 0, length < target.count - 1 else { return false }
        let opened = String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard opened.hasSuffix(suffix), let base = real(folder) else { return false }
        return opened.hasPrefix(base.hasSuffix("/") ? base : base + "/")
    }
}
