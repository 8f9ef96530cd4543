"""Scanning: ignore rules, default excludes, caps, secret paths and the manifest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cairn.codegraph import index_repository, scan_repository
from cairn.codegraph.limits import MAX_FILE_BYTES
from cairn.codegraph.scan import is_secret_path, language_of
from cairn.errors import ValidationError


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _write(
        tmp_path,
        {
            ".gitignore": "*.log\nbuild_out/\n!keep.log\n",
            ".cairnignore": "generated/\n",
            "app/main.py": "def main():\n    return 1\n",
            "app/.gitignore": "local_*.py\n!local_keep.py\n",
            "app/local_scratch.py": "x = 1\n",
            "app/local_keep.py": "y = 2\n",
            "app/debug.log": "log\n",
            "keep.log": "kept\n",
            "build_out/x.py": "z = 3\n",
            "generated/g.py": "g = 1\n",
            "node_modules/pkg/index.js": "module.exports = 1\n",
            ".venv/lib/site.py": "v = 1\n",
            "__pycache__/m.cpython-311.pyc": b"\x00\x01",
            ".env": "SECRET=1\n",
            ".env.production": "SECRET=2\n",
            "certs/server.pem": "-----BEGIN CERTIFICATE-----\n",
            "keys/id_rsa": "-----BEGIN RSA PRIVATE KEY-----\n",
            "big.py": "#" * (MAX_FILE_BYTES + 1),
            "blob.py": b"x = 1\x00\x00\x00",
            "broken.py": "def broken(:\n",
            "README.txt": "hello\n",
            "docs/guide.md": "# Guide\n",
            "web/app.ts": "export const x = 1;\n",
        },
    )
    return tmp_path


def test_scan_decides_by_path_before_reading(repo: Path) -> None:
    result = scan_repository(repo)
    accepted = [f.path for f in result.files]
    assert accepted == [
        "app/local_keep.py",
        "app/main.py",
        "blob.py",
        "broken.py",
        "docs/guide.md",
        "web/app.ts",
    ]
    skipped = {s.path: s.outcome for s in result.skipped}
    assert skipped == {
        ".cairnignore": "skipped:unsupported_language",
        ".env": "skipped:secret_path",
        ".env.production": "skipped:secret_path",
        ".gitignore": "skipped:unsupported_language",
        ".venv/": "skipped:default_exclude",
        "README.txt": "skipped:unsupported_language",
        "__pycache__/": "skipped:default_exclude",
        "app/.gitignore": "skipped:unsupported_language",
        "app/debug.log": "skipped:ignored",
        "app/local_scratch.py": "skipped:ignored",
        "big.py": "skipped:too_large",
        "build_out/": "skipped:ignored",
        "certs/server.pem": "skipped:secret_path",
        "generated/": "skipped:ignored",
        "keep.log": "skipped:unsupported_language",
        "keys/id_rsa": "skipped:secret_path",
        "node_modules/": "skipped:default_exclude",
    }


def test_caller_excludes_apply_to_files_and_directories(repo: Path) -> None:
    result = scan_repository(repo, excludes=["docs/", "*.ts"])
    skipped = {s.path: s.outcome for s in result.skipped}
    assert skipped["docs/"] == "skipped:excluded"
    assert skipped["web/app.ts"] == "skipped:excluded"
    assert [f.path for f in result.files] == [
        "app/local_keep.py",
        "app/main.py",
        "blob.py",
        "broken.py",
    ]


def test_manifest_records_every_outcome_and_a_parse_error_never_stops_the_run(
    repo: Path,
) -> None:
    result = index_repository(repo)
    rows = {row.path: row.outcome for row in result.manifest.sorted_entries()}
    # Parsed around its broken line (issue 20), named with the error and line.
    assert rows["broken.py"] == "partial:SyntaxError"
    broken = next(row for row in result.manifest.entries if row.path == "broken.py")
    assert broken.error is not None and broken.error.startswith("line 1: SyntaxError: ")
    assert rows["blob.py"] == "skipped:binary"
    assert rows["app/main.py"] == "indexed"
    assert rows["docs/guide.md"] == "indexed"
    assert result.graph.has_node("function:app/main.py#main")
    assert result.graph.has_node("file:broken.py")
    summary = result.manifest.summary()
    assert summary["python"] == {
        "indexed": 2,
        "partial:SyntaxError": 1,
        "skipped:binary": 1,
        "skipped:ignored": 1,
        "skipped:too_large": 1,
    }
    secret_text = "SECRET"
    for node in result.graph.nodes():
        assert secret_text not in str(node.to_json())
    assert result.manifest.to_json()["files"][0]["path"] == ".cairnignore"


def test_indexed_rows_carry_content_hashes(repo: Path) -> None:
    result = index_repository(repo)
    row = next(r for r in result.manifest.sorted_entries() if r.path == "app/main.py")
    assert row.sha256 is not None and len(row.sha256) == 64
    assert row.size == len("def main():\n    return 1\n")


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    _write(tmp_path, {"real.py": "a = 1\n"})
    (tmp_path / "link.py").symlink_to(tmp_path / "real.py")
    skipped = {s.path: s.outcome for s in scan_repository(tmp_path).skipped}
    assert skipped == {"link.py": "skipped:symlink"}


def test_ignore_files_apply_only_as_regular_files(tmp_path: Path) -> None:
    # A symlinked ignore file is not read (it may point outside the repository), and
    # a directory named like one is walked as a directory; a real one deeper down
    # applies to its own subtree only.
    _write(
        tmp_path,
        {
            "rules.txt": "*.py\n",
            "a/x.py": "x = 1\n",
            "b/.cairnignore/inner.py": "i = 1\n",
            "c/.gitignore": "drop_*.py\n",
            "c/drop_me.py": "d = 1\n",
            "c/keep.py": "k = 1\n",
            "drop_top.py": "t = 1\n",
        },
    )
    (tmp_path / "a" / ".gitignore").symlink_to(tmp_path / "rules.txt")
    result = scan_repository(tmp_path)
    accepted = sorted(f.path for f in result.files)
    assert accepted == ["a/x.py", "b/.cairnignore/inner.py", "c/keep.py", "drop_top.py"]
    skipped = {s.path: s.outcome for s in result.skipped}
    assert skipped["a/.gitignore"] == "skipped:symlink"
    assert skipped["c/drop_me.py"] == "skipped:ignored"


def test_bad_input_raises_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        scan_repository(tmp_path / "missing")
    with pytest.raises(ValidationError):
        scan_repository(tmp_path, excludes=[" "])
    with pytest.raises(ValidationError):
        index_repository(tmp_path, workers=0)


@pytest.mark.parametrize(
    ("path", "secret"),
    [
        (".env", True),
        ("config/.env.local", True),
        ("tls/server.key", True),
        ("a/b/cert.crt", True),
        ("home/id_ed25519", True),
        ("src/environment.py", False),
        ("src/keys.py", False),
    ],
)
def test_secret_path_policy(path: str, secret: bool) -> None:
    assert is_secret_path(path) is secret


def test_languages_by_suffix() -> None:
    assert [language_of(p) for p in ("a.py", "b.tsx", "c.mjs", "d.go", "e.md", "f.rs")] == [
        "python",
        "typescript",
        "javascript",
        "go",
        "markdown",
        "other",
    ]


def test_the_index_folder_is_not_listed_so_first_and_later_manifests_agree(
    tmp_path: Path,
) -> None:
    from cairn.codegraph.console import index_and_write

    _write(tmp_path, {"a.py": "def a():\n    return 1\n", "sub/.cairn/x.py": "x = 1\n"})
    assert not (tmp_path / ".cairn").exists()
    index_and_write(tmp_path, workers=1, as_json=True, generated_at="2024-01-01T00:00:00Z")
    manifest = tmp_path / ".cairn" / "manifest.json"
    first = manifest.read_bytes()
    index_and_write(
        tmp_path, workers=1, as_json=True, generated_at="2024-01-01T00:00:00Z", force=True
    )
    assert manifest.read_bytes() == first
    skipped = {row.path: row.outcome for row in scan_repository(tmp_path).skipped}
    assert ".cairn/" not in skipped
    # Another index's folder inside the tree is a default exclude like any other.
    assert skipped["sub/.cairn/"] == "skipped:default_exclude"


def test_vendored_directories_and_minified_bundles_are_skipped_unless_negated(
    tmp_path: Path,
) -> None:
    """Other people's code (``vendor/``, Bower, CocoaPods...) and minified bundles are
    skipped by default with their own reasons; an ignore file's negation keeps them."""
    _write(
        tmp_path,
        {
            "app/main.py": "def main():\n    return 1\n",
            "vendor/github.com/x/y/y.go": "package y\n",
            "static/vendor/jquery/jquery.js": "function jq() {}\n",
            "static/vendor/jquery/jquery.min.js": "function a(){}\n",
            "static/app.min.js": "function b(){}\n",
            "static/app.js": "function app() {}\n",
            "bower_components/lib/lib.js": "function lib() {}\n",
            "ios/Pods/P/p.js": "function p() {}\n",
            "src/vendorized.py": "v = 1\n",  # a name that merely starts with vendor
            "src/pip/_vendor/requests/api.py": "def get(url):\n    return url\n",
            "third_party/lib/x.py": "x = 1\n",
        },
    )
    result = scan_repository(tmp_path)
    skipped = {s.path: s.outcome for s in result.skipped}
    assert skipped == {
        "vendor/": "skipped:vendored",
        "static/vendor/": "skipped:vendored",
        "static/app.min.js": "skipped:minified",
        "bower_components/": "skipped:vendored",
        "ios/Pods/": "skipped:vendored",
        "src/pip/_vendor/": "skipped:vendored",
        "third_party/": "skipped:vendored",
    }
    assert [f.path for f in result.files] == [
        "app/main.py",
        "src/vendorized.py",
        "static/app.js",
    ]
    # Negated in an ignore file: indexed like any other code.
    _write(tmp_path, {".cairnignore": "!vendor/\n!*.min.js\n"})
    negated = scan_repository(tmp_path)
    kept = [f.path for f in negated.files]
    assert "vendor/github.com/x/y/y.go" in kept
    assert "static/vendor/jquery/jquery.js" in kept
    assert "static/vendor/jquery/jquery.min.js" in kept
    assert "static/app.min.js" in kept
    assert {s.path: s.outcome for s in negated.skipped} == {
        ".cairnignore": "skipped:unsupported_language",
        "bower_components/": "skipped:vendored",
        "ios/Pods/": "skipped:vendored",
        "src/pip/_vendor/": "skipped:vendored",
        "third_party/": "skipped:vendored",
    }
    # Caller excludes still apply to a negated directory.
    excluded = scan_repository(tmp_path, excludes=["vendor/"])
    assert {s.path: s.outcome for s in excluded.skipped}["vendor/"] == "skipped:excluded"


def test_a_name_that_is_not_utf8_is_skipped_and_said(tmp_path: Path) -> None:
    """A file or directory named with bytes that are not UTF-8 (a Latin-1 name from an
    old archive) is skipped as ``skipped:undecodable_name``, its row showing the stray
    bytes escaped, and the rest is indexed. Before, the index failed with a TypeError
    ("str is not valid UTF-8") while deriving the file's IDs."""
    _write(tmp_path, {"ok.py": "def g():\n    return 1\n"})
    root = os.fsencode(tmp_path)
    with open(os.path.join(root, b"caf\xe9.py"), "wb") as handle:
        handle.write(b"def f():\n    return 1\n")
    os.mkdir(os.path.join(root, b"d\xff"))
    with open(os.path.join(root, b"d\xff", b"inner.py"), "wb") as handle:
        handle.write(b"def h():\n    return 1\n")

    scanned = scan_repository(tmp_path)
    assert [f.path for f in scanned.files] == ["ok.py"]
    assert {(s.path, s.language, s.outcome) for s in scanned.skipped} == {
        ("caf\\xe9.py", "python", "skipped:undecodable_name"),
        ("d\\xff/", "other", "skipped:undecodable_name"),
    }
    result = index_repository(tmp_path)
    rows = {row.path: row.outcome for row in result.manifest.entries}
    assert rows == {
        "ok.py": "indexed",
        "caf\\xe9.py": "skipped:undecodable_name",
        "d\\xff/": "skipped:undecodable_name",
    }
    names = sorted(
        node.attributes["name"] for node in result.graph.nodes() if node.kind == "function"
    )
    assert names == ["g"]


def test_a_line_of_an_ignore_file_that_is_no_pattern_is_left_out_and_said(
    tmp_path: Path,
) -> None:
    """``[z-a]`` (a backwards range) and a lone backslash match nothing in git; the
    scan leaves them out too, applies the other lines, and says which on the ignore
    file's row. Before, one such line stopped ``cairn index`` with a raw ``re.error``."""
    _write(
        tmp_path,
        {
            ".gitignore": "scratch.py\n[z-a]\n\\\nbuild_out/\n",
            "app.py": "a = 1\n",
            "scratch.py": "b = 2\n",
            "build_out/x.py": "c = 3\n",
        },
    )
    scanned = scan_repository(tmp_path)
    assert [f.path for f in scanned.files] == ["app.py"]
    rows = {s.path: (s.outcome, s.error) for s in scanned.skipped}
    assert rows["scratch.py"] == ("skipped:ignored", None)
    assert rows["build_out/"] == ("skipped:ignored", None)
    outcome, error = rows[".gitignore"]
    assert outcome == "skipped:unsupported_language"
    assert error is not None and error.startswith("left out, not patterns: line 2 ('[z-a]'")
    assert "line 3 ('\\\\'" in error


def test_an_exclude_that_is_no_pattern_is_a_validation_error(tmp_path: Path) -> None:
    _write(tmp_path, {"app.py": "a = 1\n"})
    with pytest.raises(ValidationError, match=r"exclude pattern '\[z-a\]' is not a gitignore"):
        scan_repository(tmp_path, excludes=["[z-a]"])
