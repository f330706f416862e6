"""The rigid formulation's pushing step compiled with numba: every mode, every push, no graph.

:mod:`physid.pushing.rigid_engine` states the step (the line solve of the convex
piecewise-quadratic ``g(ω)``, the sticking, sliding and locked contact point, the free object).
In torch, vectorised over the batch, a step was bound by per-operator overhead: about 970
operators per step (97,116 per 100-step push under ``torch.profiler``), each a few
microseconds of dispatch for a few flops, while the arithmetic of a sticking step on 88 cells
(a sort of the kinks, a cumulative sum, a few length-88 sums) is a few microseconds; mixed
modes split the batch into sub-batches, and the sliding root search evaluated 16 doubling
steps and then 21 samples per round for every sliding push at once.

What was measured (one 1 s push, one thread, ``benchmarks/pushing.py``): the torch step took
90 ms on the 88-cell block (sticking only) and 0.5 s on the 10- and 24-cell blocks (sliding and
locking); this module takes about 1 ms and 1–3 ms. It loops over pushes and steps with
numba's ``@njit`` and work arrays made once per rollout, and it searches the sliding root by
walking the pieces of the cone condition, one evaluation per piece (``_slide_root``),
instead of sampling. ``torch.compile`` was not tried: the step's control depends on the data
(the mode, the number of pieces walked), which is what a compiled loop does well.

A walk crosses many pieces (about 58 per sliding step of the hammer with the paper's 4
directions, thousands with 64), and each piece's line solve sorted all ``kL`` kinks. Since ω is
continuous in the slip, the end of the last piece is a guess a kink or two from the next
minimum: the line solve hops from it across those kinks, one pass over the lines per hop,
and sorts only when the guess is more than ``_HOPS`` kinks away (``_line_hops``); a
stick starts from the previous step's ω the same way. Measured on the 88-cell hammer, one
line solve: 4.5 → 2.0 µs with 4 directions, 140 → 17 µs with 64; the sliding batch of the
benchmark 0.22 → 0.13 s; results equal to 1e-15 m. Trying only the two sides of each cell's
sector for the next event (instead of every switch) was slower, and was left out. With cheap
pieces the walk's cap is 20,000 pieces: at 1,000, 64-direction slides went to the
interior-point LCP (which agrees with the walk to 3e-7 m, and took three times as long).

Still, a walk of about 43 events, each a few O(kL) passes (the next crossing over every cell
and switch, the line solve, the impulse's sums), made a sliding step cost 40 sticking ones:
the benchmark's sliding batch took 20× its sticking batch. Within a step, every cell's
velocity is ``closing·n + s·t + ω·lever_i``, so the cells cross switch ``j`` on the lines
``α_j + β_j s + γ_ij ω = 0`` of one pencil, in the order of ``γ_ij``, a constant of the
step (``_pencils``; nearly the last step's order, so sorted by insertion). The walk by
the pencils (``_pencil_walk``) finds each next crossing from the rank of the crossing point
``γ*`` in each switch's order (moved from the last event's rank; a switch no cell's line is
beside, by a count per line, is passed) and updates ω, the kink's share and the finger's
impulse from running sums, in O(L) an event but for the cells the scan passes; where the
line solve's choice among tied cells decides the root (the first
contact of a push from rest, when the grid's rows lie on the diagonals of the paper's D), it
leaves the search to the piece-by-piece walk, and :func:`run` counts both. Measured on the
hammer's 16 random pushes (one thread): one search 240–300 µs → 19–45 µs; the sliding
batch 205 → about 40 ms (sliding/sticking 20× → 4×); 16 pushes with 64 directions 54 s →
6.3 s; results equal to 1e-15 m on 96 pushes of three objects with the paper's D, and
with 16 directions to 8e-9 m (one push, where a root lay inside a piece 1e-10 long that the
piece-by-piece walk's sample 1e-11 past each end stepped over). The walk's helpers take
scalars, and its scan is written out in its loop: a jitted call that passes arrays pays
their reference counts, 110 ns for a call with seven arrays against 6 ns with scalars.
Counted on that batch: about 41 events a search, and the scan visited 2,810 cells a search,
half of them on switches no cell's line was beside (now passed: the batch's contact steps
7 % faster; the rank from the last event's instead of a binary search was within the
noise). A visit costs about 2 ns; the rest of an event, about 0.35 µs, is its branches and
divisions, and the two line solves of a sliding step (the stick test's and the root's that
the tape records) about 4.5 µs each: a sliding step about 30 µs against a sticking step's
5–6 µs. The root's line solve now starts from the walk's own ω at the root (the hops of
``_line_hops``, which end in the sorted search's answer): the benchmark's sliding batch
gives the same trajectories to the bit, and its cost against the sticking batch went from
3.08× to 2.94× in one interleaved run of 15 rounds (a noisy machine).

Then the step stopped making line solves the walk had already made: a slide or lock the
pencils found takes its root's piece from the walk (ω, the slopes of ``f`` and ω, the kink
cell and each cell's line: the line solve's at that slip, which a test checks at every root
of random pushes), so no line solve is made at the root (it cost a slide 3.4 µs and a lock
9.6 µs in replay); and the stick test after a slide starts from the last stick test's ω, not
the slide's (9.6 → 7.1 µs a stick test in one replay). The helpers called once per cell or per event
are inlined (``_inline``: 9.6 % off a slide or lock step in replay, and as much off a stick),
and the scan's second side, which only looks for cells on the switch already, is passed where
the cell nearest γ* behind it cannot lie within ``near`` (7.5 %). The same trajectories (to
1.4e-16 m on the benchmark's sliding batch). In ``benchmarks/pushing.py`` the sliding batch
against the sticking one went from 3.50× to 2.50× (the target is 2×). Where the rest goes,
sampled under ``perf`` in the benchmark's own loop (a perf map of this module's functions in
the rollout's library): per call of the sliding batch, the walk's event loop about 10 ms, the
stick tests' line solves (``_line_hops``) 3.5 ms against the sticking batch's 4.2 ms, the
fall-backs that sort every kink 1.3 ms, the pencils' sort 1.1 ms, the reference counts of
calls that pass arrays 1.3 ms; in the event loop, the scan's two sides about equally (the
visits' dependent loads of ``order`` then ``line``, one division a switch). Tried and left
out, for no gain: a flag per rank for the cells beside each switch (0.7 % in replay, slower
in the rollout), the opposite switches' pencils by reversal (0.8 %), dividing only for a
crossing that might be the next event, more hops before sorting, and the line solve inlined
too (1 % for twice the compile time). The target seemed to need fewer events, a search that
skips pieces (the condition is not monotone in the slip, so it cannot bisect); see below.

Measured again, the rollout alone (:func:`run` on the benchmark's two batches, interleaved
with an unchanged copy, the trajectories equal to the bit): the sliding batch costs 2.8–2.9
times the sticking one (14–15 against 5 ms), which the call's fixed costs (checks, arrays,
the record) bring to 2.52 (2.43–2.61) in ``benchmarks/pushing.py``. A search costs about 10 µs
beyond its stick test: its events (43 in the median search, 41 on average, no long tail)
about 7.5 µs, the sorted line solves 2 µs (338 a call: 168 full line solves in the walk,
151 of them at a cell whose velocity is zero there, all its lines tied, which the hops leave
to the sort; 135 in the 8 searches left to the piece-by-piece walk, whose samples fall on
tied cells), the pencils 0.8 µs. Tried and left out: the walk's work arrays made once per
rollout instead of once per search (within the noise), the walk and the pencils inlined (no
change), lists that skip the cells whose line is not beside a switch (the scan visits 21
cells an event and passes 16 of them; 2.5 % slower with their upkeep), the second side's
check passing the kink cell (no change), and the sorted line solve's order kept between
calls and sorted by insertion (3.5 % slower: 158 of the 338 calls found the last order too
far and merge-sorted anyway). Without the second side the batch's trajectories are the same
and 4 % faster, but it is what finds a cell already on a switch.

What reached the target was not a search with fewer events but cheaper events and fewer
sorts, three changes measured one after another against the unchanged module (10
interleaved rounds of the rollout; the sliding batch's trajectories equal to 1.1e-16 m, the
chapter's objects' (six pushes of each of five) to 1e-12 m and their slips to 3e-12):

- *One pencil per line of D.* A switch and the switch on the other ray of its line (D's
  directions come in opposite pairs when their number is even) have the same crossings:
  their ``α``, ``β`` and ``γ`` differ in sign only. Every cell's line is beside one of the
  two rays (with the paper's four directions; a quarter of them with 16), so scanning the
  line's one pencil, each cell taken to the ray its line is beside, passes no cell where the
  scan by switch had passed 16 of the 21 it visited an event, and it makes half the per-switch
  work and sorts half the pencils: the sliding batch 15.2 → 11.7 ms.
- *The sorted line solve about the point where the hops stopped* (``_line_window``).
  They stop where several kinks lie at one point (a cell whose velocity is zero there, two
  cells tied); sorting only the kinks within ``_WIDTH`` (1e-7 of 1 + |ω|) of it, with the
  jumps of those below added to the slope and the sorted search's own test at the kinks on
  either side confirming that the minimum lies among them, gives the piece that sorting all
  ``kL`` kinks gives (a test compares them on clusters of kinks; where it cannot confirm,
  everything is sorted): 11.7 → 11.2 ms.
- *The kink cell's velocity through zero inside the walk* (``_zero_velocity``). Past the
  zero its lines of D meet about one ω; the minimum among its own kinks there, every other
  cell's line kept, is the line solve's (a test compares them), where ω moves from the walk's
  no faster than the steepest of the cell's switches allows (else the full line solve, as
  before): of the walk's 172 full line solves a call, 151 were these, now 21 are left:
  11.2 → 10.5 ms.

The rollout alone: the sliding batch 15.3 → 10.5 ms against the sticking batch's 5.3 (2.87 →
1.98 times); in ``benchmarks/pushing.py`` 2.52 → 1.79 times (1.75–1.82).

Uses: :func:`run` is the whole rollout of pushes that need no gradient
(:func:`physid.pushing.rigid_engine.compiled_rollout`) and, taping each step's decisions, of
pushes whose gradient the compiled adjoint computes
(:func:`physid.pushing.rigid_engine.adjoint_rollout`, :mod:`physid.pushing.rigid_adjoint`);
:func:`classify` is the step's mode, slip and twist for the torch path, which recomputes the
step differentiably from them (:func:`physid.pushing.rigid_engine.torch_rollout`). So all
paths take the same decisions.

Two cases are not compiled: a free slide of a moving object with a cell exactly on a switch of
D (its objective is not smooth there; ``_free_slide`` solves every other free slide and
``_stops`` decides when friction stops the object) and the coupled fallback. For those
:func:`run` stops that push at that step, the torch step solves it
(``physid.pushing.rigid_engine._contact_step``), and the kernel goes on from its result.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from physid.core.linalg import solve_in_place

__all__ = ["COUPLED", "FREE", "LCP_FREE", "LOCK", "SLIDE", "STICK", "classify",
           "mass_matrix_inverse", "nearest_face", "run"]

#: The modes of :mod:`physid.pushing.finger` (literals for the compiled code; a test keeps them
#: equal), and the free slide this kernel leaves to the interior-point LCP.
FREE, STICK, SLIDE, LOCK, COUPLED = 0, 1, 2, 3, 4
LCP_FREE = 5

#: Pieces of the sliding condition a root search may cross (:func:`_slide_root`).
_PIECES = 20000

_jit = numba.njit(cache=True, fastmath=False, nogil=True)
#: For the small helpers called once per cell or per event: numba does not inline one jitted
#: function into another, and a call that passes arrays pays their reference counts (the
#: slide and lock steps of the hammer's random pushes 9.6 % faster with these three inlined;
#: inlining the line solve too gained 1 % for twice the compile time).
_inline = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")


@_jit
def _line_solve(a, lin, c, p, q, tol, kinks, jumps, where, line, guess):
    """:func:`physid.pushing.rigid_engine.line_solve` for one push: ``ω``, the optimality
    check, and the subgradient as ``line (k,)`` (each cell's line) plus the kink cell (−1 when
    ω is not at a kink), its first line and its share of it.

    The piece holding the minimum is found from ``guess`` by :func:`_line_hops` when
    ``guess`` is finite and lies a few kinks from it, else by sorting the kinks
    (:func:`_line_sorted`, only those about the point where the hops stopped when that
    window holds the minimum); both end in :func:`_line_finish`, so they give the same
    ``ω``."""
    near = math.nan
    if math.isfinite(guess):
        found, at_kink, value, kc, kp = _line_hops(a, lin, c, p, q, tol, guess, line)
        if found:
            return _line_finish(a, lin, c, p, q, tol, at_kink, value, kc, kp, line, True)
        near = value
    at_kink, value, kc, kp = _line_sorted(a, lin, c, p, q, kinks, jumps, where, near)
    return _line_finish(a, lin, c, p, q, tol, at_kink, value, kc, kp, line, False)


@_jit
def _envelope_kinks(c, p, q, kinks, jumps, where):
    """The kinks of ``g`` in enumeration order (cell, then line): each cell's kinks on its
    envelope (the lines ``j`` and ``j+1`` meeting above 0), with the jump of ``g'`` there and
    ``cell·L + j`` in ``kinks``, ``jumps``, ``where``; returns ``g'``'s slope left of every
    kink (``Σ c_i min_j q_ij``) and how many kinks there are."""
    k, n_lines = q.shape
    base = 0.0
    n_finite = 0
    for i in range(k):
        qmax = 0.0
        qmin = math.inf
        for j in range(n_lines):
            qmax = max(qmax, abs(q[i, j]))
            qmin = min(qmin, q[i, j])
        base += c[i] * qmin
        for j in range(n_lines):
            jn = (j + 1) % n_lines
            dq = q[i, j] - q[i, jn]
            kink = math.inf
            jump = 0.0
            if abs(dq) > 1e-14 * qmax:
                at = (p[jn] - p[j]) / dq
                if p[j] + q[i, j] * at > 0:
                    kink = at
                    jump = c[i] * abs(dq)
            if kink < math.inf:
                kinks[n_finite] = kink
                jumps[n_finite] = jump
                where[n_finite] = i * n_lines + j
                n_finite += 1
    return base, n_finite


@_jit
def _line_sorted(a, lin, c, p, q, kinks, jumps, where, near):
    """The piece of ``g`` holding its minimum, from all kinks sorted: whether the minimum is
    at a kink, the kink or the smooth piece's root, and the kink's cell and first line.
    Where ``near`` is finite (the point where :func:`_line_hops` stopped) and the minimum
    lies among the kinks about it, only those are sorted (:func:`_line_window`)."""
    n_lines = q.shape[1]
    base, n_finite = _envelope_kinks(c, p, q, kinks, jumps, where)
    if math.isfinite(near):
        done, at_kink, value, kc, kp = _line_window(a, lin, base, kinks, jumps, where,
                                                    n_finite, near, n_lines)
        if done:
            return at_kink, value, kc, kp
    # Only the kinks on an envelope count: sorted (stably), the rest lie at +inf.
    order = np.argsort(kinks[:n_finite], kind="mergesort")
    n_below, slope_piece, _ = _below(a, lin, base, kinks, jumps, order, n_finite)
    kink_above = kinks[order[n_below]] if n_below < n_finite else math.inf
    flat = where[order[n_below]] if n_below < n_finite else 0
    smooth = -(lin + slope_piece) / a
    at_kink = kink_above <= smooth
    return at_kink, kink_above if at_kink else smooth, flat // n_lines, flat % n_lines


#: Kinks :func:`_line_window` sorts at most, and its half-width relative to ``1 + |near|``.
_WINDOW = 64
_WIDTH = 1e-7


@_inline
def _below(a, lin, slope, kinks, jumps, order, count):
    """The sorted search's pass over the kinks ``kinks[order[:count]]`` (ascending), from
    ``g'``'s slope ``slope`` left of them: how many lie left of the minimum (up to the last
    with ``g'(κ+) < 0``), the slope of the piece after those and the slope after all."""
    n_below = 0
    slope_piece = slope
    for r in range(count):
        slope += jumps[order[r]]
        if a * kinks[order[r]] + lin + slope < 0:
            n_below = r + 1
            slope_piece = slope
    return n_below, slope_piece, slope


@_jit
def _line_window(a, lin, base, kinks, jumps, where, n_finite, near, n_lines):
    """:func:`_line_sorted`'s search among the kinks within :data:`_WIDTH` of ``near`` only:
    where the hops stop, several kinks lie at one point (a cell whose velocity is zero there,
    or two cells tied), and sorting those few instead of all ``kL`` gives the same piece when
    the minimum lies among them. The kinks below the window add their jumps to the slope, and
    the checks of the sorted search at the kinks on either side of the window (``g'`` just
    after the one below it negative, just after the one above it not) confirm that; else it
    returns False (and the caller sorts every kink)."""
    width = _WIDTH * (1.0 + abs(near))
    lo = near - width
    hi = near + width
    inside = np.empty(_WINDOW, np.int64)
    n_in = 0
    below = 0.0
    prev = -math.inf
    above = -1
    for r in range(n_finite):
        kink = kinks[r]
        if kink < lo:
            below += jumps[r]
            prev = max(prev, kink)
        elif kink > hi:
            if above < 0 or kink < kinks[above]:
                above = r
        else:
            if n_in == _WINDOW:
                return False, False, 0.0, 0, 0
            # Insertion, stable: equal kinks keep the enumeration order, as the merge sort.
            t = n_in
            while t > 0 and kinks[inside[t - 1]] > kink:
                inside[t] = inside[t - 1]
                t -= 1
            inside[t] = r
            n_in += 1
    slope = base + below
    if prev > -math.inf and not a * prev + lin + slope < 0:
        return False, False, 0.0, 0, 0  # the minimum lies below the window
    n_below, slope_piece, slope = _below(a, lin, slope, kinks, jumps, inside, n_in)
    if above >= 0 and a * kinks[above] + lin + slope + jumps[above] < 0:
        return False, False, 0.0, 0, 0  # the minimum lies above the window
    if n_below < n_in:
        kink_above, flat = kinks[inside[n_below]], where[inside[n_below]]
    elif above >= 0:
        kink_above, flat = kinks[above], where[above]
    else:
        kink_above, flat = math.inf, 0
    smooth = -(lin + slope_piece) / a
    at_kink = kink_above <= smooth
    return True, at_kink, kink_above if at_kink else smooth, flat // n_lines, flat % n_lines


#: Kinks :func:`_line_hops` may cross from its guess before the sorted search takes over.
_HOPS = 4


@_jit
def _line_hops(a, lin, c, p, q, tol, guess, line):
    """:func:`_line_sorted` from a nearby ``guess`` without sorting: at each point, the
    one-sided derivatives ``g'(ω±)`` (each cell's tied lines within the check's tolerance);
    if both are on the same side of 0, the root of the next piece that way or the next kink of
    the envelope (the first line of larger, or smaller, slope to overtake), at most
    :data:`_HOPS` kinks. ``line`` holds each cell's tied lines meanwhile. Returns whether it
    found the piece, then as :func:`_line_sorted`."""
    k, n_lines = q.shape
    pmax = 0.0
    for j in range(n_lines):
        pmax = max(pmax, abs(p[j]))
    w = guess
    for _ in range(_HOPS + 1):
        sum_left = sum_right = 0.0
        tied = -1
        tied_low = tied_high = 0
        for i in range(k):
            low, high, _ = _tied(p, q, i, w, tol, pmax)
            line[i] = low * n_lines + high
            if low != high and c[i] > 0:
                if tied >= 0:
                    return False, False, w, 0, 0  # two cells at a kink: sort
                tied, tied_low, tied_high = i, low, high
            sum_left += c[i] * q[i, low]
            sum_right += c[i] * q[i, high]
        g_left = a * w + lin + sum_left
        g_right = a * w + lin + sum_right
        right = g_right < 0
        total = sum_right if right else sum_left
        smooth = -(lin + total) / a
        # At the minimum, or the next piece's root within rounding of this point (then a kink
        # here is the minimum: a root there would leave the tied cell's line ambiguous).
        stay = abs(smooth - w) <= 1e-12 * (1.0 + abs(w))
        if g_left <= 0 <= g_right or (g_left > 0 and g_right < 0) or (tied >= 0 and stay):
            if tied < 0:
                _keep(line, n_lines, True)
                return True, False, -(lin + sum_right) / a, 0, 0
            if tied_high == (tied_low + 1) % n_lines:
                _keep(line, n_lines, True)
                return True, True, w, tied, tied_low
            if tied_low == (tied_high + 1) % n_lines:
                _keep(line, n_lines, True)
                return True, True, w, tied, tied_high
            return False, False, w, 0, 0  # not neighbours: the degenerate case, sort
        # The next kink of the envelope that way: the nearest overtaking line of each cell.
        nearest = math.inf if right else -math.inf
        for i in range(k):
            best = line[i] % n_lines if right else line[i] // n_lines
            for j in range(n_lines):
                dq = q[i, j] - q[i, best]
                if (dq > 0) if right else (dq < 0):
                    at = (p[best] - p[j]) / dq
                    if (w < at < nearest) if right else (nearest < at < w):
                        nearest = at
        if (smooth < nearest) if right else (smooth > nearest):
            _keep(line, n_lines, right)
            return True, False, smooth, 0, 0
        w = nearest
    return False, False, w, 0, 0


@_inline
def _tied(p, q, i, w, tol, pmax):
    """The lines of cell ``i`` that attain its envelope at ``w`` (to the tolerance ``tol`` of
    the optimality check): the one of least slope, the one of largest (they differ only at a
    kink), and the largest ``|q_ij|``."""
    n_lines = q.shape[1]
    vmax = -math.inf
    qmax = 0.0
    for j in range(n_lines):
        vmax = max(vmax, p[j] + q[i, j] * w)
        qmax = max(qmax, abs(q[i, j]))
    bar = vmax - tol * (pmax + qmax * abs(w))
    low = high = -1
    for j in range(n_lines):
        if p[j] + q[i, j] * w >= bar:
            if low < 0 or q[i, j] < q[i, low]:
                low = j
            if high < 0 or q[i, j] > q[i, high]:
                high = j
    return low, high, qmax


@_jit
def _keep(line, n_lines, high):
    """Each cell's line of :func:`_line_hops`'s piece from the tied pair it holds: the one of
    larger slope (``high``, the piece to the right) or of smaller."""
    for i in range(line.shape[0]):
        line[i] = line[i] % n_lines if high else line[i] // n_lines


@_jit
def _line_finish(a, lin, c, p, q, tol, at_kink, guess, kc, kp, line, known):
    """``ω`` on the piece :func:`_line_sorted` or :func:`_line_hops` found (the kink
    ``guess``, or the root of the smooth piece about ``guess``), each cell's line there (given
    when ``known``: the hops found them and checked optimality), the optimality check
    ``g'(ω−) ≤ 0 ≤ g'(ω+)`` and the kink cell's share."""
    k, n_lines = q.shape
    total = 0.0
    for i in range(k):
        if not known:
            best = 0
            value = p[0] + q[i, 0] * guess
            for j in range(1, n_lines):
                v = p[j] + q[i, j] * guess
                if v > value:
                    value = v
                    best = j
            line[i] = best
        total += c[i] * q[i, line[i]]
    nxt = (kp + 1) % n_lines
    denom = q[kc, kp] - q[kc, nxt]
    if at_kink:
        omega = (p[nxt] - p[kp]) / denom
    else:
        omega = -(lin + total) / a
    if known:
        return omega, math.isfinite(omega), kc if at_kink else -1, kp, _share(
            a, lin, c, q, at_kink, omega, total, kc, kp, line)
    # Optimality: g'(ω−) ≤ 0 ≤ g'(ω+), the ties to tol.
    pmax = 0.0
    for j in range(n_lines):
        pmax = max(pmax, abs(p[j]))
    left = 0.0
    right = 0.0
    size = abs(a * omega) + abs(lin)
    for i in range(k):
        low, high, qmax = _tied(p, q, i, omega, tol, pmax)
        size += c[i] * qmax
        right += c[i] * q[i, high]
        left += c[i] * q[i, low]
    g_left = a * omega + lin + left
    g_right = a * omega + lin + right
    ok = (g_left <= 1e-8 * size) and (g_right >= -1e-8 * size) and math.isfinite(omega)
    share = _share(a, lin, c, q, at_kink, omega, total, kc, kp, line)
    return omega, ok, kc if at_kink else -1, kp, share


@_jit
def _share(a, lin, c, q, at_kink, omega, total, kc, kp, line):
    """The kink cell's share of its first line ``kp`` that balances ``g'(ω) = 0`` (0 off a
    kink; ``total`` is ``Σ_i c_i q_i,line_i``)."""
    if not at_kink:
        return 0.0
    c_kink = c[kc]
    if c_kink <= 0:
        return 0.5
    nxt = (kp + 1) % q.shape[1]
    others = total - c_kink * q[kc, line[kc]]
    share = -(a * omega + lin + others + c_kink * q[kc, nxt]) / (c_kink * (q[kc, kp] - q[kc, nxt]))
    return min(max(share, 0.0), 1.0)


# The contact's scalars, packed: the contact point's offset from the origin (2), the world normal
# into the object (2), the closing normal velocity, the previous ω, the finger's velocity (2).
_AX, _AY, _NX, _NY, _CLOSING, _OMEGA, _UX, _UY = range(8)


@_jit
def _move(s, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks, jumps,
          where, line, guess, fresh):
    """:meth:`physid.pushing.rigid_engine._Contact.move` for one push whose contact is ``ct``:
    ω, the origin's velocity (x, y), the check, the finger's impulse ``p_n``, ``p_t``, their
    slopes and ω's in the slip, the kink cell's share and its slope, and the line solver's
    kink cell (−1 off a kink) and first line
    (``guess``: a nearby ω to start the line solve from, NaN for none). What does not depend
    on the slip ``s`` (the arms from the contact point, ``q``, ``a`` and the spin, kept in
    ``rel``'s last row) is computed when ``fresh``, else taken from the last call."""
    k = masses.shape[0]
    n_lines = dirs.shape[0]
    nx, ny = ct[_NX], ct[_NY]
    tx, ty = -ny, nx
    target_x = ct[_CLOSING] * nx + s * tx
    target_y = ct[_CLOSING] * ny + s * ty
    if fresh:
        a = 0.0
        spin = 0.0
        for i in range(k):
            rx = arms[i, 0] - ct[_AX]
            ry = arms[i, 1] - ct[_AY]
            rel[i, 0] = rx
            rel[i, 1] = ry
            a += inertia[i] + masses[i] * (rx * rx + ry * ry)
            spin += inertia[i] * ct[_OMEGA]
            for j in range(n_lines):
                q[i, j] = -rx * dirs[j, 1] + ry * dirs[j, 0]  # rel_i · (ẑ × d_j)
        rel[k, 0], rel[k, 1] = a, spin
    a, spin = rel[k, 0], rel[k, 1]
    lin = 0.0
    for i in range(k):
        lin += masses[i] * (rel[i, 0] * (target_y - cell_vel[i, 1])
                            - rel[i, 1] * (target_x - cell_vel[i, 0]))
    lin -= spin
    for j in range(n_lines):
        p[j] = -(target_x * dirs[j, 0] + target_y * dirs[j, 1])
    omega, ok, kc, kp, share = _line_solve(a, lin, bound, p, q, tol, kinks, jumps, where, line,
                                           guess)
    vx, vy = _origin_velocity(ct, s, omega)
    gx = gy = fx = fy = 0.0
    total = lever_x = lever_y = dlin = 0.0
    for i in range(k):
        gx += masses[i] * (target_x - omega * rel[i, 1] - cell_vel[i, 0])
        gy += masses[i] * (target_y + omega * rel[i, 0] - cell_vel[i, 1])
        total += masses[i]
        lever_x -= masses[i] * rel[i, 1]
        lever_y += masses[i] * rel[i, 0]
        dlin += masses[i] * (rel[i, 0] * ty - rel[i, 1] * tx)
        if i == kc:
            nxt = (kp + 1) % n_lines
            fx += bound[i] * (share * dirs[kp, 0] + (1.0 - share) * dirs[nxt, 0])
            fy += bound[i] * (share * dirs[kp, 1] + (1.0 - share) * dirs[nxt, 1])
        else:
            fx += bound[i] * dirs[line[i], 0]
            fy += bound[i] * dirs[line[i], 1]
    ix = gx - fx
    iy = gy - fy
    # The derivative in the slip on this piece of the line solver (ω, hence the impulse, is
    # linear in s there): the smooth piece's root or the kink, whose share moves with s.
    dx = dy = dshare = 0.0
    if kc >= 0:
        nxt = (kp + 1) % n_lines
        denom = q[kc, kp] - q[kc, nxt]
        domega = (tx * (dirs[kp, 0] - dirs[nxt, 0]) + ty * (dirs[kp, 1] - dirs[nxt, 1])) / denom
        if bound[kc] > 0 and 0.0 < share < 1.0:
            dshare = -(a * domega + dlin) / (bound[kc] * denom)
            dx = bound[kc] * dshare * (dirs[kp, 0] - dirs[nxt, 0])
            dy = bound[kc] * dshare * (dirs[kp, 1] - dirs[nxt, 1])
    else:
        domega = -dlin / a
    gx_s = total * tx + domega * lever_x - dx
    gy_s = total * ty + domega * lever_y - dy
    return (omega, vx, vy, ok, ix * nx + iy * ny, ix * tx + iy * ty, gx_s * nx + gy_s * ny,
            gx_s * tx + gy_s * ty, domega, share, dshare, kc, kp)


@_inline
def _origin_velocity(ct, s, omega):
    """The origin's velocity when the contact point moves at ``closing·n + s·t`` and the object
    turns at ``omega`` (``ct`` the contact's scalars)."""
    nx, ny = ct[_NX], ct[_NY]
    return (ct[_CLOSING] * nx + s * -ny + omega * ct[_AY],
            ct[_CLOSING] * ny + s * nx - omega * ct[_AX])


@_jit
def _next_event(s0, w0, slope, toward, arms, ct, dirs):
    """The first slip after ``s0`` in the direction of ``toward`` at which a cell's velocity
    crosses a switch of D (its friction changes direction), with ω following the line solver's
    piece at ``s0``: ``ω = w0 + slope (s − s0)``, so every cell's velocity is linear in ``s``
    and each crossing is the root of a linear function; NaN if none lies between ``s0`` and
    ``toward``."""
    n_lines = dirs.shape[0]
    nx, ny = ct[_NX], ct[_NY]
    tx, ty = -ny, nx
    direction = 1.0 if toward > s0 else -1.0
    span = abs(toward - s0)
    best = math.inf
    for i in range(arms.shape[0]):
        lx = -(arms[i, 1] - ct[_AY])
        ly = arms[i, 0] - ct[_AX]
        # The cell's velocity at s0 and its rate of change with s.
        bx = ct[_CLOSING] * nx + s0 * tx + w0 * lx
        by = ct[_CLOSING] * ny + s0 * ty + w0 * ly
        rx = tx + slope * lx
        ry = ty + slope * ly
        for j in range(n_lines):
            jn = (j + 1) % n_lines
            sx = dirs[j, 0] - dirs[jn, 0]
            sy = dirs[j, 1] - dirs[jn, 1]
            den = rx * sx + ry * sy
            if abs(den) > 1e-14:
                ahead = -(bx * sx + by * sy) / den * direction
                if 1e-13 * (1.0 + abs(s0)) < ahead < min(best, span):
                    best = ahead
    return s0 + direction * best if best < math.inf else math.nan


@_jit
def _slide_root(sign, s_a, w_a, f_a, n_a, d_a, e_a, o_a, h_a, dh_a, mu, slack, masses, inertia,
                bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks, jumps, where, line):
    """The sliding contact point's tangential velocity: the first root, from the finger's own
    slip ``s_a`` in the direction ``−σ`` that lowers ``σf``, of ``f(s) = p_t(s) − σ μ p_n(s)``
    (the finger's impulse on the edge ``σ`` of its friction cone).

    ``f`` is linear on each piece of the line solver (ω is) and jumps where a cell's friction
    switches between two directions of D. :func:`_move` gives, on a sample's piece, the
    slopes of ``f``, ``p_n`` and ω (``d``, ``e``, ``o``; ``f_a``, ``n_a`` and ``w_a`` at
    ``s_a``) and, on a kink, the kink cell's share ``h`` and its slope ``dh``; the piece ends
    where a cell's velocity crosses a switch (:func:`_next_event`) or the share reaches 0 or
    1. So the search walks the pieces in order: on each, the root of its line if it lies before
    the piece ends, else the first point of the next piece (one evaluation per piece). A piece
    that ends with ``σf > 0`` followed by one that starts with ``σf ≤ 0`` is a jump across
    zero: the motion *locks* that cell's velocity on the switch, and the normal impulse is
    interpolated between the two sides where ``f`` crosses zero. The condition can have several
    roots (a non-monotone ``f``); the first, the least slip, is the step's. Should a piece's
    line miss its root (a piece end not foreseen), the root is bracketed between the two
    samples instead (:func:`_bracketed`).

    Returns the slip, whether a root was found (within :data:`_PIECES` pieces and with the
    line solver's check passing), whether it is locked, and the normal impulse there."""
    direction = -sign
    for _ in range(_PIECES):
        end = _next_event(s_a, w_a, o_a, s_a + direction * 1e300, arms, ct, dirs)
        if dh_a != 0:
            for limit in (0.0, 1.0):
                ahead = (limit - h_a) / dh_a * direction
                if ahead > 1e-13 * (1.0 + abs(s_a)) and (
                        math.isnan(end) or ahead < (end - s_a) * direction):
                    end = s_a + direction * ahead
        root = s_a - f_a / d_a if d_a > 0 else math.nan  # d > 0: σf falls along the walk
        on_piece = not math.isnan(root) and (math.isnan(end) or (end - root) * direction > 0)
        if on_piece:
            x = root
        elif math.isnan(end):
            break  # σf stays positive on the last piece: no root
        else:
            x = end + direction * 1e-11 * (1.0 + abs(end))
        # ω is continuous in the slip: the piece's line is a guess a kink or two from it.
        w, _, _, ok, p_n, p_t, dp_n, dp_t, dw, share, dshare, _, _ = _move(
            x, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks, jumps,
            where, line, w_a + o_a * (x - s_a), False,
        )
        if not ok:
            break
        f = p_t - sign * mu * p_n
        if abs(f) <= slack:
            return x, True, False, p_n
        if f * sign <= 0:
            before = end - direction * 1e-11 * (1.0 + abs(end))
            f_e = f_a + d_a * (before - s_a)
            if on_piece or f_e * sign <= 0:
                return _bracketed(sign, s_a, f_a, n_a, d_a, x, f, p_n, dp_t - sign * mu * dp_n,
                                  mu, slack, masses, inertia, bound, arms, cell_vel, ct, dirs,
                                  tol, rel, q, p, kinks, jumps, where, line)
            # f jumps across zero where the piece ends: its two sides, the first from the
            # piece's line.
            n_e = n_a + e_a * (before - s_a)
            return before, True, True, n_e + f_e / (f_e - f) * (p_n - n_e)
        s_a, w_a, f_a, n_a = x, w, f, p_n
        d_a, e_a, o_a, h_a, dh_a = dp_t - sign * mu * dp_n, dp_n, dw, share, dshare
    return s_a, False, False, n_a


@_jit
def _bracketed(sign, s_a, f_a, n_a, d_a, s_b, f_b, n_b, d_b, mu, slack, masses, inertia, bound,
               arms, cell_vel, ct, dirs, tol, rel, q, p, kinks, jumps, where, line):
    """The first root of ``f`` between ``s_a`` (``σf > 0``) and ``s_b`` (``σf ≤ 0``): Newton
    points of both ends, else the secant, and the midpoint when a sample did not halve the
    bracket; a bracket narrower than 1e-10 (relative) around a jump is a locked root
    (:func:`_slide_root`'s rule). Same returns as :func:`_slide_root`."""
    width = math.inf
    for _ in range(_PIECES):
        low, high = min(s_a, s_b), max(s_a, s_b)
        if high - low <= 1e-10 * (1.0 + abs(s_a)):
            return 0.5 * (s_a + s_b), True, True, n_a + f_a / (f_a - f_b) * (n_b - n_a)
        x = s_a - f_a / d_a if d_a != 0 else math.nan
        if not low < x < high:
            x = s_b - f_b / d_b if d_b != 0 else math.nan
        if not low < x < high:
            x = (s_a * f_b - s_b * f_a) / (f_b - f_a)
        previous, width = width, high - low
        if not low < x < high or width > 0.5 * previous:
            x = 0.5 * (s_a + s_b)
        w, _, _, ok, p_n, p_t, dp_n, dp_t, dw, share, dshare, _, _ = _move(
            x, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks, jumps,
            where, line, math.nan, False,
        )
        f = p_t - sign * mu * p_n
        if ok and abs(f) <= slack:
            return x, True, False, p_n
        if ok and f * sign > 0:
            s_a, f_a, n_a, d_a = x, f, p_n, dp_t - sign * mu * dp_n
        else:
            s_b, f_b, n_b, d_b = x, f, p_n, dp_t - sign * mu * dp_n
    return s_b, False, False, n_b


@_jit
def _pencils(rel, dirs, opposite, gamma, order, ranked):
    """Each switch ``j`` of D (between ``d_j`` and ``d_{j+1}``) as a pencil: cell ``i``'s
    velocity ``closing·n + s·t + ω·lever_i`` crosses it where ``α_j + β_j s + γ_ij ω = 0``,
    with ``γ_ij = lever_i · (d_j − d_{j+1})`` (``lever_i = ẑ × rel_i``), and the cells sorted
    by ``γ_ij`` (``order[j]``, ``ranked[j]`` the sorted values). A switch and its
    ``opposite`` (the other ray of its line of D, −1 if none) share one pencil, the first's:
    only it is sorted. The order depends only on the object's turn, so it is sorted by
    insertion from the last step's (a few swaps a step)."""
    k = rel.shape[0] - 1
    n_lines = dirs.shape[0]
    for j in range(n_lines):
        jn = (j + 1) % n_lines
        sx = dirs[j, 0] - dirs[jn, 0]
        sy = dirs[j, 1] - dirs[jn, 1]
        for i in range(k):
            gamma[j, i] = -rel[i, 1] * sx + rel[i, 0] * sy
        if 0 <= opposite[j] < j:
            continue
        for r in range(1, k):
            cell = order[j, r]
            value = gamma[j, cell]
            t = r
            while t > 0 and gamma[j, order[j, t - 1]] > value:
                order[j, t] = order[j, t - 1]
                t -= 1
            order[j, t] = cell
        for r in range(k):
            ranked[j, r] = gamma[j, order[j, r]]


#: How far out of [0, 1] a kink's share may be before the walk leaves the search to the
#: piece-by-piece walk (the line solve clipped it: cells tied within its tolerance).
_SHARE_SLACK = 1e-6

#: How many ``tiny`` (1e-13 of the slip) from a switch a cell counts as on it: the walk's
#: samples past an event lie 1e-11 beyond it (:func:`_slide_root`'s rule).
_NEAR = 1000.0


@_inline
def _piece(s, cst, lines_q, lines_x, lines_y, kink):
    """The walk's piece at slip ``s`` (:func:`_pencil_walk`): ω and its slope in the slip, the
    kink cell's share and its slope (0 off a kink), and the finger's normal impulse and the
    cone condition ``f = p_t − σμ p_n`` with their slopes. ``lines_q``, ``lines_x``,
    ``lines_y`` are ``Σ c_i q_i,l_i`` and ``Σ c_i d_l_i`` over the cells off the kink;
    ``cst`` the step's constants (``a``, ``lin`` at 0 and its slope, the total mass,
    ``Σ m_i lever_i``, the impulse's part that does not move, the tangent, the normal, σμ);
    ``kink`` the kink cell's (:func:`_kink_terms`). Scalars only: a call that passes arrays
    costs their reference counts, more than this arithmetic."""
    a, lin0, dlin, total, lam_x, lam_y, g0x, g0y, tx, ty, nx, ny, smu = cst
    on, g, alpha, beta, c, q_kp, q_nxt, nxt_x, nxt_y, dd_x, dd_y = kink
    lin = lin0 + dlin * s
    share = dshare = kfx = kfy = dkx = dky = 0.0
    if not on:
        w0 = -(lin + lines_q) / a
        slope = -dlin / a
    else:
        w0 = -(alpha + beta * s) / g
        slope = -beta / g
        dq = q_kp - q_nxt
        share = -(a * w0 + lin + lines_q + c * q_nxt) / (c * dq)
        dshare = -(a * slope + dlin) / (c * dq)
        held = min(max(share, 0.0), 1.0)
        kfx = c * (nxt_x + held * dd_x)
        kfy = c * (nxt_y + held * dd_y)
        dkx = c * dshare * dd_x
        dky = c * dshare * dd_y
    ix = g0x + total * s * tx + w0 * lam_x - lines_x - kfx
    iy = g0y + total * s * ty + w0 * lam_y - lines_y - kfy
    dix = total * tx + slope * lam_x - dkx
    diy = total * ty + slope * lam_y - dky
    p_n = ix * nx + iy * ny
    dp_n = dix * nx + diy * ny
    return (w0, slope, share, dshare, p_n, dp_n, ix * tx + iy * ty - smu * p_n,
            dix * tx + diy * ty - smu * dp_n)


@_jit
def _restart(s, kc, kp, cst, line, alpha, beta, gamma, q, bound, dirs, on_line):
    """The walk's sums over the cells off the kink (``Σ c_i q_i,l_i``, ``Σ c_i d_l_i``) from
    each cell's ``line``, and :func:`_piece` at ``s``: where the walk starts, and after a
    full line solve. ``on_line`` is left holding how many cells each line holds."""
    n_lines = dirs.shape[0]
    lines_q = lines_x = lines_y = 0.0
    on_line[:] = 0
    for i in range(line.shape[0]):
        on_line[line[i]] += 1
        if i != kc:
            lines_q += bound[i] * q[i, line[i]]
            lines_x += bound[i] * dirs[line[i], 0]
            lines_y += bound[i] * dirs[line[i], 1]
    nxt = (kp + 1) % n_lines
    kink = _kink_terms(kc >= 0, gamma[kp, kc], alpha[kp], beta[kp], bound[kc], q[kc, kp],
                       q[kc, nxt], dirs[kp, 0], dirs[kp, 1], dirs[nxt, 0], dirs[nxt, 1])
    return (lines_q, lines_x, lines_y) + _piece(s, cst, lines_q, lines_x, lines_y, kink)


@_inline
def _kink_terms(on, g, alpha, beta, c, q_kp, q_nxt, kp_x, kp_y, nxt_x, nxt_y):
    """The scalars of :func:`_piece` for a kink cell (``on``) on its first line ``kp``:
    ``γ``, ``α``, ``β`` of its switch, its friction bound, ``q`` of its two lines, the next
    line's direction and the difference of the two (the caller gathers them from its
    arrays)."""
    return on, g, alpha, beta, c, q_kp, q_nxt, nxt_x, nxt_y, kp_x - nxt_x, kp_y - nxt_y


@_jit
def _pencil_walk(sign, s_a, kc, kp, mu, slack, masses, inertia, bound, arms, cell_vel, ct,
                 dirs, tol, rel, q, p, kinks, jumps, where, line, gamma, order, ranked):
    """:func:`_slide_root`'s walk with pieces that cost O(L) (but for the cells its scan
    passes), not O(kL): within the step every cell's velocity is linear in the slip and ω, so
    the next crossing of a switch comes from the pencils (:func:`_pencils`; the scan is the
    loop's first block), and the piece's ω, the kink cell's share and the finger's impulse
    follow from running sums that an event changes by one cell (:func:`_piece`). It starts
    from :func:`_move`'s piece at the finger's slip ``s_a`` (its kink cell ``kc``, first line
    ``kp`` and each cell's ``line``).

    The events, in the order of the line solve's minimum (``g`` convex in ω, its minimiser
    continuous in the slip): on a smooth piece a cell reaching its switch becomes the kink
    cell (ω follows its switch, its share leaves 0 or 1); on a kink piece, the share reaching
    0 or 1 puts the kink cell on that line, and another cell crossing (its kink meets the kink
    cell's) leaves the minimum at whichever of the two kinks keeps ``g'(ω+) ≥ 0`` just after,
    the other cell on the line of that side; a kink cell whose velocity runs through zero
    along its switch changes its envelope at once (its minimum among its own kinks just past
    the zero, :func:`_zero_velocity`). Several events at once, or a crossing from the side a
    cell's line is not on, are left to the full line solve just past them (:func:`_move`, as
    :func:`_slide_root` does at every piece). The roots, the locks and their normal impulses
    follow :func:`_slide_root`'s rules (a root on a piece's line; a jump of ``σf`` across
    zero where a piece ends, the normal impulse interpolated between its sides).

    Where the line solve's choice among tied cells decides the root, the search is left to
    :func:`_slide_root` from the start (``handed`` True, nothing else returned): two cells at
    one kink on opposite rays of a line of D (their friction impulses may trade along it with
    the torque kept, so the finger's impulse is not unique: the first contact of a push from
    rest, the grid's rows on the diagonals of the paper's D), a kink share the line solve
    clipped (:data:`_SHARE_SLACK`), a kink cell without friction. Else the same returns as
    :func:`_slide_root`, ``handed`` False, ω at the root from the walk's piece (NaN where
    the walk does not know it, a guess for the root's line solve otherwise), whether the walk
    knows the root's piece, and that piece's slopes of ``f`` and ω in the slip, its kink cell
    (−1 off a kink) and first line, with ``line`` holding each cell's line there (a lock's
    piece is the one before its jump; after a full line solve past the jump the walk no longer
    knows it)."""
    k = masses.shape[0]
    n_lines = dirs.shape[0]
    direction = -sign
    nx, ny = ct[_NX], ct[_NY]
    tx, ty = -ny, nx
    closing = ct[_CLOSING]
    a, spin = rel[k, 0], rel[k, 1]
    lin0 = dlin = total = lam_x = lam_y = g0x = g0y = 0.0
    for i in range(k):
        m = masses[i]
        rx, ry = rel[i, 0], rel[i, 1]
        lin0 += m * (rx * (closing * ny - cell_vel[i, 1]) - ry * (closing * nx - cell_vel[i, 0]))
        dlin += m * (rx * ty - ry * tx)
        total += m
        lam_x -= m * ry
        lam_y += m * rx
        g0x += m * (closing * nx - cell_vel[i, 0])
        g0y += m * (closing * ny - cell_vel[i, 1])
    cst = (a, lin0 - spin, dlin, total, lam_x, lam_y, g0x, g0y, tx, ty, nx, ny, sign * mu)
    lin0 -= spin
    alpha = np.empty(n_lines)
    beta = np.empty(n_lines)
    opposite = np.full(n_lines, -1)  # the switch on the other ray of each one's line, if any
    rank_at = np.zeros(n_lines, np.int64)  # each pencil's rank of γ* at the last event
    for j in range(n_lines):
        jn = (j + 1) % n_lines
        sx = dirs[j, 0] - dirs[jn, 0]
        sy = dirs[j, 1] - dirs[jn, 1]
        alpha[j] = closing * (nx * sx + ny * sy)
        beta[j] = tx * sx + ty * sy
        for o in range(n_lines):
            on = (o + 1) % n_lines
            if o != j and abs(sx + dirs[o, 0] - dirs[on, 0]) + abs(
                    sy + dirs[o, 1] - dirs[on, 1]) <= 1e-12:
                opposite[j] = o
    if kc >= 0 and bound[kc] <= 0:
        return s_a, False, False, 0.0, True, math.nan, False, 0.0, 0.0, -1, 0
    _pencils(rel, dirs, opposite, gamma, order, ranked)
    s = s_a
    on_line = np.zeros(n_lines, np.int64)  # how many cells each line holds
    lines_q, lines_x, lines_y, w0, slope, share, dshare, p_n, dp_n, f, d = _restart(
        s, kc, kp, cst, line, alpha, beta, gamma, q, bound, dirs, on_line)
    still = 0
    for _ in range(_PIECES):
        tiny = 1e-13 * (1.0 + abs(s))
        # The next event (module docstring): along the piece the crossing γ* = −(α_j + β_j
        # s')/ω of pencil j (:func:`_pencils`) moves monotonically through the sorted γ_ij
        # (the way the sign of u ω' − β ω says; through ±∞ and round from the other end where
        # ω passes 0), so the cells cross in that order from γ*. A switch and the one on the
        # other ray of its line of D share a pencil (α, β, γ change sign), scanned once. A
        # crossing changes the envelope only for a cell whose line is beside one of the two
        # rays (an event; every cell with four directions): the scan passes the others and
        # stops at the first event. A cell on the switch already (within _NEAR tiny: samples
        # past an event lie 1e-11 beyond it) is an event here if its line is the side it
        # leaves, and is passed over otherwise. On the kink cell's own line of D (its switch
        # and the other ray), ω follows the kink, so no cell crosses but where ω passes 0,
        # all at once (left to the full line solve, as is a crossing from the side a cell's
        # line is not on). The scan is written out here, not called: a call that passes
        # arrays costs their reference counts.
        near = _NEAR * tiny
        wraps = slope != 0 and -w0 / slope * direction > 0  # ω passes 0 on this piece
        ahead = math.inf
        cell = switch = -1
        count = 0
        bad = False
        for j in range(n_lines):
            o = opposite[j]
            if 0 <= o < j:
                continue  # scanned with its opposite switch: one line of D, one pencil
            jn = (j + 1) % n_lines
            on = (o + 1) % n_lines
            beside = on_line[j] + on_line[jn]
            if o >= 0:
                beside += on_line[o] + on_line[on]
            if kc >= 0 and (line[kc] == j or line[kc] == jn
                            or (o >= 0 and (line[kc] == o or line[kc] == on))):
                beside -= 1
            if beside == 0:
                continue  # no cell's line is beside this line of D
            u = alpha[j] + beta[j] * s
            own = kc >= 0 and (kp == j or kp == o)
            start = 0
            star = math.nan
            if w0 != 0:
                star = -u / w0
                if star == star:
                    # The first rank with γ ≥ γ*, from the last event's: γ* moves little
                    # between events.
                    start = rank_at[j]
                    while start > 0 and ranked[j, start - 1] >= star:
                        start -= 1
                    while start < k and ranked[j, start] < star:
                        start += 1
                    rank_at[j] = start
            rising = (u * slope - beta[j] * w0) * direction >= 0
            # The second side only finds cells on the switch already (within ``near``), and
            # none is when the cell nearest γ* behind it is further: |u + γ_i ω| = |ω| |γ_i −
            # γ*| against ``near`` times |β + γ_i ω'| ≤ |β| + max|γ| |ω'| (on the kink cell's
            # own line every crossing lies at u = 0).
            if own:
                passed = abs(u) > 2.0 * near * abs(beta[j])
            elif star == star:
                behind = start if not rising else start - 1
                reach = abs(beta[j]) + abs(slope) * max(abs(ranked[j, 0]), abs(ranked[j, k - 1]))
                passed = behind < 0 or behind >= k or (
                    abs(w0) * abs(ranked[j, behind] - star)
                    - 1e-15 * (abs(u) + abs(w0) * abs(ranked[j, behind]))
                    > 2.0 * near * reach)
            else:
                passed = False
            for side in range(2):  # the way γ* moves, then the cells on the switch behind it
                if side == 1 and passed:
                    break
                up = rising if side == 0 else not rising
                r = start if up else start - 1
                for _ in range(k):
                    if r < 0 or r >= k:
                        if side == 1 or own or not wraps:
                            break
                        r = 0 if up else k - 1  # round from the other end after ω passes 0
                    i = order[j, r]
                    r += 1 if up else -1
                    if i == kc:
                        continue
                    li = line[i]
                    if li == j or li == jn:
                        sw, sw_next, flip = j, jn, 1.0
                    elif o >= 0 and (li == o or li == on):
                        sw, sw_next, flip = o, on, -1.0  # the other ray: u, β, γ change sign
                    else:
                        continue
                    if own:
                        # ω = −u/γ_kc: the value and the rate carry the factor γ_i − γ_kc.
                        apart = (gamma[j, i] - gamma[j, kc]) / gamma[j, kc]
                        value = -u * apart
                        rate = -beta[j] * apart * direction
                    else:
                        value = u + gamma[j, i] * w0
                        rate = (beta[j] + gamma[j, i] * slope) * direction
                    if rate == 0:
                        continue
                    gap = -value / rate
                    here = abs(gap) <= near
                    if not here and (side == 1 or gap < 0):
                        break
                    leaving = li != (sw_next if rate * flip > 0 else sw)
                    if here and not leaving:
                        continue
                    at = 0.0 if here else gap
                    odd = not leaving or (own and not here)
                    if at < ahead - tiny:
                        ahead, cell, switch, count, bad = at, i, sw, 1, odd
                    elif at <= ahead + tiny:
                        count += 1
                        bad = bad or odd
                        if at < ahead:
                            ahead, cell, switch = at, i, sw
                    if not here:
                        break
        limit = -1.0
        through = False  # the next event is the kink cell's velocity through zero, alone
        if kc >= 0:
            if dshare != 0:
                rate = dshare * direction
                reach = max(((1.0 if rate > 0 else 0.0) - share) / rate, 0.0)
                if reach < ahead - tiny:
                    ahead, count, bad, limit = reach, 1, False, 1.0 if rate > 0 else 0.0
                elif reach <= ahead + tiny:
                    count += 1
            # The kink cell's velocity runs along its switch; through zero its envelope
            # changes at once (:func:`_zero_velocity`; the full line solve where another
            # event comes with it).
            nxt = (kp + 1) % n_lines
            ex = -(dirs[kp, 0] + dirs[nxt, 0])
            ey = -(dirs[kp, 1] + dirs[nxt, 1])
            lever_x, lever_y = -rel[kc, 1], rel[kc, 0]
            along = ((closing * nx + s * tx + w0 * lever_x) * ex
                     + (closing * ny + s * ty + w0 * lever_y) * ey)
            rate = ((tx + slope * lever_x) * ex + (ty + slope * lever_y) * ey) * direction
            if rate < 0 and along > 0:
                zero = along / -rate
                if zero < ahead - tiny:
                    ahead, count, bad, limit, through = zero, 1, False, -1.0, True
                elif zero <= ahead + tiny:
                    ahead, count, limit = zero, 2, -1.0
        still = still + 1 if ahead <= tiny else 0
        if still > 2:
            count = 2  # events that keep the walk in place: the full line solve past them
        root = s - f / d if d > 0 else math.nan  # d > 0: σf falls along the walk
        if not math.isnan(root) and (root - s) * direction < ahead:
            return (root, True, False, p_n + dp_n * (root - s), False, w0 + slope * (root - s),
                    True, d, slope, kc, kp)
        if ahead == math.inf:
            # σf stays positive on the last piece
            return s, False, False, p_n, False, math.nan, False, 0.0, 0.0, -1, 0
        end = s + direction * ahead
        before = end - direction * 1e-11 * (1.0 + abs(end))
        x = end + direction * 1e-11 * (1.0 + abs(end))
        f_e = f + d * (before - s)
        n_e = p_n + dp_n * (before - s)
        s_old, f_old, n_old, d_old = s, f, p_n, d
        w_old, slope_old, kc_old, kp_old = w0, slope, kc, kp
        moved = moved_from = -1  # the cell an event moves to another line, and its line
        full = count > 1 or bad
        zero_kink, first, zero_line = False, 0, 0
        if through and not full:
            # Past the zero the kink cell's envelope is its lines about one point: the minimum
            # among its kinks there, every other cell's line kept. ω is continuous in the
            # slip: from the walk's ω at the zero it moves at most as fast as the steepest
            # of the cell's switches or a smooth piece (else the full line solve).
            zero_kink, w_new, first, zero_line = _zero_velocity(
                a, lin0 + dlin * x, lines_q, bound[kc], q, kc, dirs, closing * nx + x * tx,
                closing * ny + x * ty)
            steep = abs(slope) + abs(dlin / a)
            for j in range(n_lines):
                if gamma[j, kc] != 0:
                    steep = max(steep, abs(beta[j] / gamma[j, kc]))
            w_end = w0 + slope * (end - s)
            full = not abs(w_new - w_end) <= 2.0 * steep * abs(x - end) + 1e-12 * (
                1.0 + abs(w_end))
        if not full:
            moved_line = -1  # the line ``moved`` takes
            if through:
                moved, moved_line = kc, zero_line
                if zero_kink:
                    kp = first  # its kink moves to another switch
                else:
                    kc = -1  # it leaves the kink onto one line
            elif limit >= 0:  # the kink cell leaves its kink on the line the share reached
                moved, moved_line = kc, kp if limit == 1.0 else (kp + 1) % n_lines
                kc = -1
            else:
                into = (switch + 1) % n_lines if line[cell] == switch else switch
                c_i = bound[cell]
                lines_q -= c_i * q[cell, line[cell]]
                lines_x -= c_i * dirs[line[cell], 0]
                lines_y -= c_i * dirs[line[cell], 1]
                jn = (switch + 1) % n_lines
                if c_i <= 0 or abs(q[cell, switch] - q[cell, jn]) <= 1e-14 * max(
                        abs(q[cell, switch]), abs(q[cell, jn])):
                    moved, moved_line = cell, into  # no kink of g moves: the line changes
                elif kc < 0:
                    kc, kp = cell, switch
                elif switch == opposite[kp]:
                    # Two cells at one kink on opposite rays of a line of D: their impulses
                    # may trade along it, the finger's impulse is not unique there, and the
                    # piece-by-piece walk's choice is the engine's.
                    return s_a, False, False, 0.0, True, math.nan, False, 0.0, 0.0, -1, 0
                else:
                    # Two kinks meet: ``first`` is the one of lesser ω just after.
                    w_e = -(alpha[kp] + beta[kp] * end) / gamma[kp, kc]
                    later = beta[kp] / gamma[kp, kc] - beta[switch] / gamma[switch, cell]
                    first, first_p, second, second_p = kc, kp, cell, switch
                    if later * direction < 0:
                        first, first_p, second, second_p = cell, switch, kc, kp
                    f_hi = _high(q, first, first_p, n_lines, True)
                    s_lo = _high(q, second, second_p, n_lines, False)
                    g_right = (a * w_e + lin0 + dlin * end + lines_q
                               + bound[first] * q[first, f_hi] + bound[second] * q[second, s_lo])
                    if g_right >= 0:
                        moved, moved_line, kc, kp = second, s_lo, first, first_p
                    else:
                        moved, moved_line, kc, kp = first, f_hi, second, second_p
            if moved >= 0:
                moved_from = line[moved]
                on_line[line[moved]] -= 1
                on_line[moved_line] += 1
                line[moved] = moved_line
                if moved != kc:  # (the kink cell's own line is not in the sums)
                    lines_q += bound[moved] * q[moved, moved_line]
                    lines_x += bound[moved] * dirs[moved_line, 0]
                    lines_y += bound[moved] * dirs[moved_line, 1]
            nxt = (kp + 1) % n_lines
            kink = _kink_terms(kc >= 0, gamma[kp, kc], alpha[kp], beta[kp], bound[kc], q[kc, kp],
                               q[kc, nxt], dirs[kp, 0], dirs[kp, 1], dirs[nxt, 0], dirs[nxt, 1])
            s = end
            w0, slope, share, dshare, p_n, dp_n, f, d = _piece(s, cst, lines_q, lines_x,
                                                               lines_y, kink)
            # A kink whose share is out of its range: a third cell's kink lies within
            # rounding of it (cells tied on a switch); the full line solve decides.
            full = kc >= 0 and not -_SHARE_SLACK <= share <= 1.0 + _SHARE_SLACK
            # The new piece's values where it starts (not extrapolated to x, past which a
            # piece as short as a nearly kinkless cell's may already have ended).
            f_x, n_x, d_x = f, p_n, d
        if full:
            # The full line solve just past the events (the piece-by-piece walk's sample).
            w, _, _, ok, n_x, t_x, dn_x, dt_x, dw, _, _, kc, kp = _move(
                x, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks,
                jumps, where, line, w0 + slope * (x - s), False,
            )
            if not ok:
                return s_old, False, False, n_old, False, math.nan, False, 0.0, 0.0, -1, 0
            f_x = t_x - sign * mu * n_x
            d_x = dt_x - sign * mu * dn_x
            if kc >= 0 and (bound[kc] <= 0 or _opposed(x, kc, kp, opposite[kp], line, alpha,
                                                         beta, gamma)):
                return s_a, False, False, 0.0, True, math.nan, False, 0.0, 0.0, -1, 0
            s = x
            lines_q, lines_x, lines_y, w0, slope, share, dshare, p_n, dp_n, f, d = _restart(
                s, kc, kp, cst, line, alpha, beta, gamma, q, bound, dirs, on_line)
            if kc >= 0 and not -_SHARE_SLACK <= share <= 1.0 + _SHARE_SLACK:
                # Cells tied on a switch within the line solve's tolerance (its kink share
                # clipped): the piece-by-piece walk decides.
                return s_a, False, False, 0.0, True, math.nan, False, 0.0, 0.0, -1, 0
        if abs(f_x) <= slack:
            return x, True, False, n_x, False, w0 + slope * (x - s), True, d, slope, kc, kp
        if f_x * sign <= 0:
            if f_e * sign <= 0:
                root, found, locked, normal = _bracketed(
                    sign, s_old, f_old, n_old, d_old, x, f_x, n_x, d_x, mu, slack, masses,
                    inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks, jumps,
                    where, line)
                return root, found, locked, normal, False, math.nan, False, 0.0, 0.0, -1, 0
            # f jumps across zero where the piece ends: the motion locks that cell there, on
            # the piece before the event (known unless the full line solve replaced the lines).
            if moved >= 0:
                line[moved] = moved_from
            return (before, True, True, n_e + f_e / (f_e - f_x) * (n_x - n_e), False,
                    w_old + slope_old * (before - s_old), not full, d_old, slope_old, kc_old,
                    kp_old)
    return s, False, False, 0.0, False, math.nan, False, 0.0, 0.0, -1, 0


@_jit
def _zero_velocity(a, lin, others, c, q, i, dirs, ux, uy):
    """Where cell ``i``'s velocity has just run through zero along its switch
    (:func:`_pencil_walk`'s event), its lines of D all meet within rounding at one ω: the
    minimum of ``g`` among its kinks there, every other cell on its line (``others`` is
    ``Σ c_m q_m,l_m`` over them; ``lin`` and the contact point's velocity ``(ux, uy)`` at
    this slip, so ``p_j = −u·d_j``), as :func:`_line_sorted` finds it among those kinks.
    Returns whether it is at a kink, ω, the kink's first line, and the cell's line as
    :func:`_line_finish` leaves it (the first line of largest value at ω)."""
    n_lines = dirs.shape[0]
    p = np.empty(n_lines)
    for j in range(n_lines):
        p[j] = -(ux * dirs[j, 0] + uy * dirs[j, 1])
    # The cell's kinks as :func:`_envelope_kinks` finds them, sorted stably as the merge sort.
    kinks = np.empty(n_lines)
    jumps = np.empty(n_lines)
    where = np.empty(n_lines, np.int64)
    base, n_kinks = _envelope_kinks(np.full(1, c), p, q[i:i + 1], kinks, jumps, where)
    order = np.argsort(kinks[:n_kinks], kind="mergesort")
    n_below, slope_piece, _ = _below(a, lin + others, base, kinks, jumps, order, n_kinks)
    smooth = -(lin + others + slope_piece) / a
    at_kink = n_below < n_kinks and kinks[order[n_below]] <= smooth
    first = where[order[n_below]] if at_kink else 0
    omega = smooth
    if at_kink:
        jn = (first + 1) % n_lines
        omega = (p[jn] - p[first]) / (q[i, first] - q[i, jn])
    best = 0
    for j in range(1, n_lines):
        if p[j] + q[i, j] * omega > p[best] + q[i, best] * omega:
            best = j
    return at_kink, omega, first, best


@_jit
def _opposed(s, kc, kp, opposite, line, alpha, beta, gamma):
    """Whether a cell's kink on the other ray of the kink cell's line of D coincides with
    the kink at the slip ``s``: the two cells' velocities point opposite ways along that
    line, so their friction impulses at the kink may trade along it with the torque kept,
    and the finger's impulse there is not unique."""
    n_lines, k = gamma.shape
    if opposite < 0:
        return False
    jn = (opposite + 1) % n_lines
    w = -(alpha[kp] + beta[kp] * s) / gamma[kp, kc]
    u = alpha[opposite] + beta[opposite] * s
    for t in range(k):
        g = gamma[opposite, t]
        if (line[t] == opposite or line[t] == jn) and abs(u + g * w) <= 1e-12 * (
                abs(u) + abs(g * w)):
            return True
    return False


@_jit
def _high(q, i, j, n_lines, high):
    """Of cell ``i``'s two lines beside switch ``j``, the one of larger slope in ω (``high``)
    or of smaller: the line on the right of its kink, or on the left."""
    jn = (j + 1) % n_lines
    return (j if q[i, j] > q[i, jn] else jn) if high else (j if q[i, j] <= q[i, jn] else jn)




#: Active-line iterations of a free slide before the kernel leaves it to the interior-point LCP.
_FREE_ITERATIONS = 20


@_jit
def mass_matrix_inverse(masses, inertia, arms):
    """The upper triangle ``i00, i01, i02, i11, i12, i22`` of ``Q⁻¹``, by cofactors, for the
    rigid body's mass matrix ``Q = [[rot, −second, first], [−second, total, 0], [first, 0,
    total]]`` (symmetric positive definite) of total mass ``total``, first moments ``first``,
    ``second`` (x, y) and rotational inertia ``rot`` about the origin, for cells of ``masses``
    and ``inertia`` (k,) at ``arms`` (k, 2) from the origin."""
    total = first = second = rot = 0.0
    for i in range(masses.shape[0]):
        ax, ay = arms[i, 0], arms[i, 1]
        total += masses[i]
        first += masses[i] * ax
        second += masses[i] * ay
        rot += inertia[i] + masses[i] * (ax * ax + ay * ay)
    det = rot * total * total - second * second * total - first * first * total
    return (total * total / det, second * total / det, -first * total / det,
            (rot * total - first * first) / det, -second * first / det,
            (rot * total - second * second) / det)


@_jit
def _free_slide(masses, inertia, bound, arms, cell_vel, omega, dirs, line):
    """The twist of a moving object without the finger's force, if every cell slides on one
    line of its friction polygon: the minimiser of ``½ xᵀQx − pᵀx + Σ_i c_i max_j(−d_j·u_i(x))``
    (the LCP of Eq. (2) restricted to rigid motions, :func:`~physid.pushing.rigid_engine.
    rigid_lcp_step` without the finger) on the piece where cell ``i`` is on line ``l_i``:
    ``x = Q⁻¹(p + Σ_i c_i J_iᵀ d_{l_i})``, the lines taken from the cells' velocities and
    updated until they stay (at most :data:`_FREE_ITERATIONS` times), each cell's line a strict
    maximum (by 1e-9 of the fastest cell's speed); else the object stops if friction can hold
    it (:func:`_stops`). Returns whether either holds, and ω, vx, vy; a slide that puts a cell
    on a switch of D is neither (the caller leaves it to the LCP)."""
    k = masses.shape[0]
    n_lines = dirs.shape[0]
    spin = px = py = 0.0
    for i in range(k):
        ax, ay = arms[i, 0], arms[i, 1]
        spin += inertia[i] * omega + masses[i] * (ax * cell_vel[i, 1] - ay * cell_vel[i, 0])
        px += masses[i] * cell_vel[i, 0]
        py += masses[i] * cell_vel[i, 1]
    i00, i01, i02, i11, i12, i22 = mass_matrix_inverse(masses, inertia, arms)
    for i in range(k):
        best = 0
        value = -(dirs[0, 0] * cell_vel[i, 0] + dirs[0, 1] * cell_vel[i, 1])
        for j in range(1, n_lines):
            v = -(dirs[j, 0] * cell_vel[i, 0] + dirs[j, 1] * cell_vel[i, 1])
            if v > value:
                best, value = j, v
        line[i] = best
    w = vx = vy = 0.0
    for _ in range(_FREE_ITERATIONS):
        b0, b1, b2 = spin, px, py
        for i in range(k):
            dx, dy = dirs[line[i], 0], dirs[line[i], 1]
            b0 += bound[i] * (-dx * arms[i, 1] + dy * arms[i, 0])
            b1 += bound[i] * dx
            b2 += bound[i] * dy
        w = i00 * b0 + i01 * b1 + i02 * b2
        vx = i01 * b0 + i11 * b1 + i12 * b2
        vy = i02 * b0 + i12 * b1 + i22 * b2
        fastest = 0.0
        for i in range(k):
            ux, uy = vx - w * arms[i, 1], vy + w * arms[i, 0]
            fastest = max(fastest, math.sqrt(ux * ux + uy * uy))
        if not fastest > 0:
            return False, 0.0, 0.0, 0.0
        changed = False
        strict = True
        for i in range(k):
            ux, uy = vx - w * arms[i, 1], vy + w * arms[i, 0]
            best = 0
            value = -(dirs[0, 0] * ux + dirs[0, 1] * uy)
            second_value = -math.inf
            for j in range(1, n_lines):
                v = -(dirs[j, 0] * ux + dirs[j, 1] * uy)
                if v > value:
                    best, value, second_value = j, v, value
                elif v > second_value:
                    second_value = v
            if value - second_value <= 1e-9 * fastest:
                strict = False
            if best != line[i]:
                changed = True
                line[i] = best
        if not changed and strict:
            return True, w, vx, vy
        if not changed:
            break
    if _stops(bound, arms, dirs, spin, px, py):
        return True, 0.0, 0.0, 0.0
    return False, 0.0, 0.0, 0.0


@_jit
def _stops(bound, arms, dirs, spin, px, py):
    """Whether friction stops the object within the step: ``x = 0`` minimises the free
    slide's objective, i.e. the momentum ``p = (spin, px, py)`` lies in the set of friction
    impulses ``Z = Σ_i c_i J_iᵀ conv(−D)`` that the resting cells can exert (its support in a
    twist direction ``x`` is ``Σ_i c_i max_j(−d_j·J_i x)``). Decided by Wolfe's minimum-norm
    point algorithm on ``Z − p`` (finite and exact on a polytope; a corral of at most four
    points in three dimensions): the object stops if the nearest point of ``Z`` to ``p`` is
    within 1e-12 of the impulses' scale."""
    k = arms.shape[0]
    scale = abs(spin) + abs(px) + abs(py)
    for i in range(k):
        scale += bound[i] * (1.0 + math.sqrt(arms[i, 0] ** 2 + arms[i, 1] ** 2))
    corral = np.zeros((4, 3))
    weights = np.zeros(4)
    x = np.empty(3)
    _support(bound, arms, dirs, -spin, -px, -py, spin, px, py, x)
    corral[0] = x
    weights[0] = 1.0
    size = 1
    for _ in range(100):
        norm2 = x[0] ** 2 + x[1] ** 2 + x[2] ** 2
        if math.sqrt(norm2) <= 1e-12 * scale:
            return True
        q = np.empty(3)
        _support(bound, arms, dirs, -x[0], -x[1], -x[2], spin, px, py, q)
        if norm2 - (x[0] * q[0] + x[1] * q[1] + x[2] * q[2]) <= 1e-24 * scale * scale:
            return False  # x is the nearest point, away from zero: the object slides
        if size == 4:
            return False  # degenerate corral (rounding): leave it to the LCP
        corral[size] = q
        weights[size] = 0.0
        size += 1
        while True:
            alpha, ok = _affine_minimum(corral, size)
            if not ok:
                return False
            if alpha[:size].min() > 0:
                weights[:size] = alpha[:size]
                break
            theta = 1.0
            for m in range(size):
                if alpha[m] <= 0:
                    theta = min(theta, weights[m] / (weights[m] - alpha[m]))
            kept = 0
            for m in range(size):
                w = theta * alpha[m] + (1.0 - theta) * weights[m]
                if w > 1e-15:
                    corral[kept] = corral[m]
                    weights[kept] = w
                    kept += 1
            size = kept
            weights[:size] /= weights[:size].sum()
        x[:] = 0.0
        for m in range(size):
            x += weights[m] * corral[m]
    return False


@_jit
def _support(bound, arms, dirs, d0, d1, d2, spin, px, py, out):
    """The point of ``Z − p`` (:func:`_stops`) furthest along the twist direction
    ``(d0, d1, d2)``, into ``out``: each cell's friction at the vertex of ``−D`` that
    maximises ``−d_j·J_i d``."""
    n_lines = dirs.shape[0]
    out[0], out[1], out[2] = -spin, -px, -py
    for i in range(arms.shape[0]):
        ux, uy = d1 - d0 * arms[i, 1], d2 + d0 * arms[i, 0]
        best = 0
        value = -(dirs[0, 0] * ux + dirs[0, 1] * uy)
        for j in range(1, n_lines):
            v = -(dirs[j, 0] * ux + dirs[j, 1] * uy)
            if v > value:
                best, value = j, v
        fx, fy = -bound[i] * dirs[best, 0], -bound[i] * dirs[best, 1]
        out[0] += -fx * arms[i, 1] + fy * arms[i, 0]
        out[1] += fx
        out[2] += fy


@_jit
def _affine_minimum(points, size):
    """Weights (summing to 1) of the minimum-norm point of the affine hull of ``points[:size]``
    and whether the small saddle system was regular."""
    n = size + 1
    system = np.zeros((n, n))
    rhs = np.zeros((n, 1))
    for a in range(size):
        for b in range(size):
            system[a, b] = points[a, 0] * points[b, 0] + points[a, 1] * points[b, 1] + \
                points[a, 2] * points[b, 2]
        system[a, size] = system[size, a] = 1.0
    rhs[size, 0] = 1.0
    alpha = np.zeros(4)
    if not solve_in_place(system, rhs, n, 1, 1e-14 * np.abs(system).max()):
        return alpha, False
    alpha[:size] = rhs[:size, 0]
    return alpha, True

@_jit
def _contact_step(mu, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks,
                  jumps, where, line, gamma, order, ranked, pencil, walks, start):
    """The mode of one push's step and its twist (no gradient), in the order of the module
    docstring of :mod:`physid.pushing.rigid_engine`: a resting object the finger does not
    reach this step stays at rest; the finger sticks if the impulse that makes it stick lies
    in its friction cone; else it slides (or locks) at the first slip that puts the impulse on
    the cone's edge with ``λ_n ≥ 0`` (:func:`_slide_root`); else the object moves without the
    finger's force if that keeps it off the finger; else the step is :data:`COUPLED` (the
    interior-point LCP with the finger's rows decides).

    Returns the mode, ω, the origin's velocity, the finger's normal impulse (≥ 0), the
    contact point's tangential velocity (the slip: the finger's own for a stick, the root for
    a slide or lock) and, for a slide or lock, the slopes in the slip of the cone condition
    ``f`` and of ω on the root's piece (for the implicit gradient; zero otherwise), and the
    line solver's kink cell (−1 off a kink or without a line solve) and its first line, and
    the stick test's ω (NaN where the step made none). The work array ``line`` is left
    holding each cell's line of the step's piece (of the free slide's, for a free step): for
    a slide or lock the pencils found, the walk's piece at the root, which is the line
    solve's there (so no line solve is made at the root). The mode is :data:`LCP_FREE` for a
    free slide this kernel does not solve (a cell on a switch of D): the interior-point LCP
    solves it, and the step is free if that keeps the object off the finger, else coupled.
    ``start`` is the ω the stick test's line solve starts from (:func:`_line_solve`'s
    guess; any value gives the same step)."""
    k = masses.shape[0]
    ux, uy = ct[_UX], ct[_UY]
    nx, ny = ct[_NX], ct[_NY]
    slip = ux * -ny + uy * nx
    speed = math.sqrt(ux * ux + uy * uy)
    at_rest = ct[_OMEGA] == 0
    slack = 0.0
    for i in range(k):
        vx, vy = cell_vel[i, 0], cell_vel[i, 1]
        if vx != 0 or vy != 0:
            at_rest = False
        slack += bound[i] + masses[i] * (speed + math.sqrt(vx * vx + vy * vy))
    slack *= 1e-9
    if at_rest and not ct[_CLOSING] > 0:
        return FREE, 0.0, 0.0, 0.0, 0.0, slip, 0.0, 0.0, -1, 0, math.nan
    # ``start`` is a guess a few kinks from this ω: the previous step's ω after a stick (a
    # stick moves it little), its stick test's after a slide (the slide's root is further).
    w, vx, vy, ok, p_n, p_t, dp_n, dp_t, dw, share, dshare, kc, kp = _move(
        slip, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks, jumps,
        where, line, start, True,
    )
    tested = w
    if ok and p_n >= -slack and abs(p_t) <= mu * p_n + slack:
        return STICK, w, vx, vy, max(p_n, 0.0), slip, 0.0, 0.0, kc, kp, tested
    try_free = ok and p_n < -slack
    normal = 0.0
    if ok:
        sign = 1.0 if p_t > 0 else -1.0
        handed = True
        guess = math.nan  # ω near the root, where the walk knows it
        known = False  # whether the walk knows the root's piece
        if pencil:
            (root, converged, locked, normal, handed, guess, known, f_slope, w_slope, kc,
             kp) = _pencil_walk(
                sign, slip, kc, kp, mu, slack, masses, inertia, bound, arms, cell_vel, ct, dirs,
                tol, rel, q, p, kinks, jumps, where, line, gamma, order, ranked,
            )
        walks[1 if handed else 0] += 1
        if handed:
            root, converged, locked, normal = _slide_root(
                sign, slip, w, p_t - sign * mu * p_n, p_n, dp_t - sign * mu * dp_n, dp_n, dw,
                share, dshare, mu, slack, masses, inertia, bound, arms, cell_vel, ct, dirs, tol,
                rel, q, p, kinks, jumps, where, line,
            )
        slip = root
        if converged and normal >= -slack and known:
            # The walk's piece at the root: ω, the slopes and each cell's line there.
            vx, vy = _origin_velocity(ct, root, guess)
            mode = LOCK if locked else SLIDE
            return mode, guess, vx, vy, max(normal, 0.0), slip, f_slope, w_slope, kc, kp, tested
        if converged and normal >= -slack:
            # From the walk's ω the line solve hops to the sorted search's answer
            # (:func:`_line_solve`).
            w, vx, vy, ok, _, _, dp_n, dp_t, dw, _, _, kc, kp = _move(
                root, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p, kinks,
                jumps, where, line, guess, False,
            )
            if locked and not ok:
                # The line solve is degenerate exactly on the switch (a cell's velocity
                # through zero): ω is continuous there, so take it just before the jump.
                slip = root + sign * 1e-11 * (1.0 + abs(root))
                w, vx, vy, _, _, _, dp_n, dp_t, dw, _, _, kc, kp = _move(
                    slip, masses, inertia, bound, arms, cell_vel, ct, dirs, tol, rel, q, p,
                    kinks, jumps, where, line, math.nan, False,
                )
            mode = LOCK if locked else SLIDE
            return (mode, w, vx, vy, max(normal, 0.0), slip, dp_t - sign * mu * dp_n, dw, kc,
                    kp, tested)
        if converged:
            try_free = True
    normal = max(normal, 0.0)
    if try_free:
        # Without the finger's force: at rest (friction holds it) or a free slide; taken if
        # it keeps the object off the finger, n·(v_c − u) ≥ −gap/Δt.
        w = vx = vy = 0.0
        if not at_rest:
            slid, w, vx, vy = _free_slide(masses, inertia, bound, arms, cell_vel, ct[_OMEGA],
                                          dirs, line)
            if not slid:
                return LCP_FREE, 0.0, 0.0, 0.0, normal, slip, 0.0, 0.0, -1, 0, tested
        un = ux * nx + uy * ny
        contact_n = (vx - w * ct[_AY]) * nx + (vy + w * ct[_AX]) * ny
        if contact_n - un >= ct[_CLOSING] - un - 1e-9 * (1.0 + speed):
            return FREE, w, vx, vy, normal, slip, 0.0, 0.0, -1, 0, tested
    return COUPLED, 0.0, 0.0, 0.0, normal, slip, 0.0, 0.0, -1, 0, tested


@_jit
def _work(k, n_lines):
    """The work arrays of :func:`_move` for ``k`` cells and ``n_lines`` directions, made once
    per call of :func:`classify` or :func:`run`: ``rel``, ``q``, ``p``, ``kinks``, ``jumps``,
    ``where``, ``line``, then the pencils' (:func:`_pencils`): ``gamma``, ``order``,
    ``ranked``."""
    order = np.empty((n_lines, k), np.int64)
    for j in range(n_lines):
        order[j] = np.arange(k)
    return (np.empty((k + 1, 2)), np.empty((k, n_lines)), np.empty(n_lines),
            np.empty(k * n_lines),
            np.empty(k * n_lines), np.empty(k * n_lines, np.int64), np.empty(k, np.int64),
            np.empty((n_lines, k)), order, np.empty((n_lines, k)))


@_jit
def classify(mu, masses, inertia, bound, arms, cell_vel, contact, dirs, tol, pencil=True):
    """``_contact_step`` of B pushes (no gradient; the sliding root by the pencils, or piece
    by piece where ``pencil`` is false, as the tests compare): for each, the mode, the twist
    ``[ω, vx, vy]`` (B, 3), the finger's normal impulse, the slip (B,) and the slopes of the
    cone condition and of ω in the slip (B, 2).

    ``masses``, ``inertia``, ``bound`` (B, k) (the friction impulse bounds ``μ_i M_i g Δt``),
    ``arms`` (B, k, 2) the cells' world offsets from the
    origin, ``cell_vel`` (B, k, 2) their velocities of the previous step and ``contact``
    (B, 8) each finger contact: the contact point's offset from the origin (2), the world
    normal into the object (2), the normal velocity that closes the gap, the previous ω and
    the finger's velocity (2)."""
    batch, k = masses.shape
    n_lines = dirs.shape[0]
    mode = np.empty(batch, np.int64)
    twist = np.zeros((batch, 3))
    normal = np.zeros(batch)
    slip = np.zeros(batch)
    slopes = np.zeros((batch, 2))
    rel, q, p, kinks, jumps, where, line, gamma, order, ranked = _work(k, n_lines)
    walks = np.zeros(2, np.int64)
    for b in range(batch):
        (mode[b], twist[b, 0], twist[b, 1], twist[b, 2], normal[b], slip[b], slopes[b, 0],
         slopes[b, 1], _, _, _) = _contact_step(
            mu, masses[b], inertia[b], bound[b], arms[b], cell_vel[b], contact[b], dirs, tol,
            rel, q, p, kinks, jumps, where, line, gamma, order, ranked, pencil, walks,
            contact[b, _OMEGA],
        )
    return mode, twist, normal, slip, slopes


@_jit
def nearest_face(theta, ox, oy, fx, fy, face_mid, face_normal, half):
    """:func:`physid.pushing.finger.finger_contact` for one object at ``(ox, oy)`` turned by
    ``theta`` and the finger's centre at ``(fx, fy)``: the finger in the object frame (x, y),
    the nearest face, the nearest point on it (x, y, object frame), the distance, and whether
    that point lies inside the face (not clamped to one of its ends)."""
    cos, sin = math.cos(theta), math.sin(theta)
    dx, dy = fx - ox, fy - oy
    rx, ry = dx * cos + dy * sin, dy * cos - dx * sin
    face = 0
    best = math.inf
    near_x = near_y = 0.0
    inside = False
    for f in range(face_mid.shape[0]):
        fnx, fny = face_normal[f, 0], face_normal[f, 1]
        raw = (rx - face_mid[f, 0]) * -fny + (ry - face_mid[f, 1]) * fnx
        along = min(max(raw, -half), half)
        cx = face_mid[f, 0] + along * -fny
        cy = face_mid[f, 1] + along * fnx
        dist = math.sqrt((cx - rx) ** 2 + (cy - ry) ** 2)
        if dist < best:
            best, face, near_x, near_y = dist, f, cx, cy
            inside = abs(raw) <= half
    return rx, ry, face, near_x, near_y, best, inside


@_jit
def run(centres, masses, frictions, cell_side, gravity, dt, n_steps, dirs, tol, radius, mu,
         face_mid, face_normal, half, face_side, start, velocity, theta, origin, omega, v,
         cell_vel, next_step, override, override_mode, last_normal, positions, rec_normal,
         rec_point, rec_side, rec_yaw, rec_mode, taping, tape_state, tape_cv, tape_int,
         tape_float, tape_line, walks):
    """Run every push from its ``next_step`` until the end or until a step the torch step must
    solve (``next_step`` then points at it). The state (``theta``, ``origin``, ``omega``, ``v``,
    ``cell_vel``, ``last_normal``) and the outputs are updated in place; a push with
    ``override_mode ≥ 0`` takes its first step from ``override`` (ω, vx, vy, normal impulse).

    With ``taping``, every step leaves what the adjoint (:mod:`physid.pushing.rigid_adjoint`)
    needs: the state at its start, ``tape_state (B, T + 1, 6)`` ``[θ, x, y, ω, vx, vy]`` and
    ``tape_cv (B, T + 1, k, 2)`` the cells' velocities, and its decisions, ``tape_int (B, T,
    3)`` the mode, the kink cell and its first line, ``tape_float (B, T, 3)`` the slip and the
    slopes of the cone condition and of ω in it, ``tape_line (B, T, k)`` each cell's line.
    ``walks (2,)`` counts the sliding root searches by the pencils (``_pencil_walk``) and
    those it left to the piece-by-piece walk (``_slide_root``)."""
    batch, k = masses.shape
    n_lines = dirs.shape[0]
    inertia = np.empty(k)
    bound = np.empty(k)
    arms = np.empty((k, 2))
    rel, q, p, kinks, jumps, where, line, gamma, order, ranked = _work(k, n_lines)
    ct = np.empty(8)
    for b in range(batch):
        if next_step[b] > n_steps:
            continue
        for i in range(k):
            inertia[i] = masses[b, i] * cell_side**2 / 6.0
            bound[i] = frictions[b, i] * masses[b, i] * (gravity * dt)
        step = next_step[b]
        start_omega = omega[b]  # where the step's stick test starts its line solve
        while True:
            cos, sin = math.cos(theta[b]), math.sin(theta[b])
            for i in range(k):
                arms[i, 0] = cos * centres[i, 0] - sin * centres[i, 1]
                arms[i, 1] = cos * centres[i, 1] + sin * centres[i, 0]
                positions[b, step, i, 0] = origin[b, 0] + arms[i, 0]
                positions[b, step, i, 1] = origin[b, 1] + arms[i, 1]
            if taping:
                tape_state[b, step, 0] = theta[b]
                tape_state[b, step, 1], tape_state[b, step, 2] = origin[b, 0], origin[b, 1]
                tape_state[b, step, 3] = omega[b]
                tape_state[b, step, 4], tape_state[b, step, 5] = v[b, 0], v[b, 1]
                tape_cv[b, step] = cell_vel[b]
            if step == n_steps:
                break
            # The finger's contact (physid.pushing.finger.finger_contact).
            ux, uy = velocity[b, 0], velocity[b, 1]
            rx, ry, face, near_x, near_y, best, _ = nearest_face(
                theta[b], origin[b, 0], origin[b, 1], start[b, 0] + ux * (step * dt),
                start[b, 1] + uy * (step * dt), face_mid, face_normal, half)
            gap0 = max(best, 1e-12)
            tox, toy = (near_x - rx) / gap0, (near_y - ry) / gap0
            nx, ny = cos * tox - sin * toy, cos * toy + sin * tox
            ct[_AX] = cos * near_x - sin * near_y
            ct[_AY] = cos * near_y + sin * near_x
            ct[_NX], ct[_NY] = nx, ny
            ct[_CLOSING] = ux * nx + uy * ny - (best - radius) / dt
            ct[_OMEGA] = omega[b]
            ct[_UX], ct[_UY] = ux, uy
            if override_mode[b] >= 0:
                mode = override_mode[b]
                w, vx, vy, normal = override[b, 0], override[b, 1], override[b, 2], override[b, 3]
                override_mode[b] = -1
                start_omega = w
            else:
                mode, w, vx, vy, normal, slip, f_slope, w_slope, kc, kp, tested = _contact_step(
                    mu, masses[b], inertia, bound, arms, cell_vel[b], ct, dirs, tol, rel, q, p,
                    kinks, jumps, where, line, gamma, order, ranked, True, walks, start_omega,
                )
                # The next stick test starts from this one's ω after a slide or lock.
                start_omega = tested if mode == SLIDE or mode == LOCK else w
                if mode == COUPLED or mode == LCP_FREE:
                    break  # the torch step solves it (module docstring)
                if taping:
                    tape_int[b, step, 0], tape_int[b, step, 1] = mode, kc
                    tape_int[b, step, 2] = kp
                    tape_float[b, step, 0], tape_float[b, step, 1] = slip, f_slope
                    tape_float[b, step, 2] = w_slope
                    tape_line[b, step] = line
            rec_normal[b, step] = normal
            rec_point[b, step, 0], rec_point[b, step, 1] = near_x, near_y
            rec_side[b, step] = face_side[face] if normal > 0 else -1
            rec_yaw[b, step] = math.atan2(sin, cos)
            rec_mode[b, step] = mode
            last_normal[b] = normal
            for i in range(k):
                cell_vel[b, i, 0] = vx - w * arms[i, 1]
                cell_vel[b, i, 1] = vy + w * arms[i, 0]
            theta[b] += w * dt
            # The exact flow of the twist over the step (physid.pushing.planar.se2_step).
            half_turn = w * (dt / 2)
            scale = (math.sin(half_turn) / half_turn if half_turn != 0 else 1.0) * dt
            fx, fy = scale * math.cos(half_turn), scale * math.sin(half_turn)
            origin[b, 0] += fx * vx - fy * vy
            origin[b, 1] += fx * vy + fy * vx
            omega[b], v[b, 0], v[b, 1] = w, vx, vy
            step += 1
        next_step[b] = step if step < n_steps else n_steps + 1
