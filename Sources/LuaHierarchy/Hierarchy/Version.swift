/// The package's version, in one place: `luahier --version`, its man page and embedders read
/// it here.
package enum PackageVersion {
    /// The version, e.g. `0.1.0`.
    public static let number = "0.1.0"

    /// `luahier 0.1.0 (Lua 5.4)`.
    public static var description: String { "luahier \(number) (\(Hierarchy.luaVersion))" }
}
