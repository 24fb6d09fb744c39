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
echo "\$ nslab bench -q --traffic bulk --variants base,codel --repeat 6 --figure loaded_latency_p99_ns --plot /tmp/queues-codel.png examples/bufferbloat.yaml 2>/dev/null | grep -E '^ +bulk +0|decision'"
nslab bench -q --traffic bulk --variants base,codel --repeat 6 --figure loaded_latency_p99_ns --plot /tmp/queues-codel.png examples/bufferbloat.yaml 2>/dev/null | grep -E '^ +bulk +0|decision'
run nslab destroy --name bloat
echo "@@file queues-codel.png"
base64 -w 0 /tmp/queues-codel.png
echo
