"""The error tree: one root, unique stable codes, documented, mapped to HTTP once."""

import pytest

import cairn.errors as errors
from cairn.errors import CairnError, error_classes

EXPECTED_HTTP = {
    "validation": 400,
    "not_found": 404,
    "permission_denied": 403,
    "unauthenticated": 401,
    "conflict": 409,
    "budget_exceeded": 429,
    "unknown_write_outcome": 503,
    "corruption": 500,
    "artifact_moved": 410,
}


def test_every_exported_error_descends_from_the_root() -> None:
    exported = [getattr(errors, name) for name in errors.__all__ if name.endswith("Error")]
    assert exported, "no error classes exported"
    for cls in exported:
        assert issubclass(cls, CairnError)


def test_codes_are_unique_and_snake_case() -> None:
    codes = [cls.code for cls in error_classes()]
    assert len(codes) == len(set(codes))
    for code in codes:
        assert code == code.lower() and " " not in code


@pytest.mark.parametrize(("code", "status"), sorted(EXPECTED_HTTP.items()))
def test_spec_http_mapping(code: str, status: int) -> None:
    by_code = {cls.code: cls for cls in error_classes()}
    assert by_code[code].http_status == status


def test_module_docstring_documents_every_class() -> None:
    doc = errors.__doc__ or ""
    for cls in error_classes():
        assert cls.__name__ in doc, cls.__name__
        assert cls.code in doc, cls.code


def test_problem_document_shape() -> None:
    error = errors.MissingEndpointError("source missing", details={"node_id": "x"})
    problem = error.to_problem()
    assert problem == {
        "type": "urn:cairn:error:missing_endpoint",
        "title": "MissingEndpointError",
        "status": 404,
        "detail": "source missing",
        "code": "missing_endpoint",
        "details": {"node_id": "x"},
    }
    assert isinstance(error, errors.NotFoundError)


def test_problem_without_details_omits_the_key() -> None:
    assert "details" not in errors.ValidationError("bad").to_problem()


def test_from_problem_gives_back_the_error_to_problem_described() -> None:
    from cairn.errors import from_problem

    for cls in error_classes():
        error = cls(f"{cls.__name__} happened", details={"where": "here"})
        again = from_problem(error.to_problem())
        assert type(again) is cls
        assert again.message == error.message and again.details == error.details
    unknown = from_problem({"code": "no_such_code", "detail": "x"})
    assert type(unknown) is CairnError and unknown.details == {}
    assert type(from_problem({"code": ["not", "a", "str"], "detail": "x"})) is CairnError
    with pytest.raises(KeyError):
        from_problem({"code": "validation"})
