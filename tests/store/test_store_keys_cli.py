"""``cairn keys`` (issue 19): list, mint and revoke API keys of a local database; a
minted token authenticates as its principal until it is revoked."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.errors import UnauthenticatedError
from cairn.store import CommandRequest, ConfigurePrincipal


def test_keys_are_minted_listed_and_revoked(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:
        db.command(CommandRequest(uuid.uuid4(), db.name, (ConfigurePrincipal("reader"),)))
    runner = CliRunner()
    empty = runner.invoke(app, ["keys", "list", "--db", str(path), "--json"])
    assert json.loads(empty.stdout) == {"principals": [{"principal": "reader", "key_ids": []}]}
    minted = json.loads(
        runner.invoke(app, ["keys", "add", "reader", "--db", str(path), "--json"]).stdout
    )
    assert minted["token"].startswith(f"cairn_{minted['key_id']}.")
    with cairn.open(path) as db:
        assert db.authenticate(minted["token"]).id == "reader"
    listed = runner.invoke(app, ["keys", "list", "--db", str(path)])
    assert f"reader: {minted['key_id']}" in listed.output
    revoked = runner.invoke(app, ["keys", "revoke", "reader", minted["key_id"], "--db", str(path)])
    assert revoked.exit_code == 0, revoked.output
    with cairn.open(path) as db, pytest.raises(UnauthenticatedError):
        db.authenticate(minted["token"])
    missing = runner.invoke(app, ["keys", "add", "nobody", "--db", str(path)])
    assert missing.exit_code == 1 and "no principal 'nobody'" in missing.output
