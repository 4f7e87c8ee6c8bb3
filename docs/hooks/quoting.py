"""Live code quotes: plain functions over the repository's source, with no MkDocs import.

The MkDocs hook (quotes.py) calls these. They take text and return text plus a list of error messages, so a
Python-Markdown extension can call the same functions later (Zensical reads mkdocs.yml but ignores `hooks:`).

What a chapter can write, each on its own line, outside code fences (indented is fine, e.g. in content tabs):

    ::: quote agentloop.events.make                  an object: function, class, method, assignment, module
    ::: quote agentloop.events.make hl=3-4,7         highlight these lines (real file line numbers)
    ::: quote agentloop/events.py#region-name        the lines between `# [quote:region-name]` and
                                                     `# [/quote:region-name]` (`//` comments in .ts files)
    ::: quote agentloop/events.py:12-30              a line range (or one line: `:12`)
    ::: quote agentloop/events.py                    the whole file

In prose, inline code that names a file and line (`agentloop/events.py:42`, or `events.py:42` when only one
file has that name) or an object (`agentloop.events.make`) becomes a link to that line on the source page.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

# The packages whose files get source pages and can be quoted; a missing one is skipped.
PACKAGES = ("agentloop", "demo_server")
# File suffix -> Pygments lexer name. Only these get source pages.
LANGS = {".py": "python", ".ts": "typescript"}
# Folder (inside docs_dir) of the generated source pages.
SOURCE_DIR = "source"
# The API reference page (mkdocstrings), which every listing of a Python object links to.
REFERENCE_PAGE = "reference.md"
# Line anchors on source pages are #L<n>; anchor() is the one place that spells it.
ANCHOR_PREFIX = "L"


def anchor(line: int) -> str:
    return f"{ANCHOR_PREFIX}{line}"


@dataclass(frozen=True)
class Span:
    """Lines first..last (1-based, inclusive) of the file at `path` (relative to the repository root)."""

    path: str
    first: int
    last: int


@dataclass
class SourceFile:
    path: str  # "agentloop/events.py"
    lines: list[str]  # without line endings; lines[0] is line 1
    lang: str
    module: str | None = None  # dotted name, Python files only


@dataclass
class Index:
    """Every quotable file and object of the packages, as they are on disk now."""

    root: Path
    files: dict[str, SourceFile] = field(default_factory=dict)
    objects: dict[str, Span] = field(default_factory=dict)  # "agentloop.events.make" -> Span
    problems: list[str] = field(default_factory=list)  # files that could not be parsed


class QuoteError(Exception):
    pass


# --- reading the source ---------------------------------------------------------------------------------


def read_lines(path: Path) -> list[str]:
    # Split on "\n" only: str.splitlines() also splits on \f and \u2028, which Python does not count as lines.
    text = path.read_text(encoding="utf-8")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _collect(body: list[ast.stmt], prefix: str, path: str, out: dict[str, Span]) -> None:
    """Functions, classes (with their methods and nested classes) and simple assignments, by dotted name."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # A listing of a decorated object starts at its first decorator.
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out[f"{prefix}.{node.name}"] = Span(path, first, node.end_lineno or node.lineno)
            if isinstance(node, ast.ClassDef):
                _collect(node.body, f"{prefix}.{node.name}", path, out)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    out[f"{prefix}.{target.id}"] = Span(
                        path, node.lineno, node.end_lineno or node.lineno
                    )


def build_index(root: Path, packages: tuple[str, ...] = PACKAGES) -> Index:
    """Walk the packages now (so a module added by anyone appears without configuration) and parse each file."""
    index = Index(root=root)
    for package in packages:
        top = root / package
        if not top.is_dir():
            continue
        for file in sorted(top.rglob("*")):
            if not file.is_file() or file.suffix not in LANGS or "__pycache__" in file.parts:
                continue
            rel = file.relative_to(root).as_posix()
            try:
                lines = read_lines(file)
            except (OSError, UnicodeDecodeError) as exc:
                index.problems.append(f"{rel}: cannot read: {exc}")
                continue
            source = SourceFile(rel, lines, LANGS[file.suffix])
            index.files[rel] = source
            if file.suffix != ".py":
                continue
            source.module = module_name(rel)
            index.objects[source.module] = Span(rel, 1, max(len(lines), 1))
            try:
                tree = ast.parse("\n".join(lines), filename=rel)
            except SyntaxError as exc:
                index.problems.append(f"{rel}: cannot parse: {exc}")
                continue
            _collect(tree.body, source.module, rel, index.objects)
    return index


# --- resolving a reference to a span of lines ----------------------------------------------------------


def resolve_path(index: Index, ref: str) -> str:
    """A repository path, or a path suffix such as `events.py` that only one file ends with."""
    if ref in index.files:
        return ref
    matches = sorted(p for p in index.files if p.endswith("/" + ref))
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise QuoteError(f"{ref!r} is ambiguous ({', '.join(matches)}): write more of the path")
    raise QuoteError(f"no file {ref!r} in {', '.join(PACKAGES)}")


def resolve_object(index: Index, name: str) -> Span:
    if name in index.objects:
        return index.objects[name]
    # Name the module it would be in, so the message says where to look.
    modules = {f.module: f.path for f in index.files.values() if f.module}
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in modules:
            raise QuoteError(f"no object {name!r} in {modules[module]}")
    raise QuoteError(f"no module or object {name!r}")


def _region(index: Index, path: str, name: str) -> Span:
    lines = index.files[path].lines
    start = re.compile(r"^\s*(?:#|//)\s*\[quote:" + re.escape(name) + r"\]\s*$")
    end = re.compile(r"^\s*(?:#|//)\s*\[/quote:" + re.escape(name) + r"\]\s*$")
    starts = [i + 1 for i, line in enumerate(lines) if start.match(line)]
    ends = [i + 1 for i, line in enumerate(lines) if end.match(line)]
    if not starts:
        raise QuoteError(f"marker [quote:{name}] not found in {path}")
    if not ends:
        raise QuoteError(f"marker [/quote:{name}] not found in {path}")
    if len(starts) > 1 or len(ends) > 1:
        raise QuoteError(f"marker [quote:{name}] appears more than once in {path}")
    first, last = starts[0] + 1, ends[0] - 1
    if first > last:
        raise QuoteError(f"region {name!r} in {path} is empty or its end marker comes first")
    return Span(path, first, last)


def _range(index: Index, path: str, first: int, last: int) -> Span:
    n = len(index.files[path].lines)
    if first < 1 or last < first:
        raise QuoteError(f"bad line range {first}-{last} for {path}")
    if last > n:
        raise QuoteError(f"line {last} is past the end of {path} ({n} lines)")
    return Span(path, first, last)


RANGE_TARGET = re.compile(r"^(?P<path>.+?):(?P<first>\d+)(?:-(?P<last>\d+))?$")


def resolve_target(index: Index, target: str) -> Span:
    """What a directive's target names: `path#region`, `path:12-30`, `path`, or a dotted object name."""
    if "#" in target:
        path_ref, name = target.split("#", 1)
        return _region(index, resolve_path(index, path_ref), name)
    m = RANGE_TARGET.match(target)
    if m:
        path = resolve_path(index, m["path"])
        first = int(m["first"])
        return _range(index, path, first, int(m["last"] or first))
    if "/" in target or any(target.endswith(suffix) for suffix in LANGS):
        path = resolve_path(index, target)
        return Span(path, 1, max(len(index.files[path].lines), 1))
    return resolve_object(index, target)


# --- writing Markdown ----------------------------------------------------------------------------------


def source_page_uri(path: str) -> str:
    """Where the generated page for the file at `path` lives inside docs_dir."""
    return f"{SOURCE_DIR}/{path}.md"


def link_to(page_src_uri: str, path: str, line: int | None = None) -> str:
    """A relative Markdown link target from the page at `page_src_uri` to a line of a source page."""
    rel = posixpath.relpath(source_page_uri(path), posixpath.dirname(page_src_uri) or ".")
    return rel + (f"#{anchor(line)}" if line else "")


def parse_lines(spec: str) -> list[int]:
    """`3-4,7` -> [3, 4, 7]."""
    out: list[int] = []
    for part in spec.replace(" ", ",").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise QuoteError(f"cannot read line numbers {spec!r}")
        a, b = int(m[1]), int(m[2] or m[1])
        if b < a:
            raise QuoteError(f"bad line range {part!r}")
        out.extend(range(a, b + 1))
    return out


def _fence_for(lines: list[str]) -> str:
    # Longer than any backtick run that starts a line of the code, so the code cannot close the fence.
    longest = max((len(m[1]) for line in lines if (m := re.match(r"\s*(`{3,})", line))), default=0)
    return "`" * max(3, longest + 1)


def _dedent(lines: list[str]) -> list[str]:
    # A method's listing starts at its own indentation; line numbers are unchanged.
    indents = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return [line[cut:] for line in lines]


def render_quote(
    index: Index, span: Span, page_src_uri: str, hl: list[int] = (), indent: str = ""
) -> list[str]:
    """A fence with the file's real line numbers and a title naming the lines, then a link to the source page."""
    source = index.files[span.path]
    # A region marker inside a quote is shown as a blank line: the lines keep the file's numbers.
    code = _dedent(
        [
            "" if QUOTE_MARKER.match(line) else line
            for line in source.lines[span.first - 1 : span.last]
        ]
    )
    for line in hl:
        if not span.first <= line <= span.last:
            raise QuoteError(f"hl line {line} is outside the quoted lines {span.first}-{span.last}")
    fence = _fence_for(code)
    attrs = [f'linenums="{span.first}"', f'title="{span.path}:{span.first}-{span.last}"']
    if hl:
        # pymdownx counts hl_lines from 1 inside the block, whatever linenums starts at.
        attrs.append(
            'hl_lines="' + " ".join(str(line - span.first + 1) for line in sorted(set(hl))) + '"'
        )
    out = [f"{fence}{source.lang} {' '.join(attrs)}", *code, fence, ""]
    target = link_to(page_src_uri, span.path, span.first)
    links = f'[source]({target} "{span.path}:{span.first}"){{ .agentloop-quote-src }}'
    if source.module and not source.module.endswith(".__main__"):
        # The module's entry in the API reference, whose heading id is the dotted name (mkdocstrings).
        reference = posixpath.relpath(REFERENCE_PAGE, posixpath.dirname(page_src_uri) or ".")
        links += f" [API]({reference}#{source.module}){{ .agentloop-quote-src }}"
    out.append(links)
    return [indent + line if line else line for line in out]


QUOTE_MARKER = re.compile(r"^\s*(#|//)\s*\[/?quote:[\w.-]+\]\s*$")
DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*):::[ \t]+quote(?:[ \t]+(?P<rest>.*?))?[ \t]*$")
FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(?<![`\\])`(?P<code>[^`\n]+)`(?!`)")
MD_LINK = re.compile(r"!?\[[^\]\n]*\]\([^)\n]*\)")
FILE_REF = re.compile(r"^(?P<path>[\w./-]+\.(?:py|ts))(?::(?P<first>\d+)(?:-(?P<last>\d+))?)?$")
OBJ_REF = re.compile(r"^(?P<name>(?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+)(?:\(\))?$")
PANEL_TAG = re.compile(r"<div\b[^>]*\bclass=\"[^\"]*\bagentloop-panel\b[^\"]*\"[^>]*>")
REPLAY_ATTR = re.compile(r'\bdata-replay="(?P<value>[^"]*)"')


def expand_directive(index: Index, m: re.Match, page_src_uri: str) -> list[str]:
    words = shlex.split(m["rest"] or "")
    if not words:
        raise QuoteError("`::: quote` needs a target")
    target, hl = words[0], []
    for option in words[1:]:
        key, _, value = option.partition("=")
        if key == "hl" and value:
            hl = parse_lines(value)
        else:
            raise QuoteError(f"unknown option {option!r} (known: hl=3-4,7)")
    span = resolve_target(index, target)
    return render_quote(index, span, page_src_uri, hl, m["indent"])


def _link_ref(index: Index, code: str, page_src_uri: str) -> str | None:
    """The link target for inline code that names a file line or an object; None when it names neither."""
    m = FILE_REF.match(code)
    if m:
        ref = m["path"]
        try:
            path = resolve_path(index, ref)
        except QuoteError:
            # A file outside the packages (tests/…, a path in the seed) is left as it is.
            if ref.split("/", 1)[0] in PACKAGES or any(p.endswith("/" + ref) for p in index.files):
                raise
            return None
        if m["first"] is None:
            return link_to(page_src_uri, path)
        span = _range(index, path, int(m["first"]), int(m["last"] or m["first"]))
        return link_to(page_src_uri, path, span.first)
    m = OBJ_REF.match(code)
    if m:
        span = resolve_object(index, m["name"])
        return link_to(page_src_uri, span.path, span.first)
    return None


def link_prose(index: Index, line: str, page_src_uri: str, errors: list[str], where: str) -> str:
    """Turn inline code naming a source line or object into a link; leave code already inside a link alone."""
    taken = [(m.start(), m.end()) for m in MD_LINK.finditer(line)]

    def replace(m: re.Match) -> str:
        if any(a <= m.start() < b for a, b in taken):
            return m[0]
        try:
            target = _link_ref(index, m["code"].strip(), page_src_uri)
        except QuoteError as exc:
            errors.append(f"{where}: reference `{m['code']}`: {exc}")
            return m[0]
        return f"[{m[0]}]({target})" if target else m[0]

    return CODE_SPAN.sub(replace, line)


def page_url_dir(page_url: str) -> str:
    # "chapters/01-x/" (directory URLs) or "chapters/01-x.html": the folder relative URLs resolve against.
    return page_url if page_url.endswith("/") or not page_url else posixpath.dirname(page_url) + "/"


def rewrite_panel(
    line: str,
    page_src_uri: str,
    page_url: str,
    source_url: str,
    exists: Callable[[str], bool],
    notes: list[str],
    where: str,
) -> str:
    """In a panel's opening tag, make `data-replay` (written relative to the Markdown file, like a link)
    relative to the built page's URL, and add `data-source-pattern` so `src` fields can link to source lines.

    `source_url` is the built URL of any source page with its path replaced by `{path}`; `exists(docs_path)`
    says whether the recording is there."""
    here = page_url_dir(page_url)
    in_code = [(m.start(), m.end()) for m in CODE_SPAN.finditer(line)]

    def fix(tag: re.Match) -> str:
        html = tag[0]
        if any(a <= tag.start() < b for a, b in in_code):
            return html  # a panel tag shown as inline code, not a panel
        m = REPLAY_ATTR.search(html)
        if m and not re.match(r"^[a-z]+:|^/", m["value"]):
            docs_path = posixpath.normpath(
                posixpath.join(posixpath.dirname(page_src_uri), m["value"])
            )
            if not exists(docs_path):
                notes.append(f"{where}: recorded run {docs_path} is missing; the panel says so")
            url = posixpath.relpath(docs_path, here or ".")
            html = html[: m.start("value")] + url + html[m.end("value") :]
        if "data-source-pattern=" not in html:
            pattern = posixpath.relpath(source_url, here or ".")
            pattern = pattern + ("/" if source_url.endswith("/") else "")
            html = (
                html[:-1].rstrip("/").rstrip()
                + f' data-source-pattern="{pattern}#{ANCHOR_PREFIX}{{line}}">'
            )
        return html

    return PANEL_TAG.sub(fix, line)


@dataclass
class PageContext:
    src_uri: str  # the page's path inside docs_dir, e.g. "chapters/01-one-question.md"
    url: str  # the built page's URL, e.g. "chapters/01-one-question/"
    where: str  # how messages name the page, e.g. "docs/chapters/01-one-question.md"
    source_url: str = f"{SOURCE_DIR}/{{path}}/"
    exists: Callable[[str], bool] = lambda docs_path: (
        True
    )  # is this file (a recording) in docs_dir?


def expand_page(markdown: str, index: Index, page: PageContext) -> tuple[str, list[str], list[str]]:
    """Expand directives, link prose references and fix panel tags, outside code fences.

    Returns the new Markdown, the errors (each names the page, its line and the reference) and notes."""
    errors: list[str] = []
    notes: list[str] = []
    out: list[str] = []
    fence: tuple[str, int] | None = None  # the open fence's character and length
    for number, line in enumerate(markdown.split("\n"), start=1):
        where = f"{page.where}:{number}"
        if fence:
            char, size = fence
            if re.fullmatch(r"[ \t]*" + re.escape(char) + "{" + str(size) + r",}[ \t]*", line):
                fence = None
            out.append(line)
            continue
        opened = FENCE_OPEN.match(line)
        if opened:
            fence = (opened["fence"][0], len(opened["fence"]))
            out.append(line)
            continue
        directive = DIRECTIVE.match(line)
        if directive:
            try:
                out.extend(expand_directive(index, directive, page.src_uri))
            except QuoteError as exc:
                target = (directive["rest"] or "").split(" ")[0]
                errors.append(f"{where}: quote {target}: {exc}")
                # Not the directive again: mkdocstrings would read a leftover `::: …` line as its own.
                out.append(
                    f'{directive["indent"]}<p class="agentloop-quote-error">Quote failed: '
                    f"{escape(target)}: {escape(str(exc))}</p>"
                )
            continue
        if "`" in line:
            line = link_prose(index, line, page.src_uri, errors, where)
        if "agentloop-panel" in line:
            line = rewrite_panel(
                line, page.src_uri, page.url, page.source_url, page.exists, notes, where
            )
        out.append(line)
    return "\n".join(out), errors, notes


def source_page(source: SourceFile) -> str:
    """The Markdown of one file's source page: the whole file, numbered from 1, kept out of search."""
    head = f"---\nsearch:\n  exclude: true\n---\n\n# `{source.path}`\n\n"
    if not source.lines:
        return head + "This file is empty.\n"
    fence = _fence_for(source.lines)
    body = "\n".join(source.lines)
    return head + f'{fence}{source.lang} linenums="1"\n{body}\n{fence}\n'


# Pygments' per-line ids on a page's Nth code block (anchor_linenums + line_spans).
LINE_ID = re.compile(r'(id|name|href)="(#?)__(?:codelineno|span)-0-(\d+)"')


def anchor_source_lines(html: str) -> tuple[str, set[str]]:
    """On a source page (one code block), name every line L<n> so links read `…/events.py/#L42`."""
    ids: set[str] = set()

    def fix(m: re.Match) -> str:
        attr, line = m[1], int(m[3])
        if attr == "id" and m[0].startswith('id="__span'):
            ids.add(anchor(line))
            return f'id="{anchor(line)}"'
        if attr == "href":
            return f'href="#{anchor(line)}"'
        return m[0]

    return LINE_ID.sub(fix, html), ids


# An id attribute's value. The pattern starts with its literal, which re scans for fast; a leading \b made it
# try every position of the page's HTML, ten times slower (0.57 s of a build), so the word boundary before
# `id` is checked on each match instead.
HTML_ID = re.compile(r'id="([^"]+)"')
WORD = re.compile(r"\w")


def html_ids(html: str) -> set[str]:
    return {
        m[1]
        for m in HTML_ID.finditer(html)
        if m.start() == 0 or not WORD.match(html, m.start() - 1)
    }
