#!/usr/bin/env python3
"""The manual against the code: every relative link in README.md, docs/ and the other READMEs
resolves (the file, and a heading for a #fragment); the commands cvtrain registers are the ones
its --help summary, README.md's command table and docs/commands.md's table name;
docs/recipes.md's table documents exactly the recipe schema's keys, and every default it gives as
one code span is the one cvtrain prints for a recipe that sets nothing else; the module lists of
docs/development.md and lib/README.md are lib/cvtrain's folders; docs/development.md names
scripts/gpu_check.sh's sections in their order; docs/getting-started.md names every package
scripts/setup.sh installs.

Usage: check_docs.py SOURCE_DIR CVTRAIN_BINARY (exit 1 with every disagreement listed)
       check_docs.py SOURCE_DIR CVTRAIN_BINARY --write (docs/recipes.md's key and default columns
       written from the schema: a drifted default replaced, a new key given a row to describe)."""
import pathlib
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*$")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            found.add(slug(m.group(1)))
    return found


def link_failures(root):
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "lib/README.md", root / "datasets/README.md"]
    failures = []
    for page in (p for p in pages if p.exists()):
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold no links
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file, _, fragment = target.partition("#")
            resolved = (page.parent / file).resolve() if file else page
            where = f"{page.relative_to(root)}: ({target})"
            if not resolved.exists():
                failures.append(f"{where}: no such file")
            elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                failures.append(f"{where}: no heading #{fragment} in {resolved.relative_to(root)}")
    return failures


def subcommands(binary, *words):
    """The subcommands CLI11 lists under SUBCOMMANDS in `cvtrain [WORDS] --help`."""
    out = subprocess.run([binary, *words, "--help"], capture_output=True, text=True, check=True).stdout
    listed = out.split("Subcommands:", 1)[1] if "Subcommands:" in out else ""
    return out, [m.group(1) for m in re.finditer(r"^  ([a-z]+)\s", listed, flags=re.M)]


def registered(binary):
    help_text, top = subcommands(binary)
    names = set()
    for name in top:
        nested = subcommands(binary, name)[1]
        names.update(f"{name} {sub}" for sub in nested) if nested else names.add(name)
    return help_text.split("Subcommands:", 1)[0], names


def table_commands(path):
    """The commands named in the first cell of a markdown table's rows: `cvtrain [train] --recipe ...`."""
    names = set()
    for line in path.read_text().splitlines():
        m = re.match(r"\|\s*`cvtrain (\[train\]|[a-z]+)(?: ([a-z]+))?", line)
        if m:
            first = "train" if m.group(1) == "[train]" else m.group(1)
            names.add(f"{first} {m.group(2)}" if first == "data" and m.group(2) else first)
    return names


def command_failures(root, binary):
    summary, names = registered(binary)
    failures = []
    for name in sorted(names):
        words = name.split()
        said = f"cvtrain {name}" in summary or (words[0] == "data" and re.search(rf"cvtrain data .*\b{words[1]}\b", summary))
        if not said:
            failures.append(f"cvtrain --help: its summary does not name `cvtrain {name}`")
    for page in (root / "README.md", root / "docs/commands.md"):
        listed = table_commands(page)
        failures += [f"{page.relative_to(root)}: the command table lacks `cvtrain {n}`" for n in sorted(names - listed)]
        failures += [f"{page.relative_to(root)}: the command table names `cvtrain {n}`, which cvtrain does not have" for n in sorted(listed - names)]
    return failures


def documented_keys(path):
    """The keys in the first cell of docs/recipes.md's table rows; `.max_area` after
    `augment.random_erasing.min_area` in one cell is augment.random_erasing.max_area."""
    keys = set()
    for line in path.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        full = ""
        for key in re.findall(r"`([a-z_.0-9]+)`", line.split("|")[1]):
            full = full.rsplit(".", 1)[0] + key if key.startswith(".") and full else key
            keys.add(full)
    return keys


def key_failures(root, binary):
    """docs/recipes.md documents exactly the keys of the recipe schema (`cvtrain check --keys`)."""
    schema = set(subprocess.run([binary, "check", "--keys"], capture_output=True, text=True, check=True).stdout.split())
    documented = documented_keys(root / "docs/recipes.md")
    return ([f"docs/recipes.md: no row for the recipe key {k}" for k in sorted(schema - documented)] +
            [f"docs/recipes.md: a row for {k}, which is no recipe key" for k in sorted(documented - schema)])


def printed_values(yaml_text):
    """Dotted key -> value text of the recipe cvtrain check prints (two spaces a level, no comments)."""
    values, sections = {}, []
    for line in yaml_text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        key, _, value = line.strip().partition(":")
        sections = sections[:depth]
        if value.strip():
            values[".".join(sections + [key])] = value.strip()
        else:
            sections.append(key)
    return values


def same_default(documented, printed):
    """Equal text, or numbers that agree to the digits the manual prints ([0.75, 1.3333] for 4/3)."""
    if documented == printed:
        return True
    numbers = [re.findall(r"-?[0-9.]+(?:e-?[0-9]+)?", text) for text in (documented, printed)]
    if not numbers[0] or len(numbers[0]) != len(numbers[1]) or re.sub(r"[-0-9.e]", "", documented) != re.sub(r"[-0-9.e]", "", printed):
        return False
    for shown, exact in zip(*numbers):
        decimals = len(shown.split(".")[1]) if "." in shown and "e" not in shown else 0
        if abs(float(shown) - float(exact)) > 0.5 * 10 ** -decimals:
            return False
    return True


def schema_defaults(binary):
    """Dotted key -> default text, as `cvtrain check` prints a recipe that sets only what has no
    default (data.train, train.global_batch)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as recipe:
        recipe.write("data: {train: /data}\ntrain: {global_batch: 64}\n")
        recipe.flush()
        return printed_values(subprocess.run([binary, "check", "--no-paths", "--recipe", recipe.name], capture_output=True,
                                             text=True, check=True).stdout)


DEFAULT_CELL = re.compile(r"^\| `([a-z_.0-9]+)` \| `([^`]*)` \|")
UNWRITTEN = "TODO: what it does"


def default_failures(root, binary):
    """Each default docs/recipes.md gives as one code span is the schema's, and no row's meaning is
    left as --write's placeholder."""
    printed = schema_defaults(binary)
    failures = []
    for line in (root / "docs/recipes.md").read_text().splitlines():
        row = DEFAULT_CELL.match(line)
        if row and row[1] in printed and not same_default(row[2], printed[row[1]]):
            failures.append(f"docs/recipes.md: {row[1]}'s default is `{row[2]}`, cvtrain's is `{printed[row[1]]}`")
        if UNWRITTEN in line:
            failures.append(f"docs/recipes.md: a row's meaning is still `{UNWRITTEN}`: {line.split('|')[1].strip()}")
    return failures


def write_reference(root, binary):
    """Writes docs/recipes.md's key and default columns from the schema: a default that drifted is
    replaced, and a key without a row gets one (its meaning a placeholder that fails the check until
    a person writes it). Returns the number of rows changed or added."""
    page = root / "docs/recipes.md"
    printed = schema_defaults(binary)
    lines, changed = page.read_text().splitlines(), 0
    for i, line in enumerate(lines):
        row = DEFAULT_CELL.match(line)
        if row and row[1] in printed and not same_default(row[2], printed[row[1]]):
            lines[i] = line.replace(f"`{row[2]}`", f"`{printed[row[1]]}`", 1)
            changed += 1
    schema = subprocess.run([binary, "check", "--keys"], capture_output=True, text=True, check=True).stdout.split()
    documented = documented_keys(page)
    last_row = max(i for i, line in enumerate(lines) if line.startswith("| `"))
    for key in [k for k in schema if k not in documented]:
        last_row += 1
        lines.insert(last_row, f"| `{key}` | {'`' + printed[key] + '`' if key in printed else '—'} | {UNWRITTEN} |")
        changed += 1
    page.write_text("\n".join(lines) + "\n")
    return changed


def module_failures(root):
    """docs/development.md's "a folder per module (...)" and lib/README.md's layer table name exactly
    the module folders of lib/cvtrain."""
    folders = {p.name for p in (root / "lib/cvtrain").iterdir() if p.is_dir()}
    failures = []
    listed = re.search(r"a folder per module \(([^)]*)\)", (root / "docs/development.md").read_text())
    named = {"docs/development.md": set(re.split(r"[,\s]+", listed.group(1).strip())) if listed else set(),
             "lib/README.md": set(re.findall(r"^\| `([a-z_]+)` \| [0-9] \|", (root / "lib/README.md").read_text(), flags=re.M))}
    for page, modules in named.items():
        failures += [f"{page}: its module list lacks {m} (a folder of lib/cvtrain)" for m in sorted(folders - modules)]
        failures += [f"{page}: its module list names {m}, which is no folder of lib/cvtrain" for m in sorted(modules - folders)]
    return failures


def gpu_section_failures(root):
    """docs/development.md names scripts/gpu_check.sh's default sections, in the order `run` takes them."""
    script = re.search(r'^SECTIONS="([^"]*)"', (root / "scripts/gpu_check.sh").read_text(), flags=re.M)
    documented = re.search(r"the sections, in\s+order: `([^`]*)`", (root / "docs/development.md").read_text())
    if not script or not documented:
        return ["docs/development.md or scripts/gpu_check.sh: no list of the GPU check's sections found"]
    if script.group(1).split() != documented.group(1).split():
        return [f"docs/development.md: the GPU check's sections are `{documented.group(1)}`, scripts/gpu_check.sh runs `{script.group(1)}`"]
    return []


def package_failures(root):
    """Every Debian and PyPI package scripts/setup.sh installs is named in docs/getting-started.md."""
    setup = (root / "scripts/setup.sh").read_text()
    packages = []
    for variable in ("APT_PACKAGES", "PIP_PACKAGES"):
        listed = re.search(variable + r"=\((.*?)\)\s*(#|\n)", setup, flags=re.S)
        words = re.findall(r'"?([A-Za-z0-9][A-Za-z0-9._+-]*)(?:[=<>][^" ]*)?"?', re.sub(r"#.*", "", listed.group(1))) if listed else []
        packages += [w for w in words if not w.startswith("$")]
    page = (root / "docs/getting-started.md").read_text()
    return [f"docs/getting-started.md: setup.sh installs {p}, which the page does not name" for p in packages
            if f"`{p}`" not in page and f"`{p}==" not in page]


def main():
    root, binary = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2]
    if sys.argv[3:] == ["--write"]:
        print(f"docs/recipes.md: {write_reference(root, binary)} row(s) written from the schema")
        return 0
    failures = (link_failures(root) + command_failures(root, binary) + key_failures(root, binary) + default_failures(root, binary)
                + module_failures(root) + gpu_section_failures(root) + package_failures(root))
    for failure in failures:
        print(failure)
    print(f"{len(failures)} disagreement(s) between the manual and the code")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
