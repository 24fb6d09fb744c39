"""Builds a lab with Mininet's Python API and stops it (make bench-peers).

Reads the lab as JSON on stdin (nodes with their interfaces, addresses,
forwarding and routes; links as [node, interface, node, interface]),
builds it as Mininet builds its own topologies (a host per node, a veth
pair per link, named NODE-INTERFACE as Mininet names them), gives each
host its addresses, forwarding and routes in one shell command, then
stops the network. Prints {"up_s": ..., "down_s": ...}: from Mininet() to
the last route, and around net.stop().
"""

import json
import sys
import time

from mininet.log import setLogLevel
from mininet.net import Mininet


def main():
    lab = json.load(sys.stdin)
    setLogLevel("error")
    t0 = time.monotonic()
    net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False, waitConnected=False)
    try:
        hosts = {n["name"]: net.addHost(n["name"], ip=None) for n in lab["nodes"]}
        for a, ai, b, bi in lab["links"]:
            net.addLink(hosts[a], hosts[b], intfName1=f"{a}-{ai}", intfName2=f"{b}-{bi}")
        net.build()
        for n in lab["nodes"]:
            cmds = []
            for i in n["interfaces"]:
                for addr in i["addresses"] or []:
                    dev = "lo" if i["name"] == "lo" else f"{n['name']}-{i['name']}"
                    cmds.append(f"ip addr add {addr} dev {dev}")
            if n["forwarding"]:
                cmds.append("sysctl -qw net.ipv4.ip_forward=1")
            for to, via in n["routes"] or []:
                cmds.append(f"ip route add {to} via {via}")
            out = hosts[n["name"]].cmd(" && ".join(cmds + ["echo configured"]))
            if "configured" not in out:
                raise SystemExit(f"{n['name']}: {out}")
        t1 = time.monotonic()
    finally:
        t_stop = time.monotonic()
        net.stop()
        t2 = time.monotonic()
    print(json.dumps({"up_s": t1 - t0, "down_s": t2 - t_stop}))


if __name__ == "__main__":
    main()
