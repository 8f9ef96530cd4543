"""A React component used in JSX is called where it is used: ``<Button />`` compiles to
``jsx(Button, props)``, so ``cairn callers Button`` and ``cairn impact`` must see it.
Expected edges and lines are read by hand from the sources below."""

from __future__ import annotations

from pathlib import Path

from codegraph_expect import call_pairs, write_tree

from cairn.codegraph import index_repository

FILES = {
    "components/button.tsx": "export function Button() {\n  return <button />;\n}\n",
    "components/card.tsx": (
        "export function Card() {\n  return null;\n}\n\n"
        "Card.Title = function Title() {\n  return null;\n};\n"
    ),
    "components/legacy.jsx": ("export class Legacy {\n  render() {\n    return null;\n  }\n}\n"),
    "app/use.ts": (
        'import { Card } from "../components/card";\n\n'
        "export function use() {\n  return Card.Title();\n}\n"
    ),
    "app/page.tsx": (
        'import { Button } from "../components/button";\n'
        'import { Legacy } from "../components/legacy";\n'
        'import { Card } from "../components/card";\n'
        'import Link from "next/link";\n\n'
        "export function Page() {\n"
        "  return (\n"
        '    <div className="page">\n'
        "      <Button />\n"
        '      <Link href="/">home</Link>\n'
        "      <Legacy></Legacy>\n"
        "      <my-element />\n"
        "      <>\n"
        "        <Button />\n"
        "        <Card.Title />\n"
        "      </>\n"
        "    </div>\n"
        "  );\n"
        "}\n"
    ),
}


def test_a_component_used_in_jsx_is_called_there(tmp_path: Path) -> None:
    graph = index_repository(write_tree(tmp_path, FILES)).graph
    facts = {f.id: f for f in graph.facts() if f.relation == "calls"}
    by_target = {
        f.target: (
            f.discriminator.value["invocation"],
            sorted(o.source_range.start_line for o in occ),
        )
        for f in facts.values()
        if f.source == "function:app/page.tsx#Page"
        for occ in [[graph.occurrence(i) for i in f.occurrence_ids]]
    }
    assert by_target == {
        "function:components/button.tsx#Button": ("call", [9, 14]),
        "external:js:next/link": ("call", [10]),  # a default import: the module
        "class:components/legacy.jsx#Legacy": ("construct", [11]),
        # A function assigned to a member of an imported one, in its own file.
        "function:components/card.tsx#Card.Title": ("call", [15]),
    }
    kinds = {
        graph.occurrence(i).site_kind
        for f in facts.values()
        if f.source == "function:app/page.tsx#Page"
        for i in f.occurrence_ids
    }
    assert kinds == {"jsx"}
    # <button /> is an element of the page, not a call of anything.
    assert not [f for f in facts.values() if f.source == "function:components/button.tsx#Button"]


def test_a_member_function_of_an_imported_function_is_reached(tmp_path: Path) -> None:
    graph = index_repository(write_tree(tmp_path, FILES)).graph
    calls = call_pairs(graph)
    assert ("function:app/use.ts#use", "function:components/card.tsx#Card.Title") in calls


WRAPPED = {
    "components/input.tsx": (
        'import * as React from "react";\n'
        'import { memo } from "react";\n\n'
        "function classes() {\n  return 1;\n}\n\n"
        "export const Input = React.forwardRef((props, ref) => {\n"
        "  return classes();\n"
        "});\n\n"
        "export const Badge = memo(function Badge() {\n  return null;\n});\n\n"
        "export const settings = Object.freeze({ a: 1 });\n"
    ),
    "app/form.tsx": (
        'import { Input, Badge } from "../components/input";\n\n'
        "export function Form() {\n  return <Input><Badge /></Input>;\n}\n"
    ),
}


def test_a_forward_ref_or_memo_component_is_a_function(tmp_path: Path) -> None:
    # shadcn/ui writes its components as React.forwardRef constants: each is the
    # function it wraps, used in JSX and calling what its body calls.
    graph = index_repository(write_tree(tmp_path, WRAPPED)).graph
    kinds = {n.id for n in graph.nodes() if n.id.startswith(("function:", "variable:"))}
    assert {
        "function:components/input.tsx#Input",
        "function:components/input.tsx#Badge",
        "variable:components/input.tsx#settings",  # any other call stays a constant
    } <= kinds
    assert "variable:components/input.tsx#Input" not in kinds
    calls = call_pairs(graph)
    assert {t for s, t in calls if s == "function:app/form.tsx#Form"} == {
        "function:components/input.tsx#Input",
        "function:components/input.tsx#Badge",
    }
    assert ("function:components/input.tsx#Input", "function:components/input.tsx#classes") in (
        calls
    )
    assert ("file:components/input.tsx", "external:js:react.forwardRef") in calls
    assert ("file:components/input.tsx", "external:js:react.memo") in calls
