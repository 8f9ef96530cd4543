"""JavaScript and TypeScript imports of the repository's own packages, by the names
their ``package.json`` files give (``cairn.codegraph.workspaces``). The expected
targets follow Node's ``exports`` rules and TypeScript's ``types`` / ``main``
fallbacks, as far as they name files that are in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from codegraph_expect import call_pairs, write_tree

from cairn.codegraph import index_repository
from cairn.codegraph.workspaces import WorkspacePackages, extract_package

MONOREPO = {
    "package.json": '{"name": "acme", "private": true, "workspaces": ["packages/*", "apps/*"]}',
    # An internal package: its entry is the source itself.
    "packages/ui/package.json": (
        '{"name": "@acme/ui", "exports": {".": "./src/index.ts", "./*": "./src/*.tsx"}}'
    ),
    "packages/ui/src/index.ts": 'export { Button } from "./button";\n',
    "packages/ui/src/button.tsx": "export function Button() {\n  return 1;\n}\n",
    "packages/ui/src/card.tsx": "export function Card() {\n  return 2;\n}\n",
    # A built package: main names dist/, which is not in the repository.
    "packages/sdk/package.json": '{"name": "@acme/sdk", "main": "./dist/index.js"}',
    "packages/sdk/src/index.ts": "export function connect() {\n  return 3;\n}\n",
    # A legacy package: no exports, main in the folder; a subpath is a path in it.
    "packages/utils/package.json": '{"name": "acme-utils", "main": "lib/main.js"}',
    "packages/utils/lib/main.js": "export function fmt(x) {\n  return String(x);\n}\n",
    "packages/utils/lib/extra.js": "export function pad(x) {\n  return x;\n}\n",
    "apps/web/page.ts": (
        'import { Button } from "@acme/ui";\n'
        'import { Card } from "@acme/ui/card";\n'
        'import { connect } from "@acme/sdk";\n'
        'import { fmt } from "acme-utils";\n'
        'import { pad } from "acme-utils/lib/extra";\n'
        'import React from "react";\n\n'
        "export function render() {\n"
        "  Button();\n  Card();\n  connect();\n  pad(1);\n  return fmt(1);\n}\n"
    ),
}


def test_imports_of_the_workspace_packages_reach_their_files(tmp_path: Path) -> None:
    root = write_tree(tmp_path, MONOREPO)
    result = index_repository(root)
    calls = call_pairs(result.graph)
    rendered = {t for s, t in calls if s == "function:apps/web/page.ts#render"}
    assert rendered == {
        "function:packages/ui/src/button.tsx#Button",  # through index.ts's re-export
        "function:packages/ui/src/card.tsx#Card",
        "external:js:@acme/sdk.connect",  # dist/ is not here: never guessed at
        "function:packages/utils/lib/main.js#fmt",
        "function:packages/utils/lib/extra.js#pad",
    }
    rows = {row.path: row.outcome for row in result.manifest.sorted_entries()}
    assert rows["packages/ui/package.json"] == "indexed"


def test_a_name_two_packages_claim_names_neither(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "a/package.json": '{"name": "dup", "main": "index.js"}',
            "a/index.js": "export function f() {\n  return 1;\n}\n",
            "b/package.json": '{"name": "dup", "main": "index.js"}',
            "b/index.js": "export function f() {\n  return 2;\n}\n",
            "c/use.js": 'import { f } from "dup";\n\nexport function g() {\n  return f();\n}\n',
        },
    )
    graph = index_repository(root).graph
    calls = call_pairs(graph)
    assert {t for s, t in calls if s == "function:c/use.js#g"} == {"external:js:dup.f"}


def test_exports_conditions_patterns_and_fallbacks_in_order() -> None:
    packages = WorkspacePackages(
        [
            extract_package(
                "libs/core/package.json",
                b'{"name": "@x/core", "exports": {'
                b'".": {"types": "./dist/index.d.ts", "import": "./src/index.ts"},'
                b'"./utils/*": "./src/utils/*.ts", "./*": ["./src/*", "./gen/*"],'
                b'"./fixed": "./src/fixed.ts"}, "main": "./dist/index.js"}',
            ),
            extract_package("package.json", b'{"name": "root", "exports": "./main.js"}'),
        ]
    )
    assert packages.bases("apps/x.ts", "@x/core") == [
        "libs/core/dist/index.d.ts",
        "libs/core/src/index.ts",
        "libs/core/dist/index.js",
        "libs/core",
    ]
    assert packages.bases("apps/x.ts", "@x/core/utils/date") == [
        "libs/core/src/utils/date.ts",
        "libs/core/utils/date",
    ]
    assert packages.bases("apps/x.ts", "@x/core/thing") == [
        "libs/core/src/thing",
        "libs/core/gen/thing",
        "libs/core/thing",
    ]
    fixed = packages.bases("apps/x.ts", "@x/core/fixed")
    assert fixed == ["libs/core/src/fixed.ts", "libs/core/fixed"]
    # An exports string is the package itself only.
    assert packages.bases("apps/x.ts", "root") == ["main.js", ""]
    assert packages.bases("apps/x.ts", "root/other") == ["other"]
    assert packages.bases("apps/x.ts", "react") == []


def test_a_package_json_that_is_no_object_fails_alone(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {**MONOREPO, "packages/ui/package.json": "[1, 2"})
    result = index_repository(root)
    rows = {row.path: row.outcome for row in result.manifest.sorted_entries()}
    assert rows["packages/ui/package.json"] == "failed:JSONDecodeError"
    assert rows["apps/web/page.ts"] == "indexed"
    with pytest.raises(ValueError, match="JSON object"):
        extract_package("package.json", b'"just a string"')


def test_a_hash_import_goes_through_the_nearest_package_imports(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "lib/package.json": (
                '{"name": "lib", "imports": {"#internal/*": "./src/internal/*.js",'
                ' "#config": {"node": "./src/config-node.js", "default": "./src/config.js"},'
                ' "#dep": "left-pad"}}'
            ),
            "lib/src/internal/db.js": "export function query() {\n  return 1;\n}\n",
            "lib/src/config-node.js": "export function load() {\n  return 2;\n}\n",
            "lib/src/deep/use.js": (
                'import { query } from "#internal/db";\n'
                'import { load } from "#config";\n'
                'import pad from "#dep";\n\n'
                "export function run() {\n  query();\n  pad();\n  return load();\n}\n"
            ),
            "other/use.js": (
                'import { query } from "#internal/db";\n\n'
                "export function run() {\n  return query();\n}\n"
            ),
        },
    )
    graph = index_repository(root).graph
    calls = call_pairs(graph)
    assert {t for s, t in calls if s == "function:lib/src/deep/use.js#run"} == {
        "function:lib/src/internal/db.js#query",
        "function:lib/src/config-node.js#load",
        "external:js:#dep",  # a package target is another package's business
    }
    # Outside the package, its private imports mean nothing.
    assert {t for s, t in calls if s == "function:other/use.js#run"} == {
        "external:js:#internal/db.query"
    }
