"""Kubernetes resource quantities: parse, add, and print them as the API's Go code does (pure).

Needed for the ``minResources`` of a Volcano or scheduler-plugins PodGroup, which
training-operator v1.8.1 computes by adding up the pods' resource requests
(:func:`controller.integrations.gang.podgroups.min_resources`). A sum keeps the format of its first
term, as ``resource.Quantity.Add`` does: binary (``Ki``, ``Mi``...) or decimal (``m``, ``k``...); it
is printed in the canonical form of ``Quantity.String()`` (``1500m``, ``2``, ``1k``, ``256Mi``).
The exponent notation (``1e3``) is read, and printed back as decimal SI.

The value of a quantity is the kubernetes client's (``kubernetes.utils.quantity.parse_quantity``,
which the controller's image has). That parser is more lenient than the API server's
``resource.ParseQuantity``: it reads ``1K``, ``5 Gi``, ``1_000``, ``NaN`` and ``1e3k``, none of
which is a quantity. So the text is first held to the API server's grammar here, which also says
the quantity's format, binary or decimal, that the client's number does not carry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, localcontext
from fractions import Fraction
from typing import Final

from kubernetes.utils.quantity import parse_quantity

_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_DECIMAL["E"] = 18
_DECIMAL_SUFFIX: Final = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX: Final = {power: suffix for suffix, power in _BINARY.items()}
# resource.Quantity's grammar: a signed number, then a binary or decimal SI suffix or an exponent.
_PATTERN: Final = re.compile(
    r"^(?P<number>[+-]?(\d+\.?\d*|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?|[eE][+-]?\d+)$"
)
_GRAMMAR: Final = (
    "a number (12, 1.5, .5) with an optional suffix: Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, "
    "T, P, E, or an exponent such as e3"
)


@dataclass(frozen=True)
class Quantity:
    value: Fraction
    binary: bool


def parse(text: str) -> Quantity:
    """A quantity as written in a pod spec; ValueError if it is not one."""
    stripped = text.strip()
    match = _PATTERN.match(stripped)
    if not match:
        raise ValueError(f"not a Kubernetes quantity: {text!r} (expected {_GRAMMAR})")
    # The client multiplies in the current decimal context (28 digits by default). With one digit
    # more than the number and the largest suffix (1024**6, 19 digits) have together, and
    # unbounded exponents, its product is exact.
    exact = Context(prec=len(stripped) + 20, Emax=MAX_EMAX, Emin=MIN_EMIN)
    with localcontext(exact):
        value: Decimal = parse_quantity(stripped)  # type: ignore[no-untyped-call]
    return Quantity(Fraction(value), binary=match["suffix"] in _BINARY)


def add(left: Quantity, right: Quantity) -> Quantity:
    return Quantity(left.value + right.value, binary=left.binary)


def _decimal(value: Fraction) -> str:
    # Nano is the finest unit: anything finer is rounded up, as Go's Quantity does.
    nanos = -((-value * 10**9) // 1)
    if nanos == 0:
        return "0"
    mantissa, exponent = int(nanos), -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    # The largest multiple of three at or below the exponent, no larger than exa.
    three = min(exponent - exponent % 3, 18)
    mantissa *= 10 ** (exponent - three)
    return f"{mantissa}{_DECIMAL_SUFFIX[three]}"


def format_quantity(quantity: Quantity) -> str:
    """Canonical text: binary only for whole numbers of at least 1024 (else decimal SI)."""
    value = quantity.value
    if not quantity.binary or abs(value) < 1024 or value.denominator != 1:
        return _decimal(value)
    amount, power = int(value), 0
    while power < 6 and amount % 1024 == 0:
        amount //= 1024
        power += 1
    return f"{amount}{_BINARY_SUFFIX.get(power, '')}"
