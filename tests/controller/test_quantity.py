"""controller.quantity: sums of resource quantities print as Go's ``Quantity.String()`` does."""

from __future__ import annotations

import pytest

from controller.quantity import add, format_quantity, parse


def total(*texts: str) -> str:
    quantities = [parse(t) for t in texts]
    result = quantities[0]
    for more in quantities[1:]:
        result = add(result, more)
    return format_quantity(result)


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (("100m", "100m"), "200m"),
        (("1", "500m"), "1500m"),
        (("500m", "1500m"), "2"),
        (("1.5",), "1500m"),
        (("999", "1"), "1k"),
        (("1200",), "1200"),
        (("128Mi", "128Mi"), "256Mi"),
        (("1Gi", "512Mi"), "1536Mi"),
        (("512Mi", "512Mi"), "1Gi"),
        (("1", "1", "1", "1"), "4"),
        (("100",), "100"),
        (("1e3",), "1k"),
        (("0",), "0"),
    ],
)
def test_sums_print_in_the_canonical_form(texts: tuple[str, ...], expected: str) -> None:
    assert total(*texts) == expected


def test_a_sum_keeps_the_format_of_its_first_term() -> None:
    # Binary first: a whole number of Ki stays binary; decimal first: it is decimal SI.
    assert total("1Ki", "1024") == "2Ki"
    assert total("1024", "1Ki") == "2048"


def test_binary_below_1024_or_fractional_prints_as_decimal() -> None:
    assert total("0.5Ki") == "512"
    assert total("1000") == "1k"


def test_anything_else_is_not_a_quantity() -> None:
    for text in ("", "1.2.3", "5 Gi", "Gi", "1Gb"):
        with pytest.raises(ValueError):
            parse(text)
