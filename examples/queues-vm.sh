#!/bin/sh
# The fq_codel part of docs/tutorials/queues.md: the bufferbloat example's
# FIFO against fq_codel, which our machines' kernel lacks. make tutorials
# runs it in the VM (Debian's kernel) and takes its outputs from the
# transcript; the plot comes back on the console, base64 after a line
# "@@file NAME", which make tutorials decodes into docs/tutorials.
set -e
cd "$(dirname "$0")/.."
run() { echo "\$ $*"; "$@"; }

run nslab deploy examples/bufferbloat.yaml
# The bench's output goes through a file, not a pipe: in the VM a pipe
# to grep was left open (by a helper nslab runs, still to find) and the
# script hung at 2 runs out of 3; the lines are the same.
echo "\$ nslab bench --traffic bulk --variants base,codel --repeat 6 --figure loaded_latency_p99_ns --plot /tmp/queues-codel.png examples/bufferbloat.yaml 2>/dev/null | sed -n '/^decision/,/^  bootstrap/p;/^traffic bulk:/,\$p'"
nslab bench --traffic bulk --variants base,codel --repeat 6 --figure loaded_latency_p99_ns --plot /tmp/queues-codel.png examples/bufferbloat.yaml > /tmp/bench.out 2>/tmp/bench.err || { tail -20 /tmp/bench.err; exit 1; }
sed -n '/^decision/,/^  bootstrap/p;/^traffic bulk:/,$p' /tmp/bench.out
run nslab destroy --name bloat
echo "@@file queues-codel.png"
base64 -w 0 /tmp/queues-codel.png
echo
