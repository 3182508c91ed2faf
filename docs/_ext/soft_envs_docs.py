"""Sphinx directives that write the environment pages from the code at build time.

Every table on an environment page comes from the code when the docs are built, so it cannot
drift from it: the spaces from instantiated environments, the reward terms from a step's
``info`` and the formulas in the module docstrings, the keywords from the constructors'
signatures and their ``Args:`` sections, the episode from the registered spec, the realism table
from ``Realism(table).describe()``, the command line from its parser. A reward term without a
formula in its module docstring, or a keyword without an ``Args:`` entry, is a build warning —
an error under ``sphinx-build -W``.

Directives (MyST: ```` ```{env-space} soft_envs/PeterReach-v0 ````):

* ``env-space ENV_ID`` with ``:space: action|observation``, ``:variants:`` (one
  ``keyword=value, …`` per line, Python literals) and ``:docstring-table: MODULE`` (the first
  reST table of that module's docstring: what each slice of the observation is);
* ``env-rewards ENV_ID``, ``env-arguments ENV_ID``, ``env-episode ENV_ID``, ``env-realism ENV_ID``;
* ``cli-help SUBCOMMAND`` (``-`` for ``soft-envs --help``).

The benchmarks page is BENCHMARKS.md itself, read at build time (``source-read``), and the API
page lists every module of the package found on disk, so new modules appear without an edit.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[2]
LOGGER = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------------------------
def rst_to_md(text: str) -> str:
    """reST inline markup of the docstrings -> MyST: ``x`` -> `x`, :role:`x` -> {role}`x`."""
    text = re.sub(r":(\w+(?::\w+)?):`", r"{\1}`", text)
    return re.sub(r"``(.+?)``", r"`\1`", text)


def list_table(headers: list[str], rows: list[list[str]], widths: str | None = None) -> str:
    """A MyST ``list-table`` (cells may hold any inline markup, pipes included)."""
    out = ["```{list-table}", ":header-rows: 1"]
    if widths:
        out.append(f":widths: {widths}")
    out.append("")
    for row in [headers, *rows]:
        out.append(f"* - {row[0]}")
        out += [f"  - {cell}" for cell in row[1:]]
    out.append("```")
    return "\n".join(out)


def number(value: float) -> str:
    if np.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.6g}".replace("-", "−")


def bounds(array: np.ndarray) -> str:
    """A box bound for a table: one number if uniform, else the elements (or their range)."""
    flat = np.asarray(array, dtype=float).ravel()
    if flat.size and np.all(flat == flat[0]):
        return number(flat[0])
    if flat.size <= 6:
        return "(" + ", ".join(number(v) for v in flat) + ")"
    return f"{number(flat.min())} … {number(flat.max())} (per element)"


def space_rows(space, prefix: str = "") -> list[list[str]]:
    """One table row per box of ``space`` (a ``Dict`` gives one per key)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        rows = []
        for key, sub in space.spaces.items():
            rows += space_rows(sub, f"{prefix}{key}.")
        return rows
    name = f"`{prefix[:-1]}`" if prefix else ""
    if isinstance(space, spaces.Box):
        return [[name, f"`Box{space.shape}`", f"`{space.dtype}`", bounds(space.low), bounds(space.high)]]
    return [[name, f"`{space}`", f"`{getattr(space, 'dtype', '')}`", "", ""]]


def value_text(value: Any) -> str:
    """A default as it reads best: long floats (1/240) to 6 significant digits."""
    return f"{value:.6g}" if isinstance(value, float) and len(repr(value)) > 10 else repr(value)


def parse_variants(text: str | None) -> list[dict[str, Any]]:
    """``:variants:`` lines (``n_modules=4, kinematic=True``) -> keyword dicts; the default first."""
    out: list[dict[str, Any]] = [{}]
    for line in (text or "").splitlines():
        if line.strip():
            call = ast.parse(f"f({line.strip()})", mode="eval").body
            out.append({kw.arg: ast.literal_eval(kw.value) for kw in call.keywords})
    return out


def label(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"`{k}={v!r}`" for k, v in kwargs.items()) or "default"


def make_env(env_id: str, **kwargs: Any):
    import gymnasium as gym

    import soft_envs  # noqa: F401  (registers the environments)

    return gym.make(env_id, **kwargs)


def env_class(env_id: str) -> type:
    import gymnasium as gym

    import soft_envs  # noqa: F401

    entry = gym.spec(env_id).entry_point
    module, name = entry.split(":")
    return getattr(importlib.import_module(module), name)


def docstring_table(module: str) -> list[list[str]]:
    """The first reST simple table of ``module``'s docstring, as rows of cells (header first)."""
    doc = importlib.import_module(module).__doc__ or ""
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if re.fullmatch(r"\s*=+(\s+=+)+\s*", line)]
    if len(rules) < 3:
        raise ValueError(f"{module}'s docstring has no table")
    first, header_rule, last = rules[0], rules[1], rules[2]
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", lines[first])]

    def cells(line: str) -> list[str]:
        starts = [s for s, _ in spans] + [None]
        return [line[starts[k]:starts[k + 1]].strip() if starts[k + 1] else line[starts[k]:].strip()
                for k in range(len(spans))]

    rows = [cells(lines[i]) for i in range(first + 1, header_rule)]
    rows += [cells(lines[i]) for i in range(header_rule + 1, last) if lines[i].strip()]
    return [[rst_to_md(c) for c in row] for row in rows]


def args_sections(cls: type) -> dict[str, str]:
    """Keyword -> description from the Google-style ``Args:`` sections of ``cls`` and its bases."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        doc = inspect.getdoc(klass) if klass.__module__.startswith("soft_envs") else None
        match = re.search(r"^Args:\n((?:(?: {4}.*)?\n)*)", (doc or "") + "\n", re.M)
        if not match:
            continue
        names: list[str] = []
        pending = ""
        for line in match.group(1).splitlines():
            if line.startswith("        ") and names and not pending:  # continuation of a description
                for name in names:
                    out[name] += " " + line.strip()
                continue
            if not line.strip():
                continue
            text = pending + line.strip()
            head, sep, rest = text.partition(": ")
            if not sep or not re.fullmatch(r"[\w*, ]+", head):
                pending = text + " " if text.endswith(",") else ""
                continue
            pending = ""
            names = [n.strip().lstrip("*") for n in head.split(",") if n.strip()]
            for name in names:
                out[name] = rest.strip()
    # "time_step: ...; frame_skip: ..." inside one entry
    for text in list(out.values()):
        for other, desc in re.findall(r";\s*(\w+): ([^;]+)", text):
            out.setdefault(other, desc.strip())
    return out


def constructor_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The keywords ``gym.make`` passes to ``cls``: its own and (through ``**kwargs``) its bases'."""
    params: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or not klass.__module__.startswith("soft_envs"):
            continue
        signature = inspect.signature(klass.__init__)
        for name, p in signature.parameters.items():
            if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                params.setdefault(name, p)
        if not any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values()):
            break
    return params


def module_docstrings(cls: type) -> str:
    """The docstrings of the modules of ``cls`` and its soft_envs bases (where formulas live)."""
    seen = []
    for klass in cls.__mro__:
        module = klass.__module__
        if module.startswith("soft_envs.envs") and module not in seen:
            seen.append(module)
    return "\n".join(importlib.import_module(m).__doc__ or "" for m in seen)


# ---------------------------------------------------------------------------------------------
# Directives
# ---------------------------------------------------------------------------------------------
class _MarkdownDirective(SphinxDirective):
    """A directive that writes MyST markdown and parses it in place."""

    required_arguments = 1

    def markdown(self) -> str:
        raise NotImplementedError

    def run(self):
        try:
            text = self.markdown()
        except Exception as exc:  # a broken env must fail the build, loudly
            raise self.error(f"{self.name} {self.arguments[0]}: {type(exc).__name__}: {exc}") from exc
        return self.parse_text_to_nodes(text)

    def warn(self, message: str) -> None:
        LOGGER.warning(f"{self.name} {self.arguments[0]}: {message}", location=self.get_location())


class EnvSpace(_MarkdownDirective):
    option_spec = {"space": directives.unchanged_required, "variants": directives.unchanged,
                   "docstring-table": directives.unchanged}

    def markdown(self) -> str:
        kind = self.options.get("space", "action")
        rows = []
        for kwargs in parse_variants(self.options.get("variants")):
            env = make_env(self.arguments[0], **kwargs)
            try:
                space = getattr(env, f"{kind}_space")
            finally:
                env.close()
            for row in space_rows(space):
                rows.append([label(kwargs) + (f": {row[0]}" if row[0] else "")] + row[1:])
        text = list_table(["variant", "space", "dtype", "low", "high"], rows, widths="30 18 10 21 21")
        if "docstring-table" in self.options:
            table = docstring_table(self.options["docstring-table"])
            text += (f"\n\nWhat each slice holds (the table of {{mod}}`{self.options['docstring-table']}`'s "
                     "docstring):\n\n" + list_table(table[0], table[1:], widths="25 75"))
        return text


class EnvRewards(_MarkdownDirective):
    def markdown(self) -> str:
        cls = env_class(self.arguments[0])
        env = make_env(self.arguments[0])
        try:
            env.reset(seed=0)
            env.action_space.seed(0)
            _, reward, _, _, info = env.step(env.action_space.sample())
        finally:
            env.close()
        terms = [key[len("reward_"):] for key in info if key.startswith("reward_")]
        total = sum(info[f"reward_{t}"] for t in terms)
        if not np.isclose(total, reward, rtol=1e-9, atol=1e-12):
            self.warn(f"the reward terms sum to {total}, not to the reward {reward}")
        docs = module_docstrings(cls)
        params = constructor_parameters(cls)
        rows = []
        for term in terms:
            match = re.search(rf"``{re.escape(term)} = ([^`]+)``((?: — [^;\n]+| \[[^\]]+\])?)", docs)
            if match is None:
                self.warn(f"reward term {term!r} has no ``{term} = …`` formula in the module docstring")
                formula = ""
            else:
                formula = f"`{term} = {match.group(1)}`" + rst_to_md(match.group(2).rstrip(".;"))
            keyword = next((k for k in (f"{term}_weight", f"{term}_reward") if k in params), None)
            default = f"`{keyword}={params[keyword].default!r}`" if keyword else ""
            rows.append([f"`{term}`", f'`info["reward_{term}"]`', formula, default])
        return ("The reward is the sum of these terms; each is in `info` (they sum exactly to the reward) "
                "and each has its weight keyword:\n\n"
                + list_table(["term", "in info", "formula", "keyword (default)"], rows, widths="14 22 44 20"))


class EnvArguments(_MarkdownDirective):
    def markdown(self) -> str:
        cls = env_class(self.arguments[0])
        described = args_sections(cls)
        env = make_env(self.arguments[0])
        try:
            made = env.unwrapped
            rows = []
            for name, p in constructor_parameters(cls).items():
                text = described.get(name)
                if text is None:
                    self.warn(f"keyword {name!r} has no entry in an Args: section")
                    text = ""
                if "not a user keyword" in text:
                    continue
                default = "" if p.default is inspect.Parameter.empty else f"`{value_text(p.default)}`"
                # a base-class default the env replaces (e.g. its own frame_skip): say what it uses
                used = getattr(made, name, p.default)
                if (type(used) in (int, float, bool, str) and type(p.default) in (type(used), type(None))
                        and used != p.default):
                    default += f" (this env: `{value_text(used)}`)"
                rows.append([f"`{name}`", default, rst_to_md(text)])
        finally:
            env.close()
        return (f"`gym.make(\"{self.arguments[0]}\", **keywords)` with these keywords of "
                f"{{class}}`~{cls.__module__}.{cls.__name__}` (its signature and docstring):\n\n"
                + list_table(["keyword", "default", "description"], rows, widths="22 14 64"))


class EnvEpisode(_MarkdownDirective):
    option_spec = {"variants": directives.unchanged}

    def markdown(self) -> str:
        import gymnasium as gym

        spec = gym.spec(self.arguments[0])
        rows = []
        for kwargs in parse_variants(self.options.get("variants")):
            env = make_env(self.arguments[0], **kwargs)
            try:
                dt = env.unwrapped.dt
            finally:
                env.close()
            steps = spec.max_episode_steps
            rows.append([label(kwargs), f"{number(dt)} s ({number(1 / dt)} Hz)", str(steps),
                         f"{number(steps * dt)} s"])
        return ("Truncation by Gymnasium's `TimeLimit` (`max_episode_steps=` of `gym.make` changes it):\n\n"
                + list_table(["variant", "control period `env.unwrapped.dt`", "max_episode_steps", "episode"],
                             rows))


class EnvRealism(_MarkdownDirective):
    option_spec = {"variants": directives.unchanged}

    def markdown(self) -> str:
        from soft_envs.sim.realism import Realism

        kwargs = parse_variants(self.options.get("variants"))[-1]
        env = make_env(self.arguments[0], **kwargs)
        try:
            table = tuple(env.unwrapped.realism.table.values())
        finally:
            env.close()
        return Realism(table).describe()


class EnvSummary(_MarkdownDirective):
    """Every registered environment: its page, spaces, control period and episode length."""

    required_arguments = 0

    def markdown(self) -> str:
        import gymnasium as gym

        import soft_envs

        rows = []
        for env_id in soft_envs.ENV_IDS:
            name = env_id.split("/")[-1]
            # PeterReach-v0 -> peter_reach, PCCTrack-v0 -> pcc_track
            page = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name.split("-")[0]).lower()
            env = make_env(env_id)
            try:
                action, observation, dt = env.action_space, env.observation_space, env.unwrapped.dt
            finally:
                env.close()
            steps = gym.spec(env_id).max_episode_steps
            rows.append([f"[{name}]({page}.md)", space_rows(action)[0][1], space_rows(observation)[0][1],
                         f"{number(dt)} s", f"{steps} ({number(steps * dt)} s)"])
        return list_table(["environment", "action", "observation", "control period", "episode steps"], rows)

    def run(self):
        self.arguments = ["(all)"]
        return super().run()


class CliHelp(SphinxDirective):
    required_arguments = 1

    def run(self):
        from docutils import nodes

        from soft_envs.cli import build_parser

        parser = build_parser()
        if self.arguments[0] != "-":
            sub = next(a for a in parser._actions if a.dest == "command")  # the subparsers action
            parser = sub.choices[self.arguments[0]]
        text = parser.format_help()
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


# ---------------------------------------------------------------------------------------------
# Pages filled in at build time
# ---------------------------------------------------------------------------------------------
def benchmarks_markdown() -> str:
    """BENCHMARKS.md as it is, except figures written by ``--plot`` but not committed (``plots/``
    is ignored by git): those become a line that says how to make them."""
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    text = text.split("\n", 1)[1]  # the page has its own title

    def figure(match: re.Match) -> str:
        alt, path = match.group(1), match.group(2)
        if (ROOT / path).is_file():
            return f"![{alt}](../{path})"
        return f"*Figure ({alt}): `{path}`, written by the section's command with `--plot plots`.*"

    return re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", figure, text)


def api_modules() -> list[str]:
    """Every module of the package on disk (``agents/`` as ``soft_envs.agents``), packages first."""
    found = []
    for package, folder in (("soft_envs", ROOT / "soft_envs"), ("soft_envs.agents", ROOT / "agents")):
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(p.startswith("_") for p in parts):
                continue
            found.append(".".join([package, *parts]))
    return sorted(set(found))


def api_markdown() -> str:
    out = []
    for module in api_modules():
        is_package = importlib.util.find_spec(module).submodule_search_locations is not None
        out.append(f"## `{module}`\n")
        # packages re-export their modules' objects: document those once, in their module
        options = "" if is_package else "   :members:\n   :show-inheritance:\n"
        # autodoc writes reST, so it runs inside eval-rst
        out.append(f"```{{eval-rst}}\n.. automodule:: {module}\n{options}```\n")
    return "\n".join(out)


PLACEHOLDERS = {
    "<!-- generated: BENCHMARKS.md -->": benchmarks_markdown,
    "<!-- generated: api -->": api_markdown,
}


def fill_placeholders(app: Sphinx, docname: str, source: list[str]) -> None:
    for marker, make in PLACEHOLDERS.items():
        if marker in source[0]:
            source[0] = source[0].replace(marker, make())


def setup(app: Sphinx) -> dict[str, Any]:
    for name, directive in (("env-space", EnvSpace), ("env-rewards", EnvRewards),
                            ("env-arguments", EnvArguments), ("env-episode", EnvEpisode),
                            ("env-realism", EnvRealism), ("env-summary", EnvSummary), ("cli-help", CliHelp)):
        app.add_directive(name, directive)
    app.connect("source-read", fill_placeholders)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
