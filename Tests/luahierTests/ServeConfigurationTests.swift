import Foundation
import Testing

/// `luahier serve`'s settings from the environment (`LUAHIER_MAX_BODY`) and a config file
/// (`--config FILE`, `LUAHIER_CONFIG`), as well as its flags: every option reachable both
/// ways, the precedence (command line > environment > file > default), and usage errors
/// that name the variable or the file and key (docs/serve.md, Configuration).
@Suite("luahier serve, configuration", .ownThreads)
struct ServeConfigurationTests {
    /// Runs `luahier arguments...` with `variables` added to the test's environment.
    static func run(_ arguments: [String], environment variables: [String: String] = [:]) throws -> (status: Int32?, stdout: String, stderr: String) {
        let environment = ProcessInfo.processInfo.environment.merging(variables) { $1 }
        let child = try LuahierProcess(arguments, environment: environment)
        child.closeInput()
        let ended = child.waitForExit()
        return (ended.status, child.stdout, ended.stderr)
    }

    /// A file in a fresh temporary folder.
    static func file(_ text: String, name: String) throws -> String {
        try Luahier.script(text, name: name)
    }

    static let rules = #"local app = hier.root:child("app") app:receiveEvent("Ask", function() return "ok" end)"#

    /// serve's long options and flags, read from the parser (`--experimental-dump-help`),
    /// with their defaults: those the environment and the file must reach.
    static func serveSettings() throws -> [(name: String, isFlag: Bool, defaultValue: String?)] {
        let dump = try Luahier.run(["serve", "--experimental-dump-help"])
        let object = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any]
        let arguments = (object?["command"] as? [String: Any])?["arguments"] as? [[String: Any]] ?? []
        let commandLineOnly: Set<String> = ["help", "version", "config", "print-config"]
        let settings: [(name: String, isFlag: Bool, defaultValue: String?)] = arguments.compactMap { argument in
            let kind = argument["kind"] as? String
            guard kind == "option" || kind == "flag" else { return nil }
            let names = argument["names"] as? [[String: String]] ?? []
            guard let long = names.first(where: { $0["kind"] == "long" })?["name"], !commandLineOnly.contains(long) else { return nil }
            return (long, kind == "flag", argument["defaultValue"] as? String)
        }
        // A flag's inverse (`--no-watch`) is the flag's setting, false.
        let flags = Set(settings.filter(\.isFlag).map(\.name))
        return settings.filter { setting in
            !(setting.isFlag && ["no-", "disable-"].contains { prefix in
                setting.name.hasPrefix(prefix)
                    && flags.contains((prefix == "no-" ? "" : "enable-") + setting.name.dropFirst(prefix.count))
            })
        }
    }

    /// What `--print-config` shows of `value`: a secret's value is hidden.
    static func shown(_ value: String, of name: String) -> String {
        !name.hasSuffix("-file") && ["token", "secret", "password"].contains { name.contains($0) } ? "(redacted)" : value
    }

    /// `--print-config`'s rows, by name: value and source, its columns two spaces or more apart.
    static func printed(_ stdout: String) -> [String: (value: String, source: String)] {
        var rows: [String: (String, String)] = [:]
        for line in stdout.split(separator: "\n") {
            let columns = line.split(separator: /\s{2,}/).map(String.init)
            guard columns.count == 3 else { continue }
            rows[columns[0]] = (columns[1], columns[2])
        }
        return rows
    }

    @Test func everyOptionOfServeIsReachableFromTheEnvironmentAndTheConfigFile() throws {
        let rules = try Self.file(Self.rules, name: "rules.lua")
        let settings = try Self.serveSettings()
        // A reading that found nothing would pass vacuously.
        #expect(settings.count >= 15, "only \(settings.map(\.name)) read from serve's help dump")
        // Options without a default whose file must hold what they name, or that go in pairs:
        // their value, and the words the command line adds for the check to pass.
        let tls = Luahier.packageRoot.appendingPathComponent("Tests/luahierTests/Fixtures/tls").path
        let token = try Self.file("s3cret-token\n", name: "token")
        let special: [String: (value: String, with: [String])] = [
            "tls-cert": ("\(tls)/cert.pem", ["--tls-key", "\(tls)/key.pem"]),
            "tls-key": ("\(tls)/key.pem", ["--tls-cert", "\(tls)/cert.pem"]),
            "dispatch-token-file": (token, []), "reload-token-file": (token, []),
            "bundle-url": ("http://127.0.0.1:1/rules.bundle", ["--bundle-key", token]),
            "require-revision": ("0123456789abcdef", []),
        ]
        for setting in settings {
            // A value serve accepts: a flag on, an option's default, else a readable file
            // (options without a default mostly name one; give this test another if not).
            let value = setting.isFlag ? "true" : special[setting.name]?.value ?? setting.defaultValue ?? rules
            let with = special[setting.name]?.with ?? []
            let variable = "LUAHIER_" + setting.name.uppercased().replacingOccurrences(of: "-", with: "_")
            // A flag both ways: off is its inverse (`--no-watch`) if it has one.
            for value in setting.isFlag ? ["true", "false"] : [value] {
                let byEnvironment = try Self.run(["serve", rules, "--print-config"] + with, environment: [variable: value == "false" ? "0" : value])
                #expect(byEnvironment.status == 0, "\(variable)=\(value): \(byEnvironment.stderr)")
                let fromEnvironment = Self.printed(byEnvironment.stdout)[setting.name]
                #expect(fromEnvironment?.source == variable, "\(variable) did not reach --\(setting.name): \(byEnvironment.stdout)")
                #expect(fromEnvironment?.value == Self.shown(value, of: setting.name))
            }

            let json = setting.isFlag ? "true" : "\"\(value)\""
            let config = try Self.file("{\n  \"\(setting.name)\": \(json)\n}\n", name: "serve.json")
            let byFile = try Self.run(["serve", rules, "--config", config, "--print-config"] + with)
            #expect(byFile.status == 0, "\(setting.name) in a config file: \(byFile.stderr)")
            let fromFile = Self.printed(byFile.stdout)[setting.name]
            #expect(fromFile?.source == config + ":2", "the config file's \"\(setting.name)\" did not reach --\(setting.name): \(byFile.stdout)")
            #expect(fromFile?.value == Self.shown(value, of: setting.name))
        }
    }

    @Test func theCommandLineWinsOverTheEnvironmentWhichWinsOverTheFile() throws {
        let rules = try Self.file(Self.rules, name: "rules.lua")
        let config = try Self.file(#"{"workers": 2, "max-body": "100", "max-wait": 7, "rules": "elsewhere.lua"}"#, name: "serve.json")
        let result = try Self.run(
            ["serve", rules, "--workers", "4", "--print-config"],
            environment: ["LUAHIER_CONFIG": config, "LUAHIER_WORKERS": "3", "LUAHIER_MAX_BODY": "300"])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = Self.printed(result.stdout)
        #expect(rows["config"]?.value == config && rows["config"]?.source == "LUAHIER_CONFIG")
        #expect(rows["rules"]?.value == rules && rows["rules"]?.source == "command line")
        #expect(rows["workers"]?.value == "4" && rows["workers"]?.source == "command line")
        #expect(rows["max-body"]?.value == "300" && rows["max-body"]?.source == "LUAHIER_MAX_BODY")
        #expect(rows["max-wait"]?.value == "7" && rows["max-wait"]?.source == config + ":1")
        #expect(rows["port"]?.value == "8080" && rows["port"]?.source == "default")
    }

    @Test func theRulesFileCanComeFromTheConfigFile() throws {
        let rules = try Self.file(Self.rules, name: "rules.lua")
        let config = try Self.file("{\"rules\": \"\(rules)\"}", name: "serve.json")
        let result = try Self.run(["serve", "--config=\(config)", "--print-config"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.printed(result.stdout)["rules"]?.value == rules)
        let missing = try Self.run(["serve", "--print-config"], environment: ["LUAHIER_RULES": "/no/such/rules.lua"])
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("luahier: no such file: /no/such/rules.lua (the rules file came from LUAHIER_RULES)\n"))
    }

    /// With no `LUAHIER_` variable at all, serve reads its settings only when a word starts
    /// `--config`: a config file named either way still gives the rules and the settings.
    @Test func aConfigFileNamedOnTheCommandLineAloneIsRead() throws {
        let rules = try Self.file(Self.rules, name: "rules.lua")
        let config = try Self.file("{\"rules\": \"\(rules)\", \"workers\": 3}", name: "serve.json")
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LUAHIER_") }
        for words in [["--config", config], ["--config=\(config)"]] {
            let child = try LuahierProcess(["serve"] + words + ["--print-config"], environment: environment)
            child.closeInput()
            let ended = child.waitForExit()
            #expect(ended.status == 0, "\(words): \(ended.stderr)")
            let rows = Self.printed(child.stdout)
            #expect(rows["rules"]?.value == rules && rows["rules"]?.source.hasPrefix(config) == true, "\(words): \(child.stdout)")
            #expect(rows["workers"]?.value == "3", "\(words): \(child.stdout)")
        }
        let plain = try LuahierProcess(["serve", rules, "--port", "70000"], environment: environment)
        plain.closeInput()
        let refused = plain.waitForExit()
        #expect(refused.status == 2)
        #expect(refused.stderr.hasPrefix("luahier: --port must be between 0 and 65535\n"), "\(refused.stderr)")
    }

    @Test func aBadEnvironmentValueIsAUsageErrorNamingTheVariable() throws {
        let rules = try Self.file(Self.rules, name: "rules.lua")
        let flag = try Self.run(["serve", rules], environment: ["LUAHIER_WATCH": "maybe"])
        #expect(flag.status == 2)
        #expect(flag.stderr == "luahier: LUAHIER_WATCH takes 1, true, yes, on, 0, false, no or off, not 'maybe'\nluahier: see 'luahier serve --help'\n")
        let number = try Self.run(["serve", rules], environment: ["LUAHIER_WORKERS": "many"])
        #expect(number.status == 2)
        #expect(number.stderr.hasPrefix("luahier: the value 'many' is invalid for '--workers <workers>' (--workers came from LUAHIER_WORKERS)\n"))
        let range = try Self.run(["serve", rules], environment: ["LUAHIER_WORKERS": "0"])
        #expect(range.status == 2)
        #expect(range.stderr.hasPrefix("luahier: --workers must be between 1 and 256 (--workers came from LUAHIER_WORKERS)\n"))
        // The flag given on the command line wins: the variable's value is not looked at.
        let overridden = try Self.run(["serve", rules, "--workers", "2", "--print-config"], environment: ["LUAHIER_WORKERS": "0"])
        #expect(overridden.status == 0, "\(overridden.stderr)")
        // --help answers whatever the environment holds.
        let help = try Self.run(["serve", "--help"], environment: ["LUAHIER_WATCH": "maybe"])
        #expect(help.status == 0 && help.stdout.contains("LUAHIER_CONFIG"))
        // Variables of no setting are not serve's business (LUAHIER_SANITIZED is the tests').
        let other = try Self.run(["serve", rules, "--print-config"], environment: ["LUAHIER_NO_SUCH_SETTING": "1"])
        #expect(other.status == 0)
    }

    @Test func aBadConfigFileIsAUsageErrorNamingTheFileAndKey() throws {
        let rules = try Self.file(Self.rules, name: "rules.lua")
        let cases: [(text: String, message: String)] = [
            ("{\n  \"workers\": 2,\n  \"prot\": 80\n}\n", ":3: unknown key \"prot\" in the config file (did you mean \"port\"?)"),
            ("{\n  \"watch\": \"yes\"\n}\n", ":2: \"watch\" takes true or false, not the string \"yes\""),
            ("{\n  \"workers\": [2]\n}\n", ":2: \"workers\" takes a string or a number, not an array"),
            ("{\"config\": \"other.json\"}", ":1: unknown key \"config\" in the config file (--config is for the command line only)"),
            ("{\n  \"workers\": 2,\n  oops\n}\n", ":3:3: config file is not JSON: expected a string key, found 'o'"),
            ("[\"workers\", 2]", ": a config file is one JSON object, its keys serve's long option names"),
        ]
        for (text, message) in cases {
            let config = try Self.file(text, name: "serve.json")
            let result = try Self.run(["serve", rules, "--config", config])
            #expect(result.status == 2)
            #expect(result.stderr == "luahier: \(config)\(message)\nluahier: see 'luahier serve --help'\n")
        }
        let wrong = try Self.file(#"{"max-memory": "lots"}"#, name: "serve.json")
        let value = try Self.run(["serve", rules, "--config", wrong])
        #expect(value.status == 2)
        #expect(value.stderr.hasPrefix("luahier: --max-memory takes a size such as 64M or 1G, not 'lots' (--max-memory came from \(wrong):1)\n"))
        let missing = try Self.run(["serve", rules], environment: ["LUAHIER_CONFIG": "/no/such/serve.json"])
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("luahier: config file: no such file: /no/such/serve.json (named by LUAHIER_CONFIG)\n"))
    }
}

#if Server
extension ServeConfigurationTests {
    /// On a real server: `--workers` from the command line over the environment's and the
    /// file's; `--port` and `--max-body` from the environment over the file's; the file's
    /// `--reload-endpoint` over the default; the default `--trace`.
    @Test func aServerTakesEachSettingFromTheHighestSource() throws {
        let rules = try Self.file(Self.rules, name: "rules.lua")
        // Port 1 would need privileges: a server that listens took the environment's port.
        let config = try Self.file(#"{"workers": 2, "port": 1, "max-body": "100", "reload-endpoint": true}"#, name: "serve.json")
        let environment = ProcessInfo.processInfo.environment.merging(
            ["LUAHIER_CONFIG": config, "LUAHIER_PORT": "0", "LUAHIER_WORKERS": "3", "LUAHIER_MAX_BODY": "300"]) { $1 }
        let child = try LuahierProcess(["serve", rules, "--workers", "4"], environment: environment, stdout: .file("/dev/null"), stdin: false)
        defer { _ = child.stop(by: SIGTERM) }
        let listening = #/, 4 workers\) on http://127\.0\.0\.1:(\d+)/#
        #expect(child.waitForStderr { $0.firstMatch(of: listening) != nil || $0.contains("cannot listen") }, "\(child.stderr)")
        let port = try #require(child.stderr.firstMatch(of: listening).flatMap { UInt16($0.1) }, "\(child.stderr)")
        func post(_ path: String, bytes: Int) throws -> HTTPReply {
            let request = #"{"at": "/app", "event": "Ask", "id": ""}"#
            let body = request.replacingOccurrences(of: #""id": """#, with: #""id": ""# + String(repeating: "x", count: bytes - request.utf8.count) + "\"")
            #expect(body.utf8.count == bytes)
            return try HTTPClient.request(port: port, method: "POST", path: path, body: Array(body.utf8), headers: ["Content-Type": "application/json"])
        }
        // 200 bytes: over the file's 100, within the environment's 300.
        let within = try post("/v1/dispatch", bytes: 200)
        #expect(within.status == 200, "\(within.text)")
        #expect(within.json["trace"] == nil)
        #expect(try post("/v1/dispatch", bytes: 301).status == 413)
        #expect(try HTTPClient.request(port: port, method: "POST", path: "/v1/reload", body: [], headers: [:]).status == 200)
    }
}
#endif
