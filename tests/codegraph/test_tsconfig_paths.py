"""JavaScript and TypeScript imports through the aliases of the nearest project config:
``paths`` and ``baseUrl`` of ``tsconfig.json`` / ``jsconfig.json``, with ``extends``
(``cairn.codegraph.tsconfig``). The expected targets follow the TypeScript handbook's
module-resolution rules for these options."""

from __future__ import annotations

from pathlib import Path

import pytest
from codegraph_expect import call_pairs, write_tree

from cairn.codegraph import index_repository, write_index
from cairn.codegraph.cache import CACHE_FILENAME
from cairn.codegraph.tsconfig import ProjectConfigs, extract_tsconfig

FIXED_TIME = "2024-01-01T00:00:00Z"


def _calls(root: Path) -> set[tuple[str, str]]:
    graph = index_repository(root).graph
    return call_pairs(graph)


def _imports(root: Path) -> dict[tuple[str, str], str]:
    graph = index_repository(root).graph
    return {
        (f.source, f.discriminator.value["specifier"]): f.target
        for f in graph.facts()
        if f.relation == "imports"
    }


NEXT_APP = {
    # A Next.js-style app: the config has comments and trailing commas, as tsc allows.
    "tsconfig.json": """{
  // the app's aliases
  "compilerOptions": {
    "strict": true,
    /* "@/..." is src/ */
    "paths": { "@/*": ["./src/*"], "@ui": ["./src/components/ui/index.ts"], },
  },
}
""",
    "src/lib/math.ts": "export function add(a: number, b: number) {\n  return a + b;\n}\n",
    "src/components/ui/index.ts": "export function button() {\n  return 1;\n}\n",
    "src/app/page.ts": (
        'import { add } from "@/lib/math";\n'
        'import { button } from "@ui";\n'
        'import React from "react";\n\n'
        "export function total() {\n  button();\n  return add(1, 2);\n}\n"
    ),
}


def test_a_paths_alias_reaches_the_file_it_names(tmp_path: Path) -> None:
    root = write_tree(tmp_path, NEXT_APP)
    calls = _calls(root)
    assert ("function:src/app/page.ts#total", "function:src/lib/math.ts#add") in calls
    assert ("function:src/app/page.ts#total", "function:src/components/ui/index.ts#button") in (
        calls
    )
    imports = _imports(root)
    assert imports[("file:src/app/page.ts", "@/lib/math")] == "file:src/lib/math.ts"
    assert imports[("file:src/app/page.ts", "@ui")] == "file:src/components/ui/index.ts"
    assert imports[("file:src/app/page.ts", "react")] == "external:js:react"


def test_extends_base_url_and_the_nearest_config(tmp_path: Path) -> None:
    # The shared base sets baseUrl "." and a package alias; apps/api extends it and
    # adds nothing. apps/web has its own config (no aliases): its "@shared" stays
    # external, whatever the base says.
    root = write_tree(
        tmp_path,
        {
            "tsconfig.base.json": (
                '{"compilerOptions": {"baseUrl": ".",'
                ' "paths": {"@shared/*": ["packages/shared/src/*"]}}}'
            ),
            "apps/api/tsconfig.json": '{"extends": "../../tsconfig.base.json"}',
            "apps/web/tsconfig.json": '{"compilerOptions": {"strict": true}}',
            "packages/shared/src/greet.ts": "export function greet() {\n  return 1;\n}\n",
            "lib/helper.ts": "export function helper() {\n  return 2;\n}\n",
            "apps/api/main.ts": (
                'import { greet } from "@shared/greet";\n'
                'import { helper } from "lib/helper";\n\n'
                "export function serve() {\n  greet();\n  return helper();\n}\n"
            ),
            "apps/web/main.ts": (
                'import { greet } from "@shared/greet";\n\n'
                "export function render() {\n  return greet();\n}\n"
            ),
        },
    )
    calls = _calls(root)
    assert ("function:apps/api/main.ts#serve", "function:packages/shared/src/greet.ts#greet") in (
        calls
    )
    assert ("function:apps/api/main.ts#serve", "function:lib/helper.ts#helper") in calls
    rendered = {t for s, t in calls if s == "function:apps/web/main.ts#render"}
    assert rendered == {"external:js:@shared/greet.greet"}


def test_a_jsconfig_base_url_serves_plain_javascript(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "jsconfig.json": '{"compilerOptions": {"baseUrl": "src"}}',
            "src/utils/fmt.js": "export function fmt(x) {\n  return String(x);\n}\n",
            "src/index.js": (
                'import { fmt } from "utils/fmt";\n\nexport function main() {\n'
                "  return fmt(1);\n}\n"
            ),
        },
    )
    assert ("function:src/index.js#main", "function:src/utils/fmt.js#fmt") in _calls(root)


def test_a_config_that_is_no_json_object_is_a_failed_file_and_nothing_else(
    tmp_path: Path,
) -> None:
    root = write_tree(tmp_path, {**NEXT_APP, "tsconfig.json": '{"compilerOptions": '})
    result = index_repository(root)
    rows = {row.path: row for row in result.manifest.sorted_entries()}
    assert rows["tsconfig.json"].outcome == "failed:ValueError"
    assert rows["src/app/page.ts"].outcome == "indexed"
    calls = call_pairs(result.graph)
    assert ("function:src/app/page.ts#total", "external:js:@/lib/math.add") in calls
    with pytest.raises(ValueError, match="JSON object"):
        extract_tsconfig("tsconfig.json", b"[1, 2]")


def test_the_longest_matching_prefix_wins_and_paths_follow_base_url() -> None:
    configs = ProjectConfigs(
        [
            extract_tsconfig(
                "web/tsconfig.json",
                b'{"compilerOptions": {"baseUrl": "./src", "paths": {'
                b'"@/*": ["./*", "./gen/*"], "@/components/*": ["./ui/*"], "exact": ["x.ts"]}}}',
            ),
            extract_tsconfig("tsconfig.json", b'{"compilerOptions": {"paths": {"~/*": ["a/*"]}}}'),
        ]
    )
    assert configs.bases("web/pages/index.tsx", "@/components/button") == [
        "web/src/ui/button",
        "web/src/@/components/button",
    ]
    assert configs.bases("web/main.ts", "@/lib") == [
        "web/src/lib",
        "web/src/gen/lib",
        "web/src/@/lib",
    ]
    assert configs.bases("web/main.ts", "exact") == ["web/src/x.ts", "web/src/exact"]
    # Without baseUrl, paths are relative to the config that sets them.
    assert configs.bases("other/deep/a.ts", "~/x") == ["a/x"]
    assert configs.bases("other/a.ts", "react") == []
    # Out of the repository is nowhere.
    leaving = ProjectConfigs(
        [extract_tsconfig("tsconfig.json", b'{"compilerOptions": {"paths": {"up/*": ["../*"]}}}')]
    )
    assert leaving.bases("a.ts", "up/x") == []


def test_an_extends_cycle_ends(tmp_path: Path) -> None:
    configs = ProjectConfigs(
        [
            extract_tsconfig("a/tsconfig.json", b'{"extends": "../b/tsconfig.json"}'),
            extract_tsconfig(
                "b/tsconfig.json",
                b'{"extends": ["../a/tsconfig"], "compilerOptions": {"baseUrl": "."}}',
            ),
        ]
    )
    assert configs.bases("a/main.ts", "lib") == ["b/lib"]


def test_a_round_after_a_config_edit_is_a_clean_build(tmp_path: Path) -> None:
    # cairn watch: the alias changes where @/lib/math points; the round must follow.
    repo = write_tree(
        tmp_path / "repo",
        {**NEXT_APP, "other/lib/math.ts": "export function add() {\n  return 0;\n}\n"},
    )
    cache = tmp_path / CACHE_FILENAME
    index_repository(repo, cache=cache, remember=True)
    (repo / "tsconfig.json").write_text('{"compilerOptions": {"paths": {"@/*": ["./other/*"]}}}')
    ours = index_repository(repo, cache=cache, remember=True)
    clean = index_repository(repo)
    assert (
        write_index(ours, tmp_path / "ours", generated_at=FIXED_TIME).graph_path.read_bytes()
        == write_index(clean, tmp_path / "clean", generated_at=FIXED_TIME).graph_path.read_bytes()
    )
    calls = call_pairs(clean.graph)
    assert ("function:src/app/page.ts#total", "function:other/lib/math.ts#add") in calls


_USES_CN = (
    'import {{ cn }} from "@/lib/utils";\n\nexport function {name}() {{\n  return cn();\n}}\n'
)

VITE_APP = {
    # create-vite's react-ts template: a solution config that takes no file itself and
    # references one config for the app and one for the build script.
    "tsconfig.json": """{
  "files": [],
  "references": [{ "path": "./tsconfig.app.json" }, { "path": "./tsconfig.node.json" }]
}
""",
    "tsconfig.app.json": """{
  "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["./src/*"] } },
  "include": ["src"],
  "exclude": ["src/**/*.test.ts"]
}
""",
    "tsconfig.node.json": (
        '{"compilerOptions": {"paths": {"@/*": ["./scripts/*"]}}, "include": ["vite.config.ts"]}'
    ),
    "src/lib/utils.ts": "export function cn() {\n  return 1;\n}\n",
    "scripts/lib/utils.ts": "export function cn() {\n  return 2;\n}\n",
    "src/App.tsx": _USES_CN.format(name="App"),
    "vite.config.ts": _USES_CN.format(name="config"),
    "src/App.test.ts": _USES_CN.format(name="check"),
}


def test_a_solution_config_hands_each_file_to_the_config_that_takes_it(tmp_path: Path) -> None:
    calls = _calls(write_tree(tmp_path, VITE_APP))
    assert ("function:src/App.tsx#App", "function:src/lib/utils.ts#cn") in calls
    assert ("function:vite.config.ts#config", "function:scripts/lib/utils.ts#cn") in calls
    # Excluded from the app's config and taken by no other: the solution config, which
    # has no aliases, is the file's.
    checked = {t for s, t in calls if s == "function:src/App.test.ts#check"}
    assert checked == {"external:js:@/lib/utils.cn"}


def test_include_patterns_folders_and_wildcards() -> None:
    # A solution config referencing two configs beside it (a folder's own
    # tsconfig.json would be the nearest config of its files, taken or not).
    configs = ProjectConfigs(
        [
            extract_tsconfig(
                "tsconfig.json",
                b'{"files": [], "references": [{"path": "./tsconfig.a.json"}, {"path": "b.json"}]}',
            ),
            extract_tsconfig(
                "tsconfig.a.json",
                b'{"compilerOptions": {"baseUrl": "a"},'
                b' "include": ["packages/a/src/**/*.ts", "packages/a/?.ts", "lib"]}',
            ),
            extract_tsconfig(
                "b.json", b'{"compilerOptions": {"baseUrl": "b"}, "files": ["tools/x.ts"]}'
            ),
        ]
    )
    assert configs.bases("packages/a/src/deep/er/m.ts", "m") == ["a/m"]
    assert configs.bases("packages/a/x.ts", "m") == ["a/m"]  # ?.ts
    assert configs.bases("lib/any/where.tsx", "m") == ["a/m"]  # a folder takes all below
    assert configs.bases("packages/a/xy.ts", "m") == []  # taken by none: the solution's
    assert configs.bases("packages/a/src/m.tsx", "m") == []  # *.ts only
    assert configs.bases("tools/x.ts", "m") == ["b/m"]  # listed in files
