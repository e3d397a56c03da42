#!/usr/bin/env python3
"""bench/sched_trace.py - a seeded job trace for pacer-sched-sim (docs/ARCHITECTURE.md
"Scheduler simulator" has the format), drawn like the Microsoft Philly trace statistics that
Gavel (OSDI 2020) uses in its simulator (scheduler/utils.py, _generate_duration and
_generate_scale_factor; learnt from, not copied):

  duration  on the job's workers of the fastest class: 60 x 10^U(1.5, 3) s with
            probability 0.8, else 60 x 10^U(3, 4) s (about 30 min to 17 h, and 17 h to 7 d)
  workers   1 (p 0.70), 2 (0.10), 4 (0.15), 8 (0.05)
  arrivals  a Poisson process: exponential gaps of mean 1/lambda
  type      uniform over the cluster file's types
  samples   duration x workers x the type's speed per slot on the fastest class
  user      uniform over --users users; priority high 10%, low 10%, else normal;
            elastic with probability --elastic (0.5)

The arrival rate is --rate jobs per hour, as Gavel's experiments give it. The offered load
it means is printed on stderr: rate x E[fast-slot-seconds per job] (E[duration] x E[workers]
= 60 x 1006 min x 1.9) over the cluster's capacity in fast-slot equivalents (each class's
slots x the type's speed there over its fastest, averaged over the types): for
bench/sched/cluster48.json 1 job/h is an offered load of 0.98.

  python3 bench/sched_trace.py --cluster bench/sched/cluster48.json --jobs 200 --rate 1.5 --seed 1
"""
import argparse
import json
import math
import random
import sys


def expect_pow10(a, b):
    """E[10^U(a, b)]."""
    return (10 ** b - 10 ** a) / ((b - a) * math.log(10))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--rate", type=float, required=True, help="arrivals per hour")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--elastic", type=float, default=0.5)
    a = ap.parse_args()
    with open(a.cluster) as f:
        cl = json.load(f)
    classes = [c["name"] for c in cl["classes"]]
    slots = {c["name"]: c["hosts"] * c.get("slots", 1) for c in cl["classes"]}
    types = sorted(cl["speeds"])
    fastest = {t: max(cl["speeds"][t].values()) for t in types}
    cap = sum(sum(slots[c] * cl["speeds"][t].get(c, 0) / fastest[t] for c in classes) for t in types) / len(types)
    mean_duration = 60 * (0.8 * expect_pow10(1.5, 3) + 0.2 * expect_pow10(3, 4))
    mean_workers = 0.7 * 1 + 0.1 * 2 + 0.15 * 4 + 0.05 * 8
    lam = a.rate / 3600.0
    sys.stderr.write("offered load %.3f (%.2f jobs/h)\n" % (lam * mean_duration * mean_workers / cap, a.rate))
    rng = random.Random(a.seed)
    t = 0.0
    for i in range(a.jobs):
        if i:
            t += rng.expovariate(lam)
        duration = 60 * 10 ** (rng.uniform(3, 4) if rng.random() >= 0.8 else rng.uniform(1.5, 3))
        r = rng.random()
        workers = 1 if r < 0.7 else 2 if r < 0.8 else 4 if r < 0.95 else 8
        typ = types[rng.randrange(len(types))]
        p = rng.random()
        prio = "high" if p < 0.1 else "low" if p < 0.2 else "normal"
        job = {
            "id": "j%03d" % i,
            "arrival_s": round(t, 3),
            "type": typ,
            "workers": workers,
            "samples": round(duration * workers * fastest[typ]),
            "user": "u%d" % rng.randrange(a.users),
            "priority": prio,
            "elastic": rng.random() < a.elastic,
        }
        sys.stdout.write(json.dumps(job) + "\n")


if __name__ == "__main__":
    main()
