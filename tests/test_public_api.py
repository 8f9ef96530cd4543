"""The deliberate public API: ``__all__`` lists whose names all resolve."""

import importlib

import pytest

MODULES = [
    "cairn",
    "cairn.errors",
    "cairn.arrays",
    "cairn.canonical",
    "cairn.graph",
    "cairn.graph.model",
    "cairn.graph.identity",
    "cairn.graph.registry",
    "cairn.graph.multigraph",
    "cairn.graph.diff",
    "cairn.graph.receipt",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_unique_and_resolves(name: str) -> None:
    # Order is enforced by ruff (RUF022, isort-style) in `make lint`.
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported
    assert len(exported) == len(set(exported))
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.{attribute}"


def test_root_package_exposes_the_error_tree() -> None:
    import cairn
    from cairn.errors import error_classes

    for cls in error_classes():
        if cls.__module__ == "cairn.errors":
            assert getattr(cairn, cls.__name__) is cls
