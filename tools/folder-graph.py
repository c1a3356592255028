#!/usr/bin/env python3
"""The folder dependency graph of one Swift module (default: Sources/LuaHierarchy).

Folder A -> folder B when a file in A names something declared in B: a top-level type, a
free function or global, or a member of an extension of a type from elsewhere (another
folder's, or the standard library's). A name declared in
more than one folder is left out (it cannot be told apart by name alone); so are private
and fileprivate declarations. Top-level files count as the folder "(root)".

Usage: tools/folder-graph.py [module-folder] [--examples N]
Prints each edge with its number of references and a few file:line examples, then the
two-way pairs. Tests/luahierTests/ArchitectureTests.swift computes the same graph in Swift
(keep the two in step).
"""
import os
import re
import sys
from collections import defaultdict

KEYWORDS = {
    "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import",
    "init", "inout", "internal", "let", "open", "operator", "private", "protocol", "public",
    "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case", "continue",
    "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat",
    "return", "switch", "where", "while", "as", "catch", "false", "is", "nil", "super", "self",
    "Self", "throw", "throws", "true", "try", "package", "actor", "await", "async", "some", "any",
    "mutating", "nonmutating", "final", "lazy", "weak", "unowned", "override", "convenience",
    "required", "indirect", "consuming", "borrowing", "sending", "nonisolated", "get", "set",
    "willSet", "didSet",
}
TYPE_KEYWORDS = {"struct", "class", "enum", "protocol", "actor", "typealias"}
MEMBER_KEYWORDS = {"func", "var", "let"}


def tokens(text):
    """(identifier or punctuation, line) pairs of Swift source, comments and the literal parts
    of strings left out (an interpolation's code is kept)."""
    out = []
    i, line, n = 0, 1, len(text)
    # Each entry: the paren depth at which an interpolation inside a string ends, and the
    # string's closing delimiter to resume with.
    resume = []
    depth = 0

    def skip_string(i, line, close):
        """Skips string content from i up to `close` or an interpolation; returns
        (index after, line, True when an interpolation opened)."""
        while i < n:
            if text.startswith(close, i):
                return i + len(close), line, False
            c = text[i]
            if c == "\n":
                line += 1
            if c == "\\":
                hashes = close.count("#")
                if text.startswith("#" * hashes + "(", i + 1):
                    return i + 2 + hashes, line, True
                # In a raw string a lone backslash is a character; else it escapes the next.
                i += 1 if hashes else 2
                continue
            i += 1
        return i, line, False

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            nest = 0
            while i < n:
                if text.startswith("/*", i):
                    nest += 1
                    i += 2
                elif text.startswith("*/", i):
                    nest -= 1
                    i += 2
                    if nest == 0:
                        break
                else:
                    if text[i] == "\n":
                        line += 1
                    i += 1
        elif c == '"' or (c == "#" and re.match(r'#+"', text[i:i + 8])):
            hashes = 0
            while text[i] == "#":
                hashes += 1
                i += 1
            quote = '"""' if text.startswith('"""', i) else '"'
            i += len(quote)
            close = quote + "#" * hashes
            i, line, interpolating = skip_string(i, line, close)
            if interpolating:
                resume.append((depth, close))
                depth += 1
                out.append(("(", line))
        elif c.isascii() and (c.isalpha() or c == "_"):
            j = i
            while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append((text[i:j], line))
            i = j
        elif c == "`":
            j = text.index("`", i + 1)
            out.append((text[i + 1:j], line))
            i = j + 1
        else:
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if resume and resume[-1][0] == depth:
                    _, close = resume.pop()
                    out.append((")", line))
                    i, line, interpolating = skip_string(i + 1, line, close)
                    if interpolating:
                        resume.append((depth, close))
                        depth += 1
                        out.append(("(", line))
                    continue
            out.append((c, line))
            i += 1
    return out


def is_identifier(token):
    return (token[0].isalpha() or token[0] == "_") and token not in KEYWORDS


def declarations(toks):
    """What this file declares for other files: (name, line, extended) of each non-private
    top-level type, free function or global, and member of an extension (`extended`:
    the extended type's name; None for the others). Members of a type's own body are left
    out: other folders reach them through the type's name, and their names (`line`, `count`)
    are too often a local's or the standard library's too."""
    names = []
    # Each open brace: the name of the type or extension whose body it opens ("" for a
    # type's own body), or None for any other brace (a function's, a closure's).
    scopes = []
    pending = None
    statement_start = 0
    for index, (token, line) in enumerate(toks):
        if token == "{":
            scopes.append(pending)
            pending = None
            statement_start = index + 1
            continue
        if token == "}":
            if scopes:
                scopes.pop()
            statement_start = index + 1
            continue
        if token == ";":
            statement_start = index + 1
        if any(scope is None for scope in scopes):
            continue
        named = index + 1 < len(toks) and is_identifier(toks[index + 1][0])
        if token in ("func", "init", "subscript", "var", "let"):
            pending = None
        elif named and token == "extension":
            pending = toks[index + 1][0]
        elif named and token in TYPE_KEYWORDS and token != "typealias":
            pending = ""
        if not named or (token not in TYPE_KEYWORDS and token not in MEMBER_KEYWORDS):
            continue
        extended = scopes[-1] if scopes else None
        # Top level, or a member right inside an extension: nested types (`Result`, `Key`)
        # share their names too often, and are reached through their outer type's name.
        if len(scopes) > 1 or (scopes and (token not in MEMBER_KEYWORDS or extended == "")):
            continue
        # The modifiers since the last declaration on this line, or the line above.
        before = [t for t, l in toks[max(statement_start, index - 8):index] if l >= line - 1]
        private = any(
            t in ("private", "fileprivate") and not (k + 1 < len(before) and before[k + 1] == "(")
            for k, t in enumerate(before)
        )
        if not private:
            names.append((toks[index + 1][0], line, extended if token in MEMBER_KEYWORDS else None))
    return names


def swift_files(module):
    for directory, _, files in os.walk(module):
        for name in sorted(files):
            if name.endswith(".swift"):
                yield os.path.join(directory, name)


def folder_of(module, path):
    relative = os.path.relpath(path, module)
    return relative.split(os.sep)[0] if os.sep in relative else "(root)"


def graph(module):
    """edges[(a, b)] = [(file, line, name), ...]"""
    sources = {path: tokens(open(path, encoding="utf-8").read()) for path in sorted(swift_files(module))}
    found = [(name, extended, folder_of(module, path)) for path, toks in sources.items() for name, _, extended in declarations(toks)]
    types = defaultdict(set)
    for name, extended, folder in found:
        if extended is None:
            types[name].add(folder)
    declared_in = defaultdict(set)
    for name, extended, folder in found:
        # An extension's members count where the extended type is not the folder's own.
        if extended is None or folder not in types.get(extended, ()):
            declared_in[name].add(folder)
    edges = defaultdict(list)
    for path, toks in sources.items():
        here = folder_of(module, path)
        for token, line in toks:
            folders = declared_in.get(token)
            if not folders or here in folders or len(folders) != 1:
                continue
            (there,) = folders
            edges[(here, there)].append((os.path.relpath(path, module), line, token))
    return edges


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    examples = 3
    if "--examples" in sys.argv:
        examples = int(sys.argv[sys.argv.index("--examples") + 1])
        args = [a for a in args if a != str(examples)]
    module = args[0] if args else "Sources/LuaHierarchy"
    edges = graph(module)
    print(f"# Folder graph of {module}: {len(edges)} edges")
    for (a, b), uses in sorted(edges.items()):
        names = sorted({name for _, _, name in uses})
        print(f"{a} -> {b}  ({len(uses)} uses of {len(names)} names: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})")
        seen = set()
        shown = 0
        for file, line, name in uses:
            if name in seen or shown >= examples:
                continue
            seen.add(name)
            shown += 1
            print(f"    {file}:{line} {name}")
    pairs = sorted((a, b) for (a, b) in edges if a < b and (b, a) in edges)
    print(f"\n# Two-way pairs: {len(pairs)}")
    for a, b in pairs:
        print(f"{a} <-> {b}  ({len(edges[(a, b)])} / {len(edges[(b, a)])} uses)")


if __name__ == "__main__":
    main()
