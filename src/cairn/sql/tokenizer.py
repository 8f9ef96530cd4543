"""A bounded tokenizer for the ``SEARCH`` statement (profile ``cairn.sql.search/1``).

Every limit is a named constant and is checked while scanning, so a hostile statement
costs at most ``MAX_SQL_TOKENS`` tokens of work. Errors say what was found and where
(1-based line and column).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cairn.errors import BudgetExceededError, ValidationError

__all__ = [
    "MAX_SQL_BYTES",
    "MAX_SQL_DEPTH",
    "MAX_SQL_PARAMETERS",
    "MAX_SQL_TOKENS",
    "Token",
    "TokenKind",
    "sql_error",
    "tokenize",
]

MAX_SQL_TOKENS = 2048
MAX_SQL_DEPTH = 32
MAX_SQL_BYTES = 65_536
MAX_SQL_PARAMETERS = 256


class TokenKind(StrEnum):
    """What a token is."""

    WORD = "word"  # keyword or bare identifier; keywords match case-insensitively
    QUOTED = "quoted identifier"
    STRING = "string"
    NUMBER = "number"
    PARAMETER = "parameter"
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    SEMICOLON = "';'"
    END = "end of statement"


@dataclass(frozen=True, slots=True)
class Token:
    """One token with its text (unescaped for strings and quoted identifiers) and place."""

    kind: TokenKind
    text: str
    line: int
    column: int

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind in (TokenKind.WORD, TokenKind.NUMBER):
            return f"{self.kind.value} {self.text!r}"
        if self.kind is TokenKind.STRING:
            return f"string '{self.text}'"
        if self.kind is TokenKind.QUOTED:
            return f'quoted identifier "{self.text}"'
        if self.kind is TokenKind.PARAMETER:
            return f"parameter @{self.text}"
        return self.kind.value


def sql_error(message: str, line: int, column: int) -> ValidationError:
    """A ``ValidationError`` that names the place in the statement."""
    return ValidationError(
        f"{message} at line {line}, column {column}", details={"line": line, "column": column}
    )


_PUNCTUATION = {
    "(": TokenKind.LPAREN,
    ")": TokenKind.RPAREN,
    ",": TokenKind.COMMA,
    ";": TokenKind.SEMICOLON,
}


def _is_word_start(char: str) -> bool:
    return char.isascii() and (char.isalpha() or char == "_")


def _is_word_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


class _Scanner:
    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.pos = 0
        self.line = 1
        self.column = 1
        self.tokens: list[Token] = []
        self.depth = 0

    def advance(self, count: int = 1) -> None:
        for char in self.sql[self.pos : self.pos + count]:
            if char == "\n":
                self.line += 1
                self.column = 1
            else:
                self.column += 1
        self.pos += count

    def emit(self, kind: TokenKind, text: str, line: int, column: int) -> None:
        if len(self.tokens) >= MAX_SQL_TOKENS:
            raise BudgetExceededError(
                f"statement has more than {MAX_SQL_TOKENS} tokens",
                details={"limit": MAX_SQL_TOKENS, "line": line, "column": column},
            )
        self.tokens.append(Token(kind, text, line, column))

    def run(self) -> list[Token]:
        while self.pos < len(self.sql):
            char = self.sql[self.pos]
            if char in " \t\r\n":
                self.advance()
            else:
                self.scan_token(char)
        # END is a sentinel, not a token of the statement: it never counts to the limit.
        self.tokens.append(Token(TokenKind.END, "", self.line, self.column))
        return self.tokens

    def scan_token(self, char: str) -> None:
        line, column = self.line, self.column
        if char in _PUNCTUATION:
            self.track_depth(char, line, column)
            self.advance()
            self.emit(_PUNCTUATION[char], char, line, column)
        elif char == "'":
            self.emit(TokenKind.STRING, self.quoted("'", "string"), line, column)
        elif char == '"':
            text = self.quoted('"', "quoted identifier")
            self.emit(TokenKind.QUOTED, text, line, column)
        elif char == "@":
            self.advance()
            name = self.word()
            if not name:
                raise sql_error("expected a parameter name after '@'", line, column)
            self.emit(TokenKind.PARAMETER, name, line, column)
        elif _is_word_start(char):
            self.emit(TokenKind.WORD, self.word(), line, column)
        elif char.isascii() and (char.isdigit() or char in "-+."):
            self.emit(TokenKind.NUMBER, self.number(line, column), line, column)
        else:
            raise sql_error(f"unexpected character {char!r}", line, column)

    def track_depth(self, char: str, line: int, column: int) -> None:
        if char == "(":
            self.depth += 1
            if self.depth > MAX_SQL_DEPTH:
                raise BudgetExceededError(
                    f"parentheses nest deeper than {MAX_SQL_DEPTH}",
                    details={"limit": MAX_SQL_DEPTH, "line": line, "column": column},
                )
        elif char == ")":
            self.depth -= 1
            if self.depth < 0:
                raise sql_error("unbalanced ')'", line, column)

    def word(self) -> str:
        start = self.pos
        while self.pos < len(self.sql) and _is_word_char(self.sql[self.pos]):
            self.advance()
        return self.sql[start : self.pos]

    def quoted(self, quote: str, what: str) -> str:
        line, column = self.line, self.column
        self.advance()
        parts: list[str] = []
        while True:
            end = self.sql.find(quote, self.pos)
            if end < 0:
                raise sql_error(f"unterminated {what}", line, column)
            parts.append(self.sql[self.pos : end])
            self.advance(end - self.pos + 1)
            if self.sql.startswith(quote, self.pos):  # a doubled quote is one quote
                parts.append(quote)
                self.advance()
                continue
            return "".join(parts)

    def number(self, line: int, column: int) -> str:
        start = self.pos
        if self.sql[self.pos] in "+-":
            self.advance()
        while self.pos < len(self.sql) and (
            self.sql[self.pos].isascii()
            and (self.sql[self.pos].isalnum() or self.sql[self.pos] in ".+-")
        ):
            char = self.sql[self.pos]
            if char in "+-" and self.sql[self.pos - 1] not in "eE":
                break
            self.advance()
        text = self.sql[start : self.pos]
        if not _looks_numeric(text):
            raise sql_error(f"malformed number {text!r}", line, column)
        return text


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    body = text.lstrip("+-")
    return bool(body) and (body[0].isdigit() or (body[0] == "." and len(body) > 1))


def tokenize(sql: str) -> list[Token]:
    """Split ``sql`` into tokens, ending with one ``END`` token."""
    if not isinstance(sql, str):
        raise ValidationError("sql must be a string")
    size = len(sql.encode("utf-8", "surrogatepass"))
    if size > MAX_SQL_BYTES:
        raise BudgetExceededError(
            f"statement is {size} bytes; at most {MAX_SQL_BYTES} are allowed",
            details={"limit": MAX_SQL_BYTES, "size": size},
        )
    tokens = _Scanner(sql).run()
    return tokens
