"""The bounded SQL ``SEARCH`` statement (profile ``cairn.sql.search/1``)."""

from __future__ import annotations

from cairn.sql.parser import SQL_PROFILE, lower_sql, parse_search
from cairn.sql.tokenizer import Token, TokenKind, tokenize

__all__ = ["SQL_PROFILE", "Token", "TokenKind", "lower_sql", "parse_search", "tokenize"]
