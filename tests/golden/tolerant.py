"""The golden runs compared to a tolerance, for kernels compiled for a CPU whose bytes
were not recorded (tests/golden/expected/CPUS lists those that were).

Why a tolerance. Several compiled kernels add their terms in the order that vectorizes
(numba's fastmath): compiled for another CPU (other vector widths, another cost
model), the same run rounds differently and the model files differ in their last
digits. A run whose branches all go the same way differs only by that rounding; the
weights it writes come out of the master QP, solved to a KKT violation of 1e-10 relative
(cpsvm.engine.qp.DEFAULT_TOL), or of passes and steps that repeat the same updates. So
REL = 1e-6, four orders above that precision (and far above the differences measured
between CPUs, README.md), tells rounding from a different computation;
and it is far inside what the stopping rules guarantee (a gap of 1e-3..1e-2 of the
objective allows weights sqrt(2·gap) apart, a few percent): a model within REL of the
recorded one is as good by the solvers' own standard.

What is compared. The model and prediction files are not in the repository (a few MB),
so ``--update`` records a fingerprint of each: the text with its real numbers masked
(the kind, the header's text and counts, every index, label and tag kept, so they must
match exactly), the count and the norm of the vector v of its real numbers, and 32
projections of v on fixed ±1 vectors, from which ‖v − v_recorded‖ is estimated (the mean
square of the projections' differences is ‖v − v_recorded‖² in expectation; a factor of
2 off at worst in practice, far inside the margin above). A prediction file is thus
compared by label (class, tag, tree, the sign of a decision value: exactly, except a
decision value within the tolerance of 0) and its real numbers to REL. The printed .out
texts are in the repository and are compared line by line: the same words, integers
exactly, a real number to REL plus one unit of its last printed digit, and the counts
of work (iterations, oracle calls, cuts, passes, kernel evaluations), which a stop one
check earlier or later changes, to WORK_REL.

Another path. Where a decision between two nearly equal candidates (the oracle's most
violated constraint, a ranking's order of two nearly equal scores) goes the other way,
the run takes another path to the optimum and stops elsewhere within its tolerance: the
haswell (AVX2) build does so on the ranking case. Such a run is told by its work counts
(they differ from the recorded ones); its outputs, and those of the cases that read its
model, are held to what the stopping rule guarantees rather than to rounding: real
numbers to PATH_REL, printed counts as work counts (a test example more or less
correct), the figures that say where it stopped (epsilon, gap, slack) not compared; the
files' text, counts, indices and labels exactly as above.
"""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np

REL = 1e-6
PATH_REL = 0.05  # another path (see above): a few percent, as the stopping rules allow
WORK_REL = 0.1  # or WORK_ABS, whichever is larger
WORK_ABS = 2
PROJECTIONS = 32

# A number standing alone (not part of a name such as a9a3k or V6.20).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|inf|nan)(?![\w.])")
# Lines counting the work a run did rather than its result.
_WORK = re.compile(
    r"iterations|calls to|constraints in|cutting planes|passes|coordinate updates|"
    r"active|kernel evaluations|CKY parses|samples drawn|Number of SV|evaluations\)"
)
# Lines saying where a run stopped (a run on another path stops elsewhere).
_STOP = re.compile(r"epsilon|duality gap|slack variable|Stopped because")


def _is_real(token: str) -> bool:
    return any(c in token for c in ".eEn")


def _split(text: str):
    """(the text with each real number replaced by '#', the real numbers in order)."""
    reals = []

    def mask(match):
        token = match.group(0)
        if not _is_real(token):
            return token
        reals.append(float(token))
        return "#"

    return _NUMBER.sub(mask, text), np.array(reals, dtype=np.float64)


def _signs(n: int) -> np.ndarray:
    """PROJECTIONS fixed ±1 vectors of length n (splitmix64 of the position: the same
    on every machine, whatever numpy's generators do)."""
    k = np.arange(n, dtype=np.uint64)
    rows = np.empty((PROJECTIONS, n))
    for j in range(PROJECTIONS):
        z = k + np.uint64(((j + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
        rows[j] = np.where(z >> np.uint64(63), 1.0, -1.0)
    return rows


def _norm_and_projections(v):
    """‖v‖ and the PROJECTIONS projections of v (non-finite entries as 0), summed exactly
    (math.fsum): the same on every CPU, so that ``--update`` writes the same file
    wherever the outputs are the same."""
    finite = np.where(np.isfinite(v), v, 0.0)
    norm = math.sqrt(math.fsum((finite * finite).tolist()))
    return norm, [math.fsum((row * finite).tolist()) for row in _signs(len(v))]


def fingerprint(text: str) -> dict:
    """What ``--update`` records of an output file, for :func:`compare_file`."""
    skeleton, v = _split(text)
    norm, projections = _norm_and_projections(v)
    return {
        "skeleton": hashlib.sha256(skeleton.encode()).hexdigest(),
        "reals": len(v),
        "norm": norm,
        "nonfinite": hashlib.sha256(np.isfinite(v).tobytes()).hexdigest(),
        "projections": projections,
    }


def compare_file(name: str, text: str, recorded: dict, rel: float = REL) -> str | None:
    """None if ``text`` matches the recorded fingerprint to the tolerance ``rel``, else
    what differs."""
    if recorded is None:
        return f"{name}: no fingerprint recorded"
    skeleton, v = _split(text)
    if hashlib.sha256(skeleton.encode()).hexdigest() != recorded["skeleton"]:
        return f"{name}: its text, counts, indices or labels differ (beyond the real numbers)"
    if len(v) != recorded["reals"]:
        return f"{name}: {len(v)} real numbers, {recorded['reals']} recorded"
    if hashlib.sha256(np.isfinite(v).tobytes()).hexdigest() != recorded["nonfinite"]:
        return f"{name}: non-finite numbers where none were recorded (or the reverse)"
    norm, projections = _norm_and_projections(v)
    scale = max(recorded["norm"], 1e-300)
    drift = np.asarray(recorded["projections"]) - np.asarray(projections)
    distance = math.sqrt(float(np.mean(drift**2))) if len(drift) else 0.0
    if abs(norm - recorded["norm"]) > rel * scale or distance > rel * scale:
        return (
            f"{name}: its real numbers are {distance / scale:.3g} of their norm from the "
            f"recorded ones (estimated; norm {norm:.17g} against {recorded['norm']:.17g}), "
            f"more than {rel:g}"
        )
    return None


def _unit(token: str) -> float:
    """One unit of a printed real number's last digit (0 for an integer)."""
    if not _is_real(token) or token.lstrip("+-") in ("inf", "nan"):
        return 0.0
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _same(a: str, b: str, work: bool, another_path: bool) -> bool:
    x, y = float(a), float(b)
    if a == b or (math.isnan(x) and math.isnan(y)):
        return True
    counted = not (_is_real(a) and _is_real(b))
    if work or (counted and another_path):
        return abs(x - y) <= max(WORK_REL * abs(x), WORK_ABS)
    if counted:
        return False  # an integer: a count, a label, an exit status
    rel = PATH_REL if another_path else REL
    return abs(x - y) <= rel * abs(x) + _unit(a) + _unit(b)


def took_another_path(got: str, expected: str) -> bool:
    """Whether a printed .out text counts other work than the recorded one."""
    counts = [
        [_NUMBER.findall(line) for line in text.splitlines() if _WORK.search(line)]
        for text in (got, expected)
    ]
    return counts[0] != counts[1]


def compare_text(name: str, got: str, expected: str, another_path: bool = False) -> str | None:
    """None if a printed .out text matches the recorded one to the tolerance (see the
    module docstring; ``another_path``: a run on another path), else the first line
    that does not."""
    got_lines, expected_lines = got.splitlines(), expected.splitlines()
    if len(got_lines) != len(expected_lines):
        return f"{name}: {len(got_lines)} lines, {len(expected_lines)} recorded"
    for n, (line, recorded) in enumerate(zip(got_lines, expected_lines), 1):
        if line == recorded:
            continue
        words, numbers = _NUMBER.sub("#", line), _NUMBER.findall(line)
        recorded_words, recorded_numbers = _NUMBER.sub("#", recorded), _NUMBER.findall(recorded)
        work = bool(_WORK.search(line))
        if another_path and _STOP.search(line):
            numbers = recorded_numbers
        if words != recorded_words or not all(
            _same(b, a, work, another_path) for a, b in zip(numbers, recorded_numbers)
        ):
            return f"{name}:{n}: {line!r}, recorded {recorded!r}"
    return None
