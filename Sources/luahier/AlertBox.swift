import LuaHierarchy

/// The CLI's alert presenter: an alert drawn as a box on stderr, and the `--recover` choice.
///
///     ┌─ Alert ──────────────────────────────┐
///     │ Upload failed                        │
///     │ The server did not answer.           │
///     │                                      │
///     │ Options: Retry, Cancel               │
///     │ Chosen:  Retry (--recover)           │
///     └──────────────────────────────────────┘
///       reported at /app/upload, handled by /app
struct AlertBox {
    /// The option `--recover` names, if given.
    var recover: String?

    /// Draws `alert` and returns the host's choice (the CLI's `--recover`, when it is one of
    /// the alert's options; the hierarchy ignores it when the script chose).
    func present(_ alert: Alert) -> String? {
        Console.error(render(alert))
        guard let recover, alert.recovery.contains(recover) else { return nil }
        return recover
    }

    /// The most options listed, and the most characters of an option, a title or a message:
    /// the box is text a script made, so it is bounded (contract §7).
    static let maxOptions = 20
    static let maxOptionLength = 200
    static let maxTextLength = 4000

    func render(_ alert: Alert) -> String {
        var lines = AlertBox.wrap(AlertBox.bounded(alert.title))
        if let message = alert.message { lines += AlertBox.wrap(AlertBox.bounded(message)) }
        if !alert.recovery.isEmpty {
            lines.append("")
            var options = alert.recovery.prefix(AlertBox.maxOptions).map { PrintableText.field($0, limit: AlertBox.maxOptionLength) }
            if alert.recovery.count > AlertBox.maxOptions { options.append("… \(alert.recovery.count - AlertBox.maxOptions) more") }
            lines += AlertBox.wrap("Options: " + options.joined(separator: ", "))
            lines += AlertBox.wrap("Chosen:  " + choiceText(alert))
        }
        let width = max(lines.map(\.count).max() ?? 0, 30)
        var box = ["┌─ Alert " + String(repeating: "─", count: width - 6) + "┐"]
        box += lines.map { "│ " + $0 + String(repeating: " ", count: width - $0.count) + " │" }
        box.append("└" + String(repeating: "─", count: width + 2) + "┘")
        box.append("  reported at \(PrintableText.field(alert.reportedAt)), handled by \(PrintableText.field(alert.handledBy))")
        return box.joined(separator: "\n")
    }

    /// A title or message cut to `maxTextLength` characters, its other control characters
    /// escaped (its line breaks are the box's paragraphs).
    static func bounded(_ text: String) -> String {
        var cut = String(String.UnicodeScalarView(text.unicodeScalars.prefix(maxTextLength)))
        if cut.unicodeScalars.count < text.unicodeScalars.count { cut += " …" }
        return PrintableText.block(cut)
    }

    private func choiceText(_ alert: Alert) -> String {
        if let choice = alert.scriptChoice { return "\(PrintableText.field(choice, limit: AlertBox.maxOptionLength)) (by the script)" }
        guard let recover else { return "none (pass --recover OPTION to choose)" }
        if alert.recovery.contains(recover) { return "\(recover) (--recover)" }
        return "none (--recover \(recover) is not one of the options)"
    }

    /// Splits `text` into lines of at most 64 characters, at spaces where it can; control
    /// characters are shown as spaces so they cannot break the box.
    static func wrap(_ text: String, width: Int = 64) -> [String] {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.map({ $0.isASCII && ($0.asciiValue! < 32 || $0.asciiValue! == 127) ? " " : $0 })
                .split(separator: " ", omittingEmptySubsequences: false)
            {
                var word = String(word)
                while word.count > width {
                    if !line.isEmpty { lines.append(line); line = "" }
                    lines.append(String(word.prefix(width)))
                    word = String(word.dropFirst(width))
                }
                if line.isEmpty {
                    line = word
                } else if line.count + 1 + word.count <= width {
                    line += " " + word
                } else {
                    lines.append(line)
                    line = word
                }
            }
            lines.append(line)
        }
        return lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
    }
}
