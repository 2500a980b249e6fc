#!/bin/bash
# alternating main / branch, rounds given
N=${1:-10000}; S=${2:-15}; R=${3:-3}
for r in $(seq 1 $R); do
  for side in /work/main/src /work/wt-firing/src; do
    echo "== round $r side $side $(date -u +%H:%M:%S) $(uptime)"
    PYTHONPATH=$side /work/main/.venv/bin/python /tmp/firing/neigh_one.py $N $S 2>&1 | grep -E "RESULT|neighbours|Error|error" | tail -5
  done
done
