#!/bin/sh
# The laptop lab walk-through with a WAN's delay: build
# examples/laptop-lab.yaml, give its WAN link 20 ms each way, look at it,
# measure the link, capture on it, change it at run time, tear it down. Run
# as root from the repository on a kernel with netem (make walkthrough runs
# it in the VM, whose kernel has it); docs/tutorials/laptop-lab.md is the
# same lab without the delay, on any kernel.
set -e
cd "$(dirname "$0")/.."
run() { echo "\$ $*"; "$@"; }
runs() { echo "\$ $*"; "$@" || true; } # a step whose failure is the point

run nslab graph examples/laptop-lab.yaml
run nslab deploy examples/laptop-lab.yaml
run nslab impair router:wan0 --delay 20ms --rate 10Mbit
run nslab impair server:eth0 --delay 20ms --rate 10Mbit
run nslab exec client -- ping -c 4 -W 2 203.0.113.2
run nslab exec client -- wget -q -O - http://203.0.113.2/
echo "\$ nslab capture router:wan0 -w /tmp/wan.pcap -c 10 &"
nslab capture router:wan0 -w /tmp/wan.pcap -c 10 &
sleep 1
run nslab exec client -- wget -q -O /dev/null http://203.0.113.2/1M
wait
run tcpdump -tt -nr /tmp/wan.pcap
run nslab bench -q --traffic wan examples/laptop-lab.yaml
run nslab impair router:wan0 --delay 100ms --loss 5%
run nslab exec client -- ping -c 4 -W 2 203.0.113.2
run nslab link down router:wan0
runs nslab check examples/laptop-lab.yaml
run nslab link up router:wan0
run nslab impair router:wan0 --delay 20ms --rate 10Mbit
run nslab inspect --name laptop
run nslab destroy --name laptop
