"""Settings every test process shares."""

from __future__ import annotations

import os

# A `cairn index` the tests run (in process or as a subprocess, which inherits this)
# leaves no background watch behind (cairn.codegraph.daemon); the daemon's own tests
# ask for one explicitly.
os.environ["CAIRN_DAEMON"] = "0"
