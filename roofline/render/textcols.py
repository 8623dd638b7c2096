"""Numbers to text a whole column at a time, in numpy, for the sweep's CSV writer.

Each function returns an (n, width) uint8 matrix of UTF-8 bytes, one row per value, where NUL
bytes are padding: a writer places the matrices of a row's fields side by side and drops every
NUL (one `bytes.translate` pass), so no Python object is made per value. `g7` writes what C's `%.7g`
writes (Python's `'%.7g' % x`, byte for byte): the 7 significant digits are found in float64
arithmetic, and the rare values that arithmetic cannot settle exactly (a decimal tie within a few
ulps, magnitudes beyond 1e±250, zeros) are formatted by Python's own `%.7g` instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DIGITS = 7  # significant digits of a float in CSV (%.7g: a float32's worth, ample for a planner)
_P = DIGITS
_LO, _HI = 10.0 ** (_P - 1), 10.0**_P
_POW10 = np.power(10.0, np.arange(-300, 301))  # 10**k, k in [-300, 300] (inexact beyond ±22)
_ZERO, _DOT, _MINUS, _PLUS, _E = (ord(c) for c in "0.-+e")
G7_WIDTH = 1 + 2 + 3 + 2 * _P + 5  # sign, "0." and 3 zeros, digits with a point slot, e+ddd
TIE_SLACK = 1e-7  # |frac - 0.5| below this: float64 error could flip the rounding; ask Python


def texts(values: Sequence[str]) -> np.ndarray:
    """Strings as an (n, width) NUL-padded UTF-8 byte matrix (a string itself must hold no NUL)."""
    raw = [v.encode() for v in values]
    w = max([len(b) for b in raw] + [1])
    return np.array(raw, dtype=f"S{w}").view(np.uint8).reshape(len(raw), w)


def ints(a: np.ndarray) -> np.ndarray:
    """Integers (|x| < 10**18) as decimal text, as `str(int)` writes them."""
    a = np.asarray(a).astype(np.int64)
    mag = np.abs(a)
    width = len(str(int(mag.max()))) if a.size else 1
    q = mag.astype(np.int32) if width < 10 else mag
    out = np.zeros((a.size, width + 1), dtype=np.uint8)
    out[:, 0] = np.where(a < 0, _MINUS, 0)
    for k in range(width, 0, -1):  # last digit first; leading zeros stay padding
        q10 = q // 10
        out[:, k] = np.where((q > 0) | (k == width), q - q10 * 10 + _ZERO, 0)
        q = q10
    return out


def ints_ok(a: np.ndarray) -> bool:
    """Whether `ints` writes this integer array exactly (int64 range with room for abs)."""
    if a.size == 0:
        return True
    return bool(int(a.min()) > -(10**18) and int(a.max()) < 10**18)


def g7(a: np.ndarray) -> np.ndarray:
    """Finite floats as `'%.7g' % x` writes them (NaN and inf rows are left as padding: the
    caller writes its own missing mark there)."""
    x = np.asarray(a, dtype=np.float64)
    n = x.size
    mag = np.abs(x)
    finite = np.isfinite(x)
    fast = finite & (mag > 1e-250) & (mag < 1e250)
    safe = np.where(fast, mag, 1.0)
    e10 = np.floor(np.log10(safe)).astype(np.int64)
    scaled = safe * _POW10[(_P - 1 - e10) + 300]
    # log10 can land one off near a power of ten: step the exponent until the scaled value has
    # exactly _P integer digits
    for _ in range(2):
        lo, hi = scaled < _LO, scaled >= _HI
        if not (lo.any() or hi.any()):
            break
        e10 = e10 - lo + hi
        scaled = safe * _POW10[(_P - 1 - e10) + 300]
    frac = scaled - np.floor(scaled)
    fast &= np.abs(frac - 0.5) > TIE_SLACK
    m = np.rint(scaled).astype(np.int64)
    carry = m >= 10**_P  # 9999999.7 -> 10000000: one more decade
    m = np.where(carry, 10 ** (_P - 1), m)
    e10 = e10 + carry
    # the P digits, last first (1-D int32 steps are cheaper than one (n, P) broadcast)
    digits = []
    q = m.astype(np.int32)
    for _ in range(_P):
        q10 = q // 10
        digits.append((q - q10 * 10).astype(np.uint8))
        q = q10
    digits.reverse()  # leading digit nonzero
    nd = np.full(n, _P, dtype=np.int64)  # significant digits once trailing zeros go
    trailing = np.ones(n, dtype=bool)
    for k in range(_P - 1, 0, -1):
        trailing &= digits[k] == 0
        nd -= trailing
    sci = (e10 < -4) | (e10 >= _P)  # %g: exponent form outside [1e-4, 10**P)
    xe = np.where(sci, 0, e10)  # the point follows digit xe (xe < 0: "0." and zeros first)
    nkeep = np.maximum(nd, xe + 1)  # integer-part zeros stay
    # column-major: each of the writes below fills one contiguous byte column
    out = np.zeros((n, G7_WIDTH), dtype=np.uint8, order="F")
    out[:, 0] = np.where(x < 0, _MINUS, 0)
    small = xe < 0
    out[:, 1] = np.where(small, _ZERO, 0)
    out[:, 2] = np.where(small, _DOT, 0)
    for k in range(3):  # -xe - 1 zeros after "0." (xe >= -4)
        out[:, 3 + k] = np.where(small & (k < -xe - 1), _ZERO, 0)
    point = np.where(nd > xe + 1, xe, -1)  # the digit a point follows (none: -1)
    for k in range(_P):
        out[:, 6 + 2 * k] = np.where(k < nkeep, digits[k] + _ZERO, 0)
        out[:, 7 + 2 * k] = np.where(point == k, _DOT, 0)
    ex = np.abs(e10)
    tail = out[:, 6 + 2 * _P :]
    tail[:, 0] = np.where(sci, _E, 0)
    tail[:, 1] = np.where(sci, np.where(e10 < 0, _MINUS, _PLUS), 0)
    tail[:, 2] = np.where(sci & (ex >= 100), ex // 100 + _ZERO, 0)
    tail[:, 3] = np.where(sci, (ex // 10) % 10 + _ZERO, 0)
    tail[:, 4] = np.where(sci, ex % 10 + _ZERO, 0)
    out[~finite] = 0
    for i in np.flatnonzero(finite & ~fast).tolist():  # zeros, extremes, near-ties
        b = f"{float(x[i]):.7g}".encode()
        out[i] = 0
        out[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    return out


def squeeze(m: np.ndarray) -> np.ndarray:
    """Drop the byte columns that are padding in every row (fewer bytes to join)."""
    keep = m.any(axis=0)
    return m if keep.all() else m[:, keep]


def join_rows(fields: Sequence[np.ndarray], sep: bytes, n: int) -> bytes:
    """Fields side by side, `sep` between them and a newline after each row, NULs dropped:
    the rows' text, one bytes object. A 1-D field is one value shared by every row; runs of
    them (and the separators) are copied as one piece. bytes.translate drops the NULs in one C
    pass (no mask array, no gather)."""
    parts: list[np.ndarray] = []
    shared = b""
    for i, f in enumerate(fields):
        if i:
            shared += sep
        if f.ndim == 1:
            shared += f.tobytes()
            continue
        if shared:
            parts.append(np.broadcast_to(np.frombuffer(shared, dtype=np.uint8), (n, len(shared))))
            shared = b""
        parts.append(f)
    shared += b"\n"
    parts.append(np.broadcast_to(np.frombuffer(shared, dtype=np.uint8), (n, len(shared))))
    return np.concatenate(parts, axis=1).tobytes().translate(None, b"\0")
