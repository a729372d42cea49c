#!/usr/bin/env bash
# Runs a command while SPINNERS node processes (default 1) each keep a core busy, as a loaded CI machine or a
# busy neighbour would. The spinners are always killed when this script exits, by their own process ids,
# whether the command passed, failed or was interrupted.
#
#   scripts/test-under-load.sh                                   # npm test beside one spinner
#   SPINNERS=3 scripts/test-under-load.sh npx jest test/etcd --maxWorkers=1
set -u

spinners=()
stop_spinners() {
  for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${spinners[@]}"; do wait "$pid" 2>/dev/null; done
  spinners=()
}
trap stop_spinners EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

count="${SPINNERS:-1}"
for ((i = 0; i < count; i++)); do
  node -e 'for (;;) {}' &
  spinners+=("$!")
done
echo "test-under-load: ${count} spinning node process(es): ${spinners[*]}" >&2

if [ "$#" -eq 0 ]; then set -- npm test; fi
"$@"
