"""The CLI reference (``docs/cli.md``), rendered from the commands themselves.

``python -m cairn.cli_reference > docs/cli.md`` regenerates it; a test renders it again
and compares, so the page can never drift from ``--help``.
"""

from __future__ import annotations

from typing import Any

import typer

from cairn.cli import app

__all__ = ["render_cli_reference"]

_HEADER = """# Command line reference

Generated from the commands by `python -m cairn.cli_reference > docs/cli.md`; a test
checks that this page matches `cairn --help`. Every command that reads a database takes
`--db PATH` and otherwise finds `.cairn/cairn.db` in the current directory or a parent.
"""


# Typer vendors its own click, so commands and parameters are read by duck typing.
def _param_row(param: Any) -> str:
    if param.param_type_name == "argument":
        name = (param.name or "").upper()
        kind = "argument"
    else:
        name = ", ".join(param.opts)
        kind = "flag" if getattr(param, "is_flag", False) else "option"
    help_text = (getattr(param, "help", None) or "").replace("|", "\\|")
    default = param.default
    shown = "" if default is None or default is False or kind == "flag" else f"`{default}`"
    return f"| `{name}` | {kind} | {help_text} | {shown} |"


def _command_section(path: str, command: Any) -> list[str]:
    lines = [f"## `{path}`", ""]
    help_text = (command.help or "").strip()
    if help_text:
        lines += [help_text.splitlines()[0], ""]
    ctx = command.context_class(command, info_name=path)
    lines += ["```", command.get_usage(ctx).replace("Usage: ", ""), "```", ""]
    params = [p for p in command.params if p.name != "help"]
    if params:
        lines += ["| name | kind | help | default |", "|---|---|---|---|"]
        lines += [_param_row(param) for param in params]
        lines.append("")
    return lines


def _walk(path: str, command: Any) -> list[str]:
    if hasattr(command, "commands"):
        lines: list[str] = []
        for name in sorted(command.commands):
            lines += _walk(f"{path} {name}", command.commands[name])
        return lines
    return _command_section(path, command)


def render_cli_reference() -> str:
    """The whole reference page as Markdown."""
    root = typer.main.get_command(app)
    return "\n".join([_HEADER, *_walk("cairn", root)]).rstrip() + "\n"


if __name__ == "__main__":
    print(render_cli_reference(), end="")
