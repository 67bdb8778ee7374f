"""Every repository path, module, link and document the docs and the code name exists.

`README.md` and `docs/*.md` are read line by line, and each reference must resolve in this
checkout:

* **paths** starting `seqgate/`, `devtools/`, `core/`, `tests/`, `scripts/`, `deploy/`,
  `examples/` or `docs/`: the file or folder exists. A `#anchor`, `:line` or `::test` suffix
  is cut off (a `::name` must then be a `def`/`class` of that file), and so is closing
  punctuation. A glob (`*.avsc`, `test_torture_*.py`) must match at least one file. A
  `<placeholder>` (`<provider>.py`, `history/<version>/`) stands for any one name, so it is
  checked as the glob `*` and must match at least one file too: nothing is skipped for it.
  Bare file names listed right after a path (`` `a/b/c.py`, `d.py`, `e.py` ``) are files
  beside it.
  The one skipped form is kubectl's `deploy/<name>`, a Kubernetes resource, not a folder:
  a path after `kubectl` on the same line is not checked.
* **modules** `seqgate.…` and `seqgate_devtools.…`: the longest prefix is a module of the
  checkout (found by file, `.py`, `/__init__.py` or the `.pyi` of the compiled core), and the
  rest, if any, attributes of it (the module is imported). Not modules, and so accepted: an
  entry-point group declared in a `pyproject.toml` (`seqgate.commands`), a file name the
  operator writes (the last part a file suffix: `seqgate.yaml`), and the names mutmut gives
  its mutants (`…__mutmut_18`), which exist only while mutmut runs.
* **links** `[text](target)` that are not URLs: the target exists beside the page, and its
  `#anchor` is a heading of the target page (GitHub's slugs, numbered when repeated).
* **no seed documents**: nothing cites the seed documents the project began from
  (`seeds/000`, "seed 003"), which the repository does not hold.
* **design.md sections** `design.md §n` (and a bare `§n` inside design.md): a numbered
  heading of docs/design.md.
* **short names** in the tables of README's "Layout" section and docs/design.md §1.3: each
  backticked name in a row's contents is something inside the package or folder the row
  names (a module, sub-package, file or folder at any depth, by name or stem; a glob
  matches; a dotted name is a module of the row's package or of `seqgate`). Accepted
  otherwise: a name with a space (a command line, `bridge kafka`), a name right after the
  word "extra" that is an extra of pyproject.toml, and in the `seqgate/cli` row the commands
  other packages add (the `seqgate.commands` entry points).

The code's docstrings and comments (`seqgate/`, `devtools/seqgate_devtools/`, `tests/`,
`examples/`) cite only documents in the repository: each `*.md` named exists (under the
repository or beside the citing file), each `design.md §n` is a section, and nothing cites
the seed documents the project began from, which the repository does not hold.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

from tests.support.paths import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CODE_ROOTS = ["seqgate", "devtools/seqgate_devtools", "tests", "examples"]
ROOTS = "seqgate|devtools|core|tests|scripts|deploy|examples|docs"
PATH = re.compile(rf"(?<![\w./<>*-])(?:{ROOTS})/[\w./<>*?{{}},:#-]*")
MODULE = re.compile(r"(?<![\w./-])seqgate(?:_devtools)?(?:\.\w+)+")
FILE_KINDS = "py|pyi|rs|sh|md|json|yaml|yml|toml|avsc"
SIBLINGS = re.compile(rf"`((?:{ROOTS})/[^`]*/)[^`/]+`((?:,? (?:and )?`[\w-]+\.(?:{FILE_KINDS})`)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
SECTION = re.compile(r"design\.md\)?,?\s*§\s*(\d+(?:\.\d+)*)")
BARE_SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")
CITED_DOC = re.compile(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w-]+\.md)\b")
SEED = re.compile(r"\bseeds?(?:/| )0\d\d\b|shared/seeds", re.IGNORECASE)
FILE_SUFFIXES = {"yaml", "yml", "json", "toml", "txt", "md", "py", "avsc", "properties", "db"}
SKIP_NAMES = {"__pycache__", ".pytest_cache", "target"}
THIS_FILE = Path(__file__).resolve()


def strip_suffixes(ref: str) -> tuple[str, str]:
    """`ref` without closing punctuation, `#anchor` or `:line`; and a `::name` it named."""
    ref = ref.rstrip(".,;:)")
    ref, _, name = ref.partition("::")
    ref = ref.split("#", 1)[0]
    ref = re.sub(r":\d+(?:-\d+)?$", "", ref).rstrip(":")
    return ref, name


def expand_braces(pattern: str) -> list[str]:
    """`a/{b,c}.py` as `a/b.py` and `a/c.py` (one level of braces at a time)."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [p for part in match[1].split(",") for p in expand_braces(head + part + tail)]


def path_exists(ref: str, base: Path = REPO) -> bool:
    """A repository path, glob or `<placeholder>` path resolves under `base`."""
    pattern = re.sub(r"<[^<>]*>", "*", ref).rstrip("/")
    for candidate in expand_braces(pattern):
        if any(ch in candidate for ch in "*?["):
            if next(iter(base.glob(candidate)), None) is None:
                return False
        elif not (base / candidate).exists():
            return False
    return True


def resolve_path(raw: str) -> bool:
    ref, name = strip_suffixes(raw)
    if not path_exists(ref):
        return False
    if name:
        text = (REPO / ref).read_text()
        definition = rf"^\s*(?:async def|def|class) {re.escape(name)}\b"
        return re.search(definition, text, re.M) is not None
    return True


def module_file(dotted: str) -> Path | None:
    """The file of the module `dotted` in the checkout, or None."""
    parts = dotted.split(".")
    top = REPO / "devtools" if parts[0] == "seqgate_devtools" else REPO
    base = top.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".pyi")):
        if candidate.is_file():
            return candidate
    return None


@cache
def entry_point_groups() -> frozenset[str]:
    groups: set[str] = set()
    for project in (REPO / "pyproject.toml", REPO / "devtools" / "pyproject.toml"):
        groups |= set(tomllib.loads(project.read_text())["project"].get("entry-points", {}))
    return frozenset(groups)


def resolve_module(dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[-1] in FILE_SUFFIXES or "__mutmut_" in dotted or dotted in entry_point_groups():
        return True
    for cut in range(len(parts), 0, -1):
        if module_file(".".join(parts[:cut])) is None:
            continue
        value: object = importlib.import_module(".".join(parts[:cut])) if cut < len(parts) else None
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    in_code = False
    for line in page.read_text().splitlines():
        in_code ^= line.startswith("```")
        if in_code or not re.match(r"#{1,6} ", line):
            continue
        base = slug(line.lstrip("#"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def resolve_link(target: str, page: Path) -> bool:
    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
        return True
    file, _, anchor = target.partition("#")
    linked = (page.parent / file).resolve() if file else page
    if not linked.exists():
        return False
    return not anchor or linked.suffix != ".md" or anchor in anchors(linked)


@cache
def design_sections() -> frozenset[str]:
    text = (REPO / "docs" / "design.md").read_text()
    return frozenset(re.findall(r"^#{2,6} (\d+(?:\.\d+)*)\.? ", text, re.M))


def doc_line_problems(line: str, page: Path) -> Iterator[str]:
    """The references on one line of `page` that do not resolve."""
    kubectl = line.find("kubectl ")
    for match in PATH.finditer(line):
        if not (0 <= kubectl < match.start()) and not resolve_path(match[0]):
            yield f"path {match[0]}"
    for match in SIBLINGS.finditer(line):
        for sibling in re.findall(r"`([^`]+)`", match[2]):
            if not path_exists(match[1] + sibling):
                yield f"path {sibling} (beside {match[1]})"
    for match in MODULE.finditer(line):
        if not resolve_module(match[0]):
            yield f"module {match[0]}"
    for match in LINK.finditer(line):
        if not resolve_link(match[1], page):
            yield f"link {match[1]}"
    if seed := SEED.search(line):
        yield f"a seed document, not in the repository ({seed[0]})"
    sections = SECTION.findall(line)
    if page.name == "design.md":
        sections += BARE_SECTION.findall(line)
    yield from (f"design.md §{n}" for n in sections if n not in design_sections())


def doc_problems(page: Path, text: str) -> list[str]:
    """`file:line: reference` for every unresolved reference in `text`, read as `page`."""
    name = page.relative_to(REPO) if page.is_relative_to(REPO) else page
    return [
        f"{name}:{number}: {problem}"
        for number, line in enumerate(text.splitlines(), 1)
        for problem in doc_line_problems(line, page)
    ]


def test_every_path_module_link_and_section_in_the_docs_resolves() -> None:
    problems = [p for page in DOCS for p in doc_problems(page, page.read_text())]
    assert problems == [], "unresolved references in the docs:\n" + "\n".join(problems)


# --- the short names of the layout tables ------------------------------------------------


def row_roots(first_cell: str) -> list[Path]:
    """The folders a table row is about: `a/b/`, `c/` (a sibling of b) or `seqgate.x`."""
    roots: list[Path] = []
    for token in re.findall(r"`([^`]+)`", first_cell):
        if token.startswith(("seqgate.", "seqgate_devtools")):
            parts = token.split(".")
            top = REPO / "devtools" if parts[0] == "seqgate_devtools" else REPO
            roots.append(top.joinpath(*parts))
        elif roots and "/" not in token.rstrip("/"):
            roots.append(roots[0].parent / token)
        else:
            roots.append(REPO / token)
    return roots


@cache
def names_under(root: Path) -> frozenset[str]:
    """Every file's and folder's name and stem below `root` (its own too)."""
    if not root.is_dir():
        return frozenset({root.name, root.stem})
    found = {root.name}
    for path in root.rglob("*"):
        if not SKIP_NAMES.intersection(path.relative_to(root).parts):
            found |= {path.name, path.stem}
    return frozenset(found)


@cache
def extras() -> frozenset[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return frozenset(project.get("optional-dependencies", {}))


@cache
def scripts() -> frozenset[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return frozenset(project.get("scripts", {}))


def dotted_exists(name: str, roots: list[Path]) -> bool:
    """`a.b` is a module at any depth below one of `roots` or `seqgate/` (`worker.step`)."""
    if name.startswith(("seqgate.", "seqgate_devtools.")):
        return resolve_module(name)
    relative = name.replace(".", "/")
    bases = [root for root in roots if root.is_dir()] + [REPO / "seqgate"]
    return any(
        next(base.glob(f"**/{relative}{end}"), None) is not None
        for base in bases
        for end in (".py", "/__init__.py", ".pyi")
    )


@cache
def added_commands() -> frozenset[str]:
    project = tomllib.loads((REPO / "devtools" / "pyproject.toml").read_text())["project"]
    return frozenset(project["entry-points"]["seqgate.commands"])


def resolve_short(name: str, roots: list[Path], before: str) -> bool:
    token = name.rstrip("/")
    if " " in token or token in scripts():
        return True
    if before.endswith("extra "):
        return token in extras()
    if REPO / "seqgate" / "cli" in roots and token in added_commands():
        return True
    if any(ch in token for ch in "*?["):
        return any(root.is_dir() and next(root.rglob(token), None) for root in roots)
    if "/" in name:
        return any(path_exists(token, root) for root in roots) or path_exists(token)
    suffix = token.rsplit(".", 1)[-1] if "." in token else ""
    if suffix and suffix not in FILE_SUFFIXES | {"rs", "typed"}:
        return dotted_exists(token, roots)
    if suffix and any((root.parent / token).is_file() for root in roots):
        return True  # the package's own project file, beside its folder
    return any(token in names_under(root) for root in roots)


def table_problems(page: str, text: str) -> list[str]:
    """Unresolved short names in the two-or-more-column table rows of `text`."""
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        cells = line.split(" | ")
        if not line.startswith("| `") or len(cells) < 2:
            continue
        roots = row_roots(cells[0])
        for match in re.finditer(r"`([^`]+)`", cells[1]):
            if not resolve_short(match[1], roots, cells[1][: match.start()]):
                problems.append(f"{page}:{number}: {match[1]} (not in {cells[0].strip('| ')})")
    return problems


def section(text: str, heading: str) -> str:
    """The lines of the section `heading`, blank lines standing in for the rest."""
    lines = text.splitlines()
    start = lines.index(heading)
    level = heading.split(" ")[0]
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(rf"#{{1,{len(level)}}} ", lines[i])),
        len(lines),
    )
    return "\n" * start + "\n".join(lines[start:end])


def test_the_short_names_of_the_layout_tables_resolve() -> None:
    readme = section((REPO / "README.md").read_text(), "## Layout")
    design = section(
        (REPO / "docs" / "design.md").read_text(),
        "### 1.3 Where each part lives, and which way imports go",
    )
    problems = table_problems("README.md", readme) + table_problems("docs/design.md", design)
    assert problems == [], "layout names that are not in their package:\n" + "\n".join(problems)


# --- documents the code cites ---------------------------------------------------------


def citation_problems(source: Path, text: str) -> Iterator[str]:
    """Documents `text` (read as the file `source`) cites that are not in the repository."""
    name = source.relative_to(REPO) if source.is_relative_to(REPO) else source
    for number, line in enumerate(text.splitlines(), 1):
        for cited in CITED_DOC.findall(line):
            bases = (REPO, REPO / "docs", source.parent)
            if not any(path_exists(cited, base) for base in bases):
                yield f"{name}:{number}: {cited}"
        for n in SECTION.findall(line):
            if n not in design_sections():
                yield f"{name}:{number}: design.md §{n}"
        if seed := SEED.search(line):
            yield f"{name}:{number}: a seed document, not in the repository ({seed[0]})"


def code_files() -> Iterable[Path]:
    for root in CODE_ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            if path.resolve() != THIS_FILE and "__pycache__" not in path.parts:
                yield path


def test_the_code_cites_only_documents_in_the_repository() -> None:
    problems = [p for path in code_files() for p in citation_problems(path, path.read_text())]
    assert problems == [], "the code cites documents it does not hold:\n" + "\n".join(problems)


def test_design_section_5_names_every_module_of_the_worker() -> None:
    text = section(
        (REPO / "docs" / "design.md").read_text(), "## 5. The processor and exactly-once"
    )
    intro = text.split("\n### 5.1 ", 1)[0]
    modules = sorted(p.name for p in (REPO / "seqgate" / "streams" / "worker").glob("[!_]*.py"))
    missing = [name for name in modules if f"`{name}`" not in intro]
    assert missing == [], f"worker modules docs/design.md §5 does not describe: {missing}"


def test_each_check_fails_on_a_reference_that_does_not_resolve() -> None:
    page = REPO / "docs" / "example.md"
    text = "\n".join(
        [
            "Fine: `seqgate/schemas/*.avsc`, `seqgate/connectors/parsers/<provider>.py`,",
            "`seqgate/runtime/session.py:12`, seqgate.streams.worker.processor.Worker, and",
            "[design](design.md#13-where-each-part-lives-and-which-way-imports-go), §1.3.",
            "Stale: `seqgate/streams/state/partition_stores.py` and `seqgate/nothing/<x>.py`,",
            "seqgate.streams.worker.processor.NoSuchThing, seqgate_devtools.nothing,",
            "[gone](gone.md), [bad anchor](design.md#no-such-heading), design.md §42,",
            "`tests/unit/test_docs.py::test_no_such_test`, `seqgate/runtime/session.py`, `x.py`.",
            "As the guide in `" + "see" + "ds/001` says.",
        ]
    )
    assert doc_problems(page, text) == [
        "docs/example.md:4: path seqgate/streams/state/partition_stores.py",
        "docs/example.md:4: path seqgate/nothing/<x>.py",
        "docs/example.md:5: module seqgate.streams.worker.processor.NoSuchThing",
        "docs/example.md:5: module seqgate_devtools.nothing",
        "docs/example.md:6: link gone.md",
        "docs/example.md:6: link design.md#no-such-heading",
        "docs/example.md:6: design.md §42",
        "docs/example.md:7: path tests/unit/test_docs.py::test_no_such_test",
        "docs/example.md:7: path x.py (beside seqgate/runtime/)",
        "docs/example.md:8: a seed document, not in the repository (" + "see" + "ds/001)",
    ]


def test_the_table_and_citation_checks_fail_on_names_that_do_not_resolve() -> None:
    rows = "| `seqgate/streams/worker/` | the loop (`processor`), `engine`, extra `nope` |"
    assert table_problems("README.md", rows) == [
        "README.md:1: engine (not in `seqgate/streams/worker/`)",
        "README.md:1: nope (not in `seqgate/streams/worker/`)",
    ]
    seed = "see" + "ds/000"  # spelled apart, although this file is not among those scanned
    code = f'"""As docs/design.md §3 and docs/kinds.md say, not {seed} or docs/guide.md §99."""'
    source = REPO / "seqgate" / "example.py"
    assert list(citation_problems(source, code)) == [
        "seqgate/example.py:1: docs/guide.md",
        f"seqgate/example.py:1: a seed document, not in the repository ({seed})",
    ]
