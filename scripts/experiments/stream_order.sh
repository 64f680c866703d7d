#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What ordering after CUDA's legacy default stream costs per device call (issue 23, item 3):
# gmpi-bench against raw NCCL in the same run, for each GMPI_DEFAULT_STREAM_ORDER value, the
# values alternated pass by pass (the machine is noisy). One rank per GPU.
#   scripts/experiments/stream_order.sh BUILD_DIR OUT_DIR [PASSES [ORDERS [MODES]]]
#   ORDERS: the values compared (default "1 pending memops 0"); MODES: "eager nonblocking"
set -uo pipefail
build=$1 out=$2 passes=${3:-3} orders=${4:-1 pending memops 0} modes=${5:-eager nonblocking}
mkdir -p "$out"
for pass in $(seq "$passes"); do
  for order in $orders; do
    for mode in $modes; do
      flags=(--baseline nccl)
      # a request over raw NCCL polls an event: ncclevent is the nonblocking form's like
      [ $mode = nonblocking ] && flags=(--nonblocking --baseline nccl,ncclevent)
      echo "=== GMPI_DEFAULT_STREAM_ORDER=$order $mode pass $pass"
      GMPI_DEFAULT_STREAM_ORDER=$order scripts/mpirun -n 1 "$build/tools/gmpi-bench" -b 8 -e 64M \
        -f 8 -n 40 --rounds 3 --coll all "${flags[@]}" \
        -J "$out/order_${order}_${mode}_$pass.json"
    done
  done
done
