#!/bin/bash
N=${1:-2000}; R=${2:-3}
for r in $(seq 1 $R); do
  echo "== round $r $(date -u +%H:%M:%S) $(uptime)"
  for code in /work/main/src /work/wt-firing/src; do
    for side in serve tick; do
      PYTHONPATH=$code /work/main/.venv/bin/python /tmp/firing/prod_one.py $side $N 2>&1 | grep RESULT
    done
  done
  for side in peer peer_process; do
    PYTHONPATH=/work/wt-firing/src /work/main/.venv/bin/python /tmp/firing/prod_one.py $side $N 2>&1 | grep RESULT
  done
done
echo "== end $(date -u +%H:%M:%S) $(uptime)"
