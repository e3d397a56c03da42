# deploy/fit-slowdowns.jq - a job spec with its emulated slowdowns scaled to the cores of
# the machine it will run on, the relative speeds kept: the one rule the demo
# (deploy/demo.sh) and the benchmarks (bench/lib.sh, fit_slowdowns) use.
#
#   jq --argjson cores N -f deploy/fit-slowdowns.jq SPEC
#
# An emulated slow node is as slow as it says only while the workers' compute fits in the
# cores (worker/emulate.h: demand = the sum over workers of threads / f, f a rank's
# smallest factor, its emulate.schedule's included). emulate.slowdown and the schedule's
# factors are multiplied by k, the smallest power of two that brings that demand to at
# most half the cores: the other half is for the parameter server (whose busy share
# counts too), the coordinator, Redis and the browser. k = 1 when the demand already fits
# and when the spec emulates nothing. [1, 1, 2, 4] asks for 2.75 cores: [4, 4, 8, 16] on 2
# cores (0.69 cores), [2, 2, 4, 8] on 4, unchanged from 6.
(.threads // 1) as $t
| (.emulate.slowdown // []) as $f
| [range(0; $f | length) as $i
   | ([$f[$i]] + [.emulate.schedule[]? | select(.rank == $i) | .slowdown] | min) as $m
   | $t / (if $m < 1 then 1 else $m end)] as $d
| ($d | add // 0) as $demand
| (first(range(0; 31) | pow(2; .) | select($demand / . <= $cores / 2)) // 1) as $k
| if $k == 1 then .
  else .emulate.slowdown |= map(. * $k)
  | if .emulate.schedule then .emulate.schedule |= map(.slowdown *= $k) else . end
  end
