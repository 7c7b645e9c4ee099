"""Kubernetes resource quantities: parse, add, and print them as the API's Go code does (pure).

Needed for the ``minResources`` of a Volcano or scheduler-plugins PodGroup, which
training-operator v1.8.1 computes by adding up the pods' resource requests
(:func:`controller.gang.min_resources`). A sum keeps the format of its first term, as
``resource.Quantity.Add`` does: binary (``Ki``, ``Mi``...) or decimal (``m``, ``k``...); it is
printed in the canonical form of ``Quantity.String()`` (``1500m``, ``2``, ``1k``, ``256Mi``).
The exponent notation (``1e3``) is read, and printed back as decimal SI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_DECIMAL["E"] = 18
_DECIMAL_SUFFIX: Final = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX: Final = {power: suffix for suffix, power in _BINARY.items()}
_PATTERN: Final = re.compile(
    r"^(?P<number>[+-]?(\d+\.?\d*|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?|[eE][+-]?\d+)$"
)


@dataclass(frozen=True)
class Quantity:
    value: Fraction
    binary: bool


def parse(text: str) -> Quantity:
    """A quantity as written in a pod spec; ValueError if it is not one."""
    match = _PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    number, suffix = Fraction(match["number"]), match["suffix"]
    if suffix in _BINARY:
        return Quantity(number * 1024 ** _BINARY[suffix], binary=True)
    if suffix[:1] in ("e", "E"):
        return Quantity(number * Fraction(10) ** int(suffix[1:]), binary=False)
    return Quantity(number * Fraction(10) ** _DECIMAL[suffix], binary=False)


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
