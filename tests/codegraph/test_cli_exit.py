"""The console script's exit (``cairn.cli.main``) skips the interpreter's teardown; in a
real process nothing owed to the caller is lost: the whole of a large stdout reaches
the pipe, the exit status is the command's own, and exit handlers still run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from codegraph_expect import FIXTURES

RUN_TIMEOUT_S = 120
MAIN = "from cairn.cli import main; main()"
# An exit handler registered before the command runs writes its file only if exit
# handlers still run at the end.
WITH_HANDLER = (
    "import atexit, pathlib, sys\n"
    "marker = pathlib.Path(sys.argv.pop(1))\n"
    "atexit.register(marker.write_text, 'ran')\n"
    "from cairn.cli import main; main()\n"
)


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_an_index_prints_its_whole_json_summary_and_exits_zero(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    marker = tmp_path / "handler-ran"
    done = _run(WITH_HANDLER, str(marker), "index", str(repo), "--workers", "1", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # all of it: a cut stream would not parse
    assert summary["load"]["position"] == 1
    assert (repo / ".cairn" / "graph.cairn").is_file()
    assert marker.read_text() == "ran"


def test_a_failing_command_keeps_its_status_and_message(tmp_path: Path) -> None:
    done = _run(MAIN, "index", str(tmp_path / "absent"))
    assert done.returncode == 1
    assert "absent" in done.stdout + done.stderr
    usage = _run(MAIN, "no-such-command")
    assert usage.returncode == 2
    assert "No such command" in usage.stderr


def test_a_message_exit_goes_to_stderr_with_status_one() -> None:
    script = (
        "import sys\nfrom cairn import cli\n"
        "cli.app = lambda: sys.exit('stopped: why')\ncli.main()\n"
    )
    done = _run(script)
    assert done.returncode == 1
    assert done.stderr.strip() == "stopped: why"
