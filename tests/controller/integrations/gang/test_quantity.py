"""controller.integrations.gang.quantity: sums of resource quantities print as Go's
``Quantity.String()`` does.

The values are the kubernetes client's (``kubernetes.utils.parse_quantity``), for every text the
API server takes for a quantity; what it refuses is refused here too, also where the client is
more lenient.
"""

from __future__ import annotations

from fractions import Fraction

import kubernetes.utils
import pytest

from controller.integrations.gang.quantity import add, format_quantity, parse


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


def _clients(text: str) -> Fraction:
    """The value ``kubernetes.utils.parse_quantity`` gives, in Python's default decimal context."""
    return Fraction(kubernetes.utils.parse_quantity(text))  # type: ignore[no-untyped-call]


# Every suffix of both formats, exponents, signs and fractions: the value is the kubernetes
# client's, and the format is binary exactly for the binary suffixes.
AGREED = [
    "0",
    "1",
    "+1",
    "-1",
    "12",
    "1.5",
    ".5",
    "5.",
    "0.001",
    "100n",
    "1n",
    "0.5n",
    "250u",
    "100m",
    "-1500m",
    "1.5k",
    "1M",
    "2G",
    "3T",
    "4P",
    "5E",
    "1Ki",
    "0.5Ki",
    "128Mi",
    "1.5Gi",
    "2Ti",
    "3Pi",
    "1Ei",
    "-256Mi",
    "1e3",
    "1E3",
    "1e+3",
    "1e-3",
    "2.5e2",
    "1e0",
]


@pytest.mark.parametrize("text", AGREED)
def test_the_value_is_the_kubernetes_clients(text: str) -> None:
    assert parse(text).value == _clients(text)
    assert parse(text).binary == text.endswith("i")


def test_a_long_number_stays_exact_where_the_clients_default_precision_rounds() -> None:
    text = "123456789012345678901234567890Ei"
    assert parse(text).value == 123456789012345678901234567890 * 1024**6
    # The client alone, in Python's default 28-digit context, rounds this product.
    assert _clients(text) != parse(text).value


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "1.2.3",
        "Gi",
        "1Gb",
        "1ki",  # binary suffixes are upper case
        "1mi",
        "1e",
        "1e1.5",
        "--1",
        # The client reads these; the API server refuses them.
        "5 Gi",
        "1K",
        "1_000",
        "NaN",
        "Infinity",
        "1e3k",
    ],
)
def test_what_the_api_server_refuses_is_not_a_quantity(text: str) -> None:
    with pytest.raises(ValueError, match=r"^not a Kubernetes quantity: .*\(expected a number"):
        parse(text)
