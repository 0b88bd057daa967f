"""The Engle-Granger screen over consecutive dates, each window's statistics updated from the
previous window's instead of recomputed: every pair of a panel, windows that move forward.

:func:`sliding_engle_granger_pairs` has the contract of
:func:`kernels.coint.rolling_engle_granger_pairs` (same conventions, same degenerate-window
rules, same results to rounding: the same lags, statistics within ~1e-12) and
:class:`SlidingEG` gives one window at a time (a daily or monthly re-screen that advances with
its dates). A 2,520-session window of the per-date test costs O(window x lag cap) per pair;
here each pair keeps the cross-product sums of its regressions (the cointegrating regression's
and the ADF regression's, lagged differences included, in the symmetric combinations the
regressions use: p + 4 numbers for lag cap p, 31 at p = 27) and a date that moves the window
by k sessions costs O(k p) to update them plus the O(p^3) solve of the ADF regressions (one
Cholesky factorisation of the (p+2)^2 augmented Gram matrix gives every lag order's residual sum
of squares and t statistic; a smaller one refits the chosen lag, gathered with the refits of the
same lag). The algebra is in
:mod:`kernels._jit_sliding`; :attr:`SlidingEG.ops` counts the operations performed.

Numerical care: centring plus a periodic exact recompute, no compensated sums.

* Centring. Sums of raw log prices (about 4 for a $50 stock) would cancel badly: the window's
  centred sum of squares is about 1 % of the raw one. Each ticker's log prices are shifted by
  their mean over the window where the sums were last recomputed exactly, so the sums hold
  values of the size of the window's spread, and the regressions' residual sums, which are
  formed from them, lose about as many digits as the per-date kernel's two-pass sums do.
* Periodic exact recompute. Each slide adds and removes one row's products; the rounding of
  k slides adds up to about sqrt(k) eps times the size of a row's product, far below the
  rounding of the exact sum for any k within a window. What grows over a long sweep is the
  distance between the shift and the window's current mean (a stock that triples moves its log
  price by 1.1), so every ``refresh`` sessions of movement (default: one window length) all
  sums are recomputed exactly on new shifts (as matrix products: every pair at once). That
  costs one window's exact sums per window length of movement, at most as much again as the
  slides themselves, and leaves a year of daily dates on a ten-year window (252 sessions)
  without any recompute after the first.

A pair's sums are also recomputed exactly when the move is too large to pay (the rows to remove
and add reach a quarter of the window's), when the window moves backwards or changes its lag cap (its
length), and when the pair's window becomes free of NaN again after holding one. A window
holding a NaN, or a constant leg, gives NaN results (lag -1), as the per-date kernel;
collinear legs give NaN stat and p-value with finite beta and alpha.

Compensated (Kahan) sums were not chosen: they would double the update's work and protect
against an error (accumulated rounding) that is already below the exact sum's own rounding
here, while they do nothing against the cancellation that the centring removes.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np

from kernels import _jit_lanes, _jit_sliding
from kernels._validate import (
    MIN_TEST_NOBS,
    as_panel,
    check_window,
    parse_autolag,
    resolve_ends,
    resolve_maxlag,
)
from kernels.coint import PairsEG, RollingPairsEG, _pair_index
from kernels.errors import KernelInputError

__all__ = ["SlidingEG", "SlidingStats", "sliding_engle_granger_pairs"]

# windows handled per kernel call: bounds the per-ticker sums kept for the pair pass
_CHUNK = 64
# below this many (window, pair) cells one thread does the work (starting threads costs more)
_PARALLEL_CELLS = 256


class SlidingStats(NamedTuple):
    """How the sums were obtained so far: pair windows recomputed exactly, pair windows slid,
    and resets (new shifts, every sum recomputed: the first window, a refresh, a window that
    moves backwards or changes its lag cap)."""

    exact: int
    slides: int
    resets: int


class SlidingEG:
    """Engle-Granger of every pair i < j of the columns of ``prices2d`` over windows that move
    forward, with sums carried from one window to the next.

    prices2d: (T sessions, N >= 2 series) log prices, NaN allowed (a window holding one gives
    NaN for the pairs it touches). maxlag / autolag: as :func:`kernels.engle_granger` (the
    default cap depends on each window's length). refresh: sessions of movement after which all
    sums are recomputed exactly on re-centred series (default: the window length).

    Call :meth:`window` (one window) or :meth:`windows` (several, in order). Any window may
    be asked for; moving forward is what is fast.
    """

    def __init__(
        self,
        prices2d: np.ndarray,
        *,
        maxlag: int | None = None,
        autolag: str | None = "aic",
        refresh: int | None = None,
    ) -> None:
        panel = as_panel(prices2d, "prices2d")
        self._logp = np.ascontiguousarray(panel.T)
        n_series, n_obs = self._logp.shape
        if n_obs < MIN_TEST_NOBS:
            raise KernelInputError(f"prices2d needs at least {MIN_TEST_NOBS} rows, got {n_obs}")
        if refresh is not None and (isinstance(refresh, bool) or not isinstance(refresh, (int, np.integer))):
            raise KernelInputError(f"refresh must be an int >= 1 or None, got {refresh!r}")
        if refresh is not None and refresh < 1:
            raise KernelInputError(f"refresh must be an int >= 1 or None, got {refresh!r}")
        self._maxlag = maxlag
        self._ic = parse_autolag(autolag)
        self._refresh = None if refresh is None else int(refresh)
        self.i, self.j = _pair_index(n_series)
        finite = np.isfinite(self._logp)
        self._nanpre = np.zeros((n_series, n_obs + 1), dtype=np.int64)
        np.cumsum(~finite, axis=1, out=self._nanpre[:, 1:])
        change = np.zeros((n_series, n_obs), dtype=np.int64)
        change[:, 1:] = self._logp[:, 1:] != self._logp[:, :-1]
        self._chgpre = np.zeros((n_series, n_obs + 1), dtype=np.int64)
        np.cumsum(change, axis=1, out=self._chgpre[:, 1:])
        self._p = -1  # lag cap of the current sums (-1: none yet)
        self._counts = np.zeros((self.i.shape[0], 2), dtype=np.int64)
        self._resets = 0
        self._ops = np.zeros(len(_jit_lanes.OP_NAMES), dtype=np.int64)
        #: 1: regular blocks of pairs eight lanes at a time (the default); 0: lane by lane (the
        #: same numbers, slower: kept to check the two against each other)
        self._vec = 1

    @property
    def n_obs(self) -> int:
        return int(self._logp.shape[1])

    @property
    def stats(self) -> SlidingStats:
        """Exact pair recomputes, pair slides and resets so far."""
        return SlidingStats(int(self._counts[:, 0].sum()), int(self._counts[:, 1].sum()), self._resets)

    @property
    def ops(self) -> dict[str, int]:
        """Floating-point operations performed so far, by kind (:data:`kernels._jit_lanes.OP_NAMES`):
        counted by the kernels from their loops' trip counts (vector operations count every
        lane, used or not), and for the exact starts' matrix products 2 m n k per product."""
        return {name: int(v) for name, v in zip(_jit_lanes.OP_NAMES, self._ops)}

    #: what :meth:`export_state` returns besides the arrays, in this order
    _SCALARS = ("p", "prev_s", "prev_t", "ref_end", "resets")
    _ARRAYS = ("shift", "tstate", "tvalid", "pstate", "pvalid", "counts", "ops")

    def export_state(self) -> dict[str, np.ndarray]:
        """Everything carried from one window to the next (the sums, their validity, the shifts,
        the counts), as arrays that :meth:`import_state` takes back: a screen restored on the same
        panel continues exactly (bit for bit) as this one would. Empty before the first window."""
        if self._p < 0:
            return {}
        out = {name: getattr(self, f"_{name}") for name in self._ARRAYS}
        out["scalars"] = np.array([getattr(self, f"_{name}") for name in self._SCALARS], dtype=np.int64)
        return out

    def import_state(self, state: dict[str, np.ndarray]) -> None:
        """Take back what :meth:`export_state` gave (from a screen of the same panel and settings)."""
        missing = [k for k in (*self._ARRAYS, "scalars") if k not in state]
        if missing:
            raise KernelInputError(f"state lacks {missing}; allowed: the dict export_state returns")
        n_series, n_pairs = self._logp.shape[0], self.i.shape[0]
        pst = state["pstate"]
        held = pst.shape[0] * _jit_sliding.NL if pst.ndim == 3 else pst.shape[0]
        fits = pst.ndim == 3 and n_pairs <= held < n_pairs + _jit_sliding.NL
        if state["shift"].shape != (n_series,) or not fits:
            raise KernelInputError(
                f"state is for {state['shift'].shape[0]} series and pair sums of shape {pst.shape}; "
                f"this screen has {n_series} series and {n_pairs} pairs (pair sums of shape "
                f"({-(-n_pairs // _jit_sliding.NL)}, width, {_jit_sliding.NL}))"
            )
        for name in self._ARRAYS:
            setattr(self, f"_{name}", np.array(state[name], order="C"))  # a copy: never shared
        for name, value in zip(self._SCALARS, state["scalars"].tolist()):
            setattr(self, f"_{name}", int(value))
        self._centre()

    def _centre(self) -> None:
        """z (log prices less the shifts) and dl (its differences), and both transposed."""
        self._z = self._logp - self._shift[:, None]
        self._dl = np.empty_like(self._z)
        self._dl[:, :-1] = self._z[:, 1:] - self._z[:, :-1]
        self._dl[:, -1] = np.nan
        self._zt = np.ascontiguousarray(self._z.T)
        self._dlt = np.ascontiguousarray(self._dl.T)

    def _lag_cap(self, n: int) -> int:
        return resolve_maxlag(self._maxlag, n, 0)

    def window(self, start: int, end: int) -> PairsEG:
        """Every pair over sessions start..end (inclusive indices)."""
        res = self.windows([start], [end])
        return PairsEG(res.i, res.j, res.stat[0], res.pvalue[0], res.lag[0], res.beta[0], res.alpha[0])

    def windows(self, starts: Sequence[int] | np.ndarray, ends: Sequence[int] | np.ndarray) -> RollingPairsEG:
        """Every pair over each window [starts[e], ends[e]], in the order given (fast when both
        bounds never decrease); outputs are (n_windows, n_pairs)."""
        s_arr = np.asarray(starts)
        e_arr = np.asarray(ends)
        for name, arr in (("starts", s_arr), ("ends", e_arr)):
            if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
                raise KernelInputError(f"{name} must be a 1-D sequence of ints, got {arr!r:.80}")
        if s_arr.shape != e_arr.shape:
            raise KernelInputError(
                f"starts and ends must have the same length, got {s_arr.size} and {e_arr.size}"
            )
        s_arr = s_arr.astype(np.int64)
        e_arr = e_arr.astype(np.int64)
        if s_arr.size and (s_arr.min() < 0 or e_arr.max() > self.n_obs - 1):
            raise KernelInputError(
                f"windows must lie in [0, {self.n_obs - 1}], got {s_arr.min()}..{e_arr.max()}"
            )
        short = np.flatnonzero(e_arr - s_arr + 1 < MIN_TEST_NOBS)
        if short.size:
            k = int(short[0])
            raise KernelInputError(
                f"window {k} ([{s_arr[k]}, {e_arr[k]}]) has {e_arr[k] - s_arr[k] + 1} sessions; "
                f"allowed: >= {MIN_TEST_NOBS}"
            )
        caps = np.array([self._lag_cap(int(e - s + 1)) for s, e in zip(s_arr, e_arr)], dtype=np.int64)
        shape = (s_arr.size, self.i.shape[0])
        out = RollingPairsEG(
            e_arr,
            self.i,
            self.j,
            np.empty(shape),
            np.empty(shape),
            np.empty(shape, dtype=np.int64),
            np.empty(shape),
            np.empty(shape),
        )
        lo = 0
        while lo < s_arr.size:
            if self._p != caps[lo] or self._needs_reset(int(s_arr[lo]), int(e_arr[lo])):
                self._reset(int(caps[lo]), int(s_arr[lo]), int(e_arr[lo]))
            hi = lo + 1
            while hi < s_arr.size and hi - lo < _CHUNK and not self._breaks(caps, s_arr, e_arr, hi):
                hi += 1
            self._run(s_arr[lo:hi], e_arr[lo:hi], out, lo)
            lo = hi
        return out

    # -- internals -------------------------------------------------------------------------------
    def _breaks(self, caps: np.ndarray, s: np.ndarray, e: np.ndarray, k: int) -> bool:
        """Whether window k must start a new kernel call (new lag cap, backwards, or refresh due)."""
        if caps[k] != caps[k - 1] or s[k] < s[k - 1] or e[k] < e[k - 1]:
            return True
        return int(e[k]) - self._ref_end >= self._refresh_len(int(e[k] - s[k] + 1))

    def _refresh_len(self, n: int) -> int:
        return self._refresh if self._refresh is not None else n

    def _needs_reset(self, s: int, e: int) -> bool:
        if s < self._prev_s or e < self._prev_t:
            return True
        return e - self._ref_end >= self._refresh_len(e - s + 1)

    def _reset(self, p: int, s: int, e: int) -> None:
        """New shifts (each series' mean over [s, e], 0 where it has no value) and every sum
        recomputed exactly on [s, e] (see :meth:`_exact_sums`)."""
        win = self._logp[:, s : e + 1]
        fin = np.isfinite(win)
        cnt = fin.sum(axis=1)
        shift = np.where(cnt > 0, np.where(fin, win, 0.0).sum(axis=1) / np.maximum(cnt, 1), 0.0)
        self._shift = shift
        self._centre()
        self._p = p
        self._prev_s = s
        self._prev_t = e
        self._ref_end = e
        self._resets += 1
        self._exact_sums(p, s, e)

    def _exact_sums(self, p: int, s: int, e: int) -> None:
        """Every ticker's and pair's sums over [s, e] as matrix products (all pairs at once).

        With Y = the differences over the rows J, V = the levels over J and X_b = the
        differences over J - b (tickers by rows), the pair sums are entries of Y X_b' (S_b at
        [i, k] + [k, i]) and V X_0' (T_0 alike) and a ticker's are their diagonals. Series with
        a NaN in the window enter as zeros and their sums are not valid.
        """
        n_series, n_pairs = self._logp.shape[0], self.i.shape[0]
        ok = (self._nanpre[:, e + 1] - self._nanpre[:, s]) == 0
        z = np.where(ok[:, None], self._z[:, s : e + 1], 0.0)
        dl = np.where(ok[:, None], self._dl[:, s:e], 0.0)
        ii, jj = self.i, self.j
        tst = np.zeros((n_series, _jit_sliding.ticker_width(p)))
        nl = _jit_sliding.NL
        shape = (-(-n_pairs // nl), _jit_sliding.pair_width(p), nl)
        # the pair sums are the screen's memory: refill the array in place, never two at once
        old = getattr(self, "_pstate", None)
        pst = old if old is not None and old.shape == shape else np.zeros(shape)
        col = np.zeros(shape[0] * nl)  # one sum of every pair, in pair order

        def put(b: int, values: np.ndarray) -> None:
            col[:n_pairs] = values
            pst[:, b, :] = col.reshape(shape[0], nl)

        j0 = p  # window positions of the rows J: [p, n - 1)
        resp = np.ascontiguousarray(dl[:, j0:])
        lev = np.ascontiguousarray(z[:, j0:-1])
        rows = resp.shape[1]
        # (p + 1) products of each of the two kinds, one of the levels, one of the window
        blas = 2 * n_series * n_series * (2 * (p + 1) * rows + rows + z.shape[1])
        self._ops[_jit_lanes.OP_NAMES.index("exact_blas")] += blas
        for b in range(p + 1):
            lagd = dl[:, j0 - b : dl.shape[1] - b]
            cross = resp @ lagd.T
            tst[:, b] = np.diagonal(cross)
            put(b, cross[ii, jj] + cross[jj, ii])
            cross = lev @ lagd.T
            tst[:, p + 1 + b] = np.diagonal(cross)
            if b == 0:
                put(p + 1, cross[ii, jj] + cross[jj, ii])
            tst[:, 2 * p + 2 + b] = lagd.sum(axis=1)
        cross = lev @ lev.T
        put(p + 2, cross[ii, jj])
        tst[:, 3 * p + 3] = lev.sum(axis=1)
        tst[:, 3 * p + 4] = np.diagonal(cross)
        cross = z @ z.T
        put(p + 3, cross[ii, jj])
        tst[:, 3 * p + 5] = z.sum(axis=1)
        tst[:, 3 * p + 6] = np.diagonal(cross)
        self._tstate = tst
        self._tvalid = ok.astype(np.int8)
        self._pstate = pst
        self._pvalid = (ok[ii] & ok[jj]).astype(np.int8)
        self._counts[:, 0] += self._pvalid

    def _run(self, s: np.ndarray, e: np.ndarray, out: RollingPairsEG, row: int) -> None:
        p = self._p
        n_series = self._logp.shape[0]
        n_win = s.size
        tsums = np.empty((n_win, _jit_sliding.ticker_width(p), n_series))
        tfin = np.empty((n_series, n_win), dtype=np.int8)
        tconst = np.empty((n_series, n_win), dtype=np.int8)
        _jit_sliding.ticker_pass(
            self._z, self._dl, self._nanpre, self._chgpre, s, e, p, self._prev_s, self._prev_t,
            self._tstate, self._tvalid, tsums, tfin, tconst, self._ops,
        )  # fmt: skip
        rows = slice(row, row + n_win)
        args = (
            self._z, self._dl, self._zt, self._dlt, self.i, self.j, self._shift, s, e, p, self._ic,
            self._prev_s, self._prev_t,
            tsums, tfin, tconst, self._pstate, self._pvalid, self._counts,
            out.stat[rows], out.pvalue[rows], out.lag[rows], out.beta[rows], out.alpha[rows],
        )  # fmt: skip
        n_blocks = -(-self.i.shape[0] // _jit_sliding.NL)
        workers = min(numba.get_num_threads(), n_blocks) if n_win * self.i.shape[0] >= _PARALLEL_CELLS else 1
        if numba.config.DISABLE_JIT:  # the plain-Python twin of the atomic counter is not atomic
            workers = 1
        # a few blocks per grab: the shared counter stays cold while the last thread to finish
        # waits at most a few blocks for the others
        grain = int(max(1, min(8, n_blocks // (workers * 32))))
        counter = np.zeros(1, dtype=np.int64)
        ops = np.zeros((workers, self._ops.size), dtype=np.int64)  # one row per thread
        if workers == 1:
            _jit_sliding.pair_pass(*args, counter, grain, ops[0], self._vec)
        else:
            with ThreadPoolExecutor(workers) as pool:
                for job in [
                    pool.submit(_jit_sliding.pair_pass, *args, counter, grain, ops[w], self._vec)
                    for w in range(workers)
                ]:
                    job.result()
        self._ops += ops.sum(axis=0)
        self._prev_s = int(s[-1])
        self._prev_t = int(e[-1])


def sliding_engle_granger_pairs(
    prices2d: np.ndarray,
    window: int,
    *,
    ends: np.ndarray | None = None,
    maxlag: int | None = None,
    autolag: str | None = "aic",
    refresh: int | None = None,
) -> RollingPairsEG:
    """Engle-Granger of every pair i < j over rolling windows, sums slid from date to date.

    The contract of :func:`kernels.rolling_engle_granger_pairs` (prices2d (T, N) log prices,
    NaN allowed; window >= 30 sessions; ends: inclusive window ends, default all >= window - 1),
    computed incrementally: fast when ``ends`` are close together and increasing (any order is
    accepted; the windows are visited in increasing order). refresh: see :class:`SlidingEG`.
    """
    panel = as_panel(prices2d, "prices2d")
    n_obs = panel.shape[0]
    w = check_window(window, "window", MIN_TEST_NOBS, n_obs)
    end = resolve_ends(ends, w, n_obs)
    resolve_maxlag(maxlag, w, 0)  # validates an explicit cap against the window
    order = np.argsort(end, kind="stable")
    screen = SlidingEG(panel, maxlag=maxlag, autolag=autolag, refresh=refresh)
    res = screen.windows(end[order] - w + 1, end[order])
    if np.all(order == np.arange(order.size)):
        return RollingPairsEG(end, res.i, res.j, res.stat, res.pvalue, res.lag, res.beta, res.alpha)
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    return RollingPairsEG(
        end, res.i, res.j, res.stat[back], res.pvalue[back], res.lag[back], res.beta[back], res.alpha[back]
    )
