#!/usr/bin/env python3
"""bench/asha_replay.py - ASHA replayed on measured learning curves, for choosing a
configuration before paying for real runs.

    python3 bench/asha_replay.py [--slots 2] [--startup S0] CURVES.json...

Each CURVES.json is what `KEEP=DIR METHODS=random sh bench/exp_asha.sh` keeps
(random-SEED-curves.json): every trial of a random search with its test accuracy after each
epoch. A random search trains the same trials as an ASHA search of the same seed
(docs/EXPERIMENTS.md "Trial sets"), and a trial trains deterministically, so ASHA's search
is these curves cut short where ASHA stops them. The replay runs the trials in their order
on --slots slots, max_concurrent = slots as bench/exp_asha.sh runs them, every epoch one
unit of time and every trial's start --startup units more (its process, data set and first
evaluation: measured 12.2 s for 9 epochs with about 4.3 s of it fixed, so about 5 epochs'
worth), and decides at each rung by the daemon's rule (common/search.c: the value goes on
when at least the (1 - 1/rf) quantile, numpy's linear interpolation, of the values recorded
there before it). Arrivals are judged in time order, ties by trial index: the real search's
order differs where its trials' times differ, so a replay is an estimate of one run, not a
measurement.

For every configuration (min_epochs 1..4, rf 2..4) it prints, over the files: ASHA's best
final accuracy minus the random search's best (points, mean and per file), the epochs
trained, the rung budget of synchronous successive halving (n * (r0 + sum_k rf^-k (r_k -
r_(k-1)) + rf^-K (E - r_K)), the epochs ASHA trains when each rung passes exactly its top
1/rf), and the replayed wall time over one full trial's (startup + E). No dependencies
beyond the standard library.
"""
import argparse
import heapq
import json
import sys


def rungs_of(epochs, min_epochs, rf):
    out, r = [], min_epochs
    while r < epochs:
        out.append(r)
        r *= rf
    return out


def cutoff(values, rf):
    v = sorted(values)
    pos = (1 - 1 / rf) * (len(v) - 1)
    lo = int(pos)
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) if lo + 1 < len(v) else v[lo]


def replay(curves, epochs, min_epochs, rf, slots, startup):
    """One ASHA search on the curves: (best final accuracy, epochs trained, wall time)."""
    rungs = rungs_of(epochs, min_epochs, rf)
    recorded = [[] for _ in rungs]
    n = len(curves)
    reached = [0] * n  # epochs trained
    level = [0] * n  # rungs passed, +1 when trained to the end
    events, nxt, end = [], 0, 0.0

    def start(i, t):
        stop = rungs[0] if rungs else epochs
        heapq.heappush(events, (t + startup + stop, i, stop))

    while nxt < min(slots, n):
        start(nxt, 0.0)
        nxt += 1
    while events:
        t, i, ep = heapq.heappop(events)
        reached[i] = ep
        k = rungs.index(ep) if ep in rungs else -1
        go = ep < epochs
        if k >= 0:
            v = curves[i][ep - 1]
            go = not recorded[k] or v >= cutoff(recorded[k], rf) - 1e-12
            recorded[k].append(v)
            level[i] = k + go
        if go:
            stop = next((r for r in rungs if r > ep), epochs)
            heapq.heappush(events, (t + stop - ep, i, stop))
            continue
        if ep >= epochs:
            level[i] = len(rungs) + 1
        end = max(end, t)
        if nxt < n:
            start(nxt, t)
            nxt += 1
    top = max(level)
    best = max(curves[i][reached[i] - 1] for i in range(n) if level[i] == top)
    return best, sum(reached), end


def budget(n, epochs, min_epochs, rf):
    rungs = rungs_of(epochs, min_epochs, rf)
    if not rungs:
        return n * epochs
    w, prev = 0.0, 0
    for k, r in enumerate(rungs):
        w += n * rf**-k * (r - prev)
        prev = r
    return w + n * rf ** -len(rungs) * (epochs - prev)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--startup", type=float, default=5.0, help="a trial's fixed cost, in epochs (default 5)")
    ap.add_argument("curves", nargs="+")
    a = ap.parse_args()
    runs = []
    for path in a.curves:
        with open(path) as f:
            doc = json.load(f)
        curves = [t["acc"] for t in sorted(doc, key=lambda t: t["trial"])]
        epochs = min(len(c) for c in curves)
        if epochs < 1 or any(x is None for c in curves for x in c[:epochs]):
            sys.exit("%s: a trial without an accuracy for every epoch" % path)
        runs.append((path, [c[:epochs] for c in curves], epochs))
    epochs, n = runs[0][2], len(runs[0][1])
    one = a.startup + epochs
    print("%d trials of %d epochs, %d slots, a trial's start %.1f epochs; one full trial %.1f units" %
          (n, epochs, a.slots, a.startup, one))
    print("| min_epochs | rf | rungs | best - random's (points): mean, per file | epochs trained | "
          "rung budget | wall / one trial |")
    print("|---|---|---|---|---|---|---|")
    for me in (1, 2, 3, 4):
        for rf in (2, 3, 4):
            diffs, eps, walls = [], [], []
            for _, curves, _ in runs:
                best, ep, wall = replay(curves, epochs, me, rf, a.slots, a.startup)
                diffs.append(100 * (best - max(c[-1] for c in curves)))
                eps.append(ep)
                walls.append(wall / one)
            print("| %d | %d | %s | %+.2f (%s) | %.0f | %.1f | %.2f |" %
                  (me, rf, rungs_of(epochs, me, rf), sum(diffs) / len(diffs), ", ".join("%+.2f" % d for d in diffs),
                   sum(eps) / len(eps), budget(n, epochs, me, rf), sum(walls) / len(walls)))
    print("random: %d epochs, wall / one trial %.2f" % (n * epochs, n * one / a.slots / one))


if __name__ == "__main__":
    main()
