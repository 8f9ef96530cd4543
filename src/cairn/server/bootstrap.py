"""First start of a served database: create the admin principal and its one API key.

A served database is never open: every route but ``/v1/health`` needs a key. The
first ``cairn serve`` on a file without the ``admin`` principal creates it (admin on
the served database) with one key, either minted here and shown once, or the key in
``CAIRN_ADMIN_KEY``. Only the key's verifier is stored: SHA-256 for a minted key
(256 random bits), PBKDF2 for a supplied one (a person may have chosen it).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from cairn.database import Database
from cairn.errors import UnauthenticatedError, ValidationError
from cairn.server.limits import ADMIN_KEY_ENV, ADMIN_PRINCIPAL_ID
from cairn.store.apply import load_principal
from cairn.store.commands import CommandRequest, ConfigurePrincipal
from cairn.store.policy import (
    ApiKeyVerifier,
    Capability,
    Grant,
    issue_api_key,
    make_verifier,
    parse_api_key,
)

__all__ = ["AdminBootstrap", "ensure_admin"]


@dataclass(frozen=True, slots=True)
class AdminBootstrap:
    """What the first-start check did.

    ``created`` is whether the admin principal was created now; ``token`` is the key to
    show once (only when it was minted here); ``env_key_valid`` says, when
    ``CAIRN_ADMIN_KEY`` was set, whether it authenticates as the admin afterwards.
    """

    created: bool
    token: str | None
    env_key_valid: bool | None


def _supplied_verifier(token: str) -> ApiKeyVerifier:
    try:
        key_id, secret = parse_api_key(token)
    except UnauthenticatedError as exc:
        raise ValidationError(
            f"{ADMIN_KEY_ENV} must be a Cairn API key of the form cairn_<key id>.<secret>"
        ) from exc
    return ApiKeyVerifier(key_id, make_verifier(secret, slow=True))


def ensure_admin(db: Database, environ: Mapping[str, str]) -> AdminBootstrap:
    """Create the admin principal and its key unless it exists; see the module docstring."""
    supplied = environ.get(ADMIN_KEY_ENV) or None
    with db.read_cut() as cut:
        exists = load_principal(cut.conn, ADMIN_PRINCIPAL_ID) is not None
    if exists:
        return AdminBootstrap(False, None, None if supplied is None else _valid(db, supplied))
    token: str | None = None
    if supplied is not None:
        verifier = _supplied_verifier(supplied)
    else:
        issued = issue_api_key()
        verifier, token = issued.verifier, issued.token
    admin = ConfigurePrincipal(
        ADMIN_PRINCIPAL_ID,
        grants=(Grant(db.name, "*", frozenset({Capability.ADMIN})),),
        api_keys=(verifier,),
    )
    db.command(CommandRequest(uuid.uuid4(), db.name, (admin,)))
    # Authenticating once proves a supplied (PBKDF2) key to this handle: every later
    # request with it, right or wrong, costs what an unknown key ID costs.
    return AdminBootstrap(True, token, None if supplied is None else _valid(db, supplied))


def _valid(db: Database, token: str) -> bool:
    try:
        return db.authenticate(token).id == ADMIN_PRINCIPAL_ID
    except UnauthenticatedError:
        return False
