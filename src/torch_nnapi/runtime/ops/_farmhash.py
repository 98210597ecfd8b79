"""FarmHash Fingerprint64 (the "na" 64-bit hash), which LSH_PROJECTION hashes keys with.

Written from the published FarmHash algorithm and vectorized over many keys of one length:
every key of an LSH_PROJECTION has the same length, so each step is a NumPy operation on a
column of uint64 words (NumPy's uint64 arithmetic wraps modulo 2**64, as C's does).
"""

from __future__ import annotations

from typing import cast

import numpy as np

_K0 = np.uint64(0xC3A5C85C97CB3127)
_K1 = np.uint64(0xB492B66FBE98F273)
_K2 = np.uint64(0x9AE16A3B2F90404F)
_U64 = np.dtype("<u8")


def _u64(value: int) -> np.uint64:
    return cast("np.uint64", np.uint64(value % (1 << 64)))


def _rotate(x: np.ndarray, shift: int) -> np.ndarray:
    """Rotates right by ``shift`` bits."""
    if shift == 0:
        return x
    return cast("np.ndarray", (x >> np.uint64(shift)) | (x << np.uint64(64 - shift)))


def _shift_mix(x: np.ndarray) -> np.ndarray:
    return cast("np.ndarray", x ^ (x >> np.uint64(47)))


def _fetch64(keys: np.ndarray, offset: int) -> np.ndarray:
    """The little-endian 64-bit word at byte ``offset`` of every key."""
    return np.ascontiguousarray(keys[:, offset:offset + 8]).view(_U64)[:, 0]


def _fetch32(keys: np.ndarray, offset: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, offset:offset + 4]).view("<u4")[:, 0].astype(_U64)


def _hash_len16(u: np.ndarray, v: np.ndarray, mul: np.uint64) -> np.ndarray:
    a = (u ^ v) * mul
    a ^= a >> np.uint64(47)
    b = (v ^ a) * mul
    b ^= b >> np.uint64(47)
    return cast("np.ndarray", b * mul)


def _len_0_to_16(keys: np.ndarray, n: int) -> np.ndarray:
    if n >= 8:
        mul = _K2 + _u64(2 * n)
        a = _fetch64(keys, 0) + _K2
        b = _fetch64(keys, n - 8)
        c = _rotate(b, 37) * mul + a
        d = (_rotate(a, 25) + b) * mul
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + _u64(2 * n)
        a = _fetch32(keys, 0)
        return _hash_len16(_u64(n) + (a << np.uint64(3)), _fetch32(keys, n - 4), mul)
    if n > 0:
        a, b, c = (keys[:, i].astype(_U64) for i in (0, n >> 1, n - 1))
        y = a + (b << np.uint64(8))
        z = _u64(n) + (c << np.uint64(2))
        return cast("np.ndarray", _shift_mix(y * _K2 ^ z * _K0) * _K2)
    return np.full(len(keys), _K2, _U64)


def _len_17_to_32(keys: np.ndarray, n: int) -> np.ndarray:
    mul = _K2 + _u64(2 * n)
    a = _fetch64(keys, 0) * _K1
    b = _fetch64(keys, 8)
    c = _fetch64(keys, n - 8) * mul
    d = _fetch64(keys, n - 16) * _K2
    return _hash_len16(_rotate(a + b, 43) + _rotate(c, 30) + d,
                       a + _rotate(b + _K2, 18) + c, mul)


def _len_33_to_64(keys: np.ndarray, n: int) -> np.ndarray:
    mul = _K2 + _u64(2 * n)
    a = _fetch64(keys, 0) * _K2
    b = _fetch64(keys, 8)
    c = _fetch64(keys, n - 8) * mul
    d = _fetch64(keys, n - 16) * _K2
    y = _rotate(a + b, 43) + _rotate(c, 30) + d
    z = _hash_len16(y, a + _rotate(b + _K2, 18) + c, mul)
    e = _fetch64(keys, 16) * mul
    f = _fetch64(keys, 24)
    g = (y + _fetch64(keys, n - 32)) * mul
    h = (z + _fetch64(keys, n - 24)) * mul
    return _hash_len16(_rotate(e + f, 43) + _rotate(g, 30) + h, e + _rotate(f + a, 18) + g, mul)


def _weak_hash_32(keys: np.ndarray, offset: int, a: np.ndarray,
                  b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 16-byte hash of 32 bytes of every key and two seeds."""
    w, x, y, z = (_fetch64(keys, offset + 8 * i) for i in range(4))
    a = a + w
    b = _rotate(b + a + z, 21)
    c = a
    a = a + x + y
    b = b + _rotate(a, 44)
    return a + z, b + c


def _len_over_64(keys: np.ndarray, n: int) -> np.ndarray:
    """Keys of more than 64 bytes: 64-byte blocks mixed into a 56-byte state."""
    count = len(keys)
    seed = _u64(81)
    zeros = np.zeros(count, _U64)
    x = np.full(count, seed, _U64)
    y = np.full(count, seed * _K1 + _u64(113), _U64)
    z = _shift_mix(y * _K2 + _u64(113)) * _K2
    v0, v1, w0, w1 = zeros, zeros, zeros, zeros
    x = x * _K2 + _fetch64(keys, 0)
    for s in range(0, (n - 1) // 64 * 64, 64):
        x = _rotate(x + y + v0 + _fetch64(keys, s + 8), 37) * _K1
        y = _rotate(y + v1 + _fetch64(keys, s + 48), 42) * _K1
        x ^= w1
        y = y + v0 + _fetch64(keys, s + 40)
        z = _rotate(z + w0, 33) * _K1
        v0, v1 = _weak_hash_32(keys, s, v1 * _K1, x + w0)
        w0, w1 = _weak_hash_32(keys, s + 32, z + w1, y + _fetch64(keys, s + 16))
        z, x = x, z
    mul = _K1 + ((z & np.uint64(0xFF)) << np.uint64(1))
    s = n - 64  # the last 64 bytes
    w0 = w0 + _u64((n - 1) & 63)
    v0 = v0 + w0
    w0 = w0 + v0
    x = _rotate(x + y + v0 + _fetch64(keys, s + 8), 37) * mul
    y = _rotate(y + v1 + _fetch64(keys, s + 48), 42) * mul
    x ^= w1 * np.uint64(9)
    y = y + v0 * np.uint64(9) + _fetch64(keys, s + 40)
    z = _rotate(z + w0, 33) * mul
    v0, v1 = _weak_hash_32(keys, s, v1 * mul, x + w0)
    w0, w1 = _weak_hash_32(keys, s + 32, z + w1, y + _fetch64(keys, s + 16))
    z, x = x, z
    return _hash_len16(_hash_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z,
                       _hash_len16(v1, w1, mul) + x, mul)


def fingerprint64(keys: np.ndarray) -> np.ndarray:
    """Fingerprint64 of each row of a [count, length] uint8 array, as uint64."""
    keys = np.ascontiguousarray(keys, dtype=np.uint8)
    n = keys.shape[1]
    with np.errstate(over="ignore"):
        if n <= 16:
            return _len_0_to_16(keys, n)
        if n <= 32:
            return _len_17_to_32(keys, n)
        if n <= 64:
            return _len_33_to_64(keys, n)
        return _len_over_64(keys, n)
