"""The values of a path over C (or γ): a list ``0.1,1,10`` or a log-spaced range
``LOW:HIGH:N``, in increasing order."""

from __future__ import annotations

import math

from ..errors import OptionError
from ..options import finite_positive

# A value of the path is a -c: the same declaration checks it (cpsvm.params.shared).
C_VALUE = finite_positive("C")

MAX_VALUES = 1000  # a path longer than this is a typo, not a search


def parse_values(text: str, flag: str = "--c-path", kind=C_VALUE) -> list:
    """Sorted distinct values of ``text``, each one ``kind`` holds (-c's range: finite,
    > 0); OptionError (a usage error) naming ``flag`` otherwise."""
    wanted = f"expected {flag} LIST (e.g. 0.1,1,10) or LOW:HIGH:N (N log-spaced values)"
    text = text.strip()
    try:
        if ":" in text:
            low_text, high_text, n_text = text.split(":")
            low, high, n = float(low_text), float(high_text), int(n_text)
            if n < 1 or n > MAX_VALUES:
                raise OptionError(f"{wanted}, N 1..{MAX_VALUES}, got {text!r}")
            if not (0 < low <= high < math.inf):
                raise OptionError(f"{wanted}, 0 < LOW <= HIGH, got {text!r}")
            # One value spans no range, and equal ends give one value, not N copies.
            if n == 1 and low != high:
                raise OptionError(
                    f"{wanted}: N = 1 gives LOW alone, so HIGH would be ignored; give N >= 2 "
                    f"or LOW = HIGH, got {text!r}"
                )
            if n > 1 and low == high:
                raise OptionError(
                    f"{wanted}: LOW = HIGH gives one value, not {n}; give LOW < HIGH or "
                    f"N = 1, got {text!r}"
                )
            if n == 1:
                values = [low]
            else:
                step = (math.log10(high) - math.log10(low)) / (n - 1)
                values = [10 ** (math.log10(low) + i * step) for i in range(n)]
                values[0], values[-1] = low, high  # exactly the ends given
                if len(set(values)) < n:
                    raise OptionError(
                        f"{wanted}: {n} values between {low:g} and {high:g} are not all "
                        f"distinct in double precision, got {text!r}"
                    )
        else:
            values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise OptionError(f"{wanted}, got {text!r}") from None
    if not values or len(values) > MAX_VALUES:
        raise OptionError(f"{wanted}, 1..{MAX_VALUES} values, got {text!r}")
    bad = [v for v in values if not kind.holds(v)]
    if bad:
        raise OptionError(f"{wanted}: every value {kind.wanted(flag)}, got {bad[0]:g}")
    return sorted(set(values))
