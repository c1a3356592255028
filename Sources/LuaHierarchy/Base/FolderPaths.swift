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
        guard let resolvedFolder = realpath(folder.isEmpty ? "/" : folder, nil) else { return nil }
        defer { free(resolvedFolder) }
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let base = String(cString: resolvedFolder)
        let found = String(cString: resolved)
        return found.hasPrefix(base.hasSuffix("/") ? base : base + "/") ? found : nil
    }
}
