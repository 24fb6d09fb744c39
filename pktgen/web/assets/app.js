// nslab web: updates the lab's drawing from the server's events.
"use strict";

const spark = {}; // link id -> recent packet rates, both ways together
const SPARK_LEN = 60, SPARK_W = 100, SPARK_H = 20;

function fmtRate(pps) {
  if (pps >= 1e6) return (pps / 1e6).toFixed(2) + " Mpps";
  if (pps >= 1e3) return (pps / 1e3).toFixed(1) + " kpps";
  return pps.toFixed(0) + " pps";
}

// The colour of a link: grey when idle, green to orange with the rate
// (log scale up to 1 Mpps), red when it dropped packets.
function linkColour(pps, drops) {
  if (drops > 0) return "#d22";
  if (pps < 1) return "#888";
  const t = Math.min(1, Math.log10(pps) / 6);
  return "hsl(" + Math.round(130 - 100 * t) + ", 70%, 40%)";
}

function updateLinks(byIf) {
  document.querySelectorAll(".link").forEach(function (el) {
    const a = byIf[el.dataset.a], b = byIf[el.dataset.b];
    if (!a || !b) return;
    const n = el.id.split("-")[1];
    const ab = a.tx_pps, ba = b.tx_pps;
    const drops = a.tx_drops + a.qdisc_drops + b.rx_drops + b.tx_drops + b.qdisc_drops + a.rx_drops;
    el.setAttribute("stroke", linkColour(ab + ba, drops));
    const label = document.getElementById("label-" + n);
    label.textContent = fmtRate(ab) + " → · ← " + fmtRate(ba) + (drops > 0 ? " · " + drops + " dropped" : "");
    label.dataset.abPps = ab.toFixed(1);
    label.dataset.baPps = ba.toFixed(1);
    label.dataset.drops = drops;
    const hist = spark[n] = (spark[n] || []).concat([ab + ba]).slice(-SPARK_LEN);
    const top = Math.max(1, Math.max.apply(null, hist));
    const pts = hist.map(function (v, i) {
      return (i * SPARK_W / (SPARK_LEN - 1)).toFixed(1) + "," + (SPARK_H - v / top * SPARK_H).toFixed(1);
    });
    document.getElementById("spark-" + n).setAttribute("points", pts.join(" "));
  });
}

function updateNodes(nodes) {
  nodes.forEach(function (n) {
    const g = document.getElementById("node-" + n.node);
    if (!g) return;
    const rect = g.querySelector("rect");
    // Only a placed node's CPUs are its own: an unplaced node's work runs
    // on whichever CPU sends to it, so it is not coloured.
    rect.setAttribute("fill", n.stopped ? "#cccccc" : n.placed ? "hsl(0, 80%, " + (100 - n.busy_pct / 2).toFixed(0) + "%)" : "#ffffff");
    rect.setAttribute("stroke-dasharray", n.stopped ? "4 3" : "");
    g.dataset.busy = n.placed ? n.busy_pct.toFixed(1) : "";
    g.dataset.stopped = n.stopped ? "yes" : "";
    let title = g.querySelector("title");
    if (!title) { title = document.createElementNS("http://www.w3.org/2000/svg", "title"); g.appendChild(title); }
    const cpu = n.placed ? "CPUs " + n.cpus + " " + n.busy_pct.toFixed(0) + "% busy" : "not placed (its work runs on the CPU that sends to it)";
    title.textContent = n.node + (n.stopped ? " (STOPPED: links down, processes stopped)" : "") + ": " + cpu + ", forwarded " + fmtRate(n.forwarded_pps) + ", " + n.discards + " IP discards";
  });
}

function updateCPUs(view) {
  const el = document.getElementById("cpus");
  el.textContent = "";
  view.cpu.forEach(function (c, i) {
    const s = document.createElement("span");
    const sn = view.softnet[i] || {dropped: 0};
    const busy = 100 - c.idle;
    s.textContent = c.cpu + ": " + busy.toFixed(0) + "% busy, softirq " + c.soft.toFixed(0) + "%, steal " + c.steal.toFixed(0) + "%, backlog drops " + sn.dropped;
    el.appendChild(s);
  });
}

function updateBench(b) {
  const el = document.getElementById("bench"), rep = document.getElementById("report");
  if (!b) return;
  let line = "bench (pid " + b.pid + ") " + (b.running ? "running" : "ended") + ": " + b.traffic;
  if (b.last && b.last.hops && b.last.hops.length) {
    const h = b.last.hops[b.last.hops.length - 1];
    line += ", " + b.last.frame + "-byte frames, " + b.last.at.toFixed(1) + " s in: " + h.node + ":" + h.interface + " received " + fmtRate(h.rx_pps);
  }
  if (b.end) {
    if (b.end.error) line += "\nfailed: " + b.end.error;
    (b.end.verdicts || []).forEach(function (v) { line += "\nverdict: " + v; });
    rep.textContent = b.end.report || "";
    rep.hidden = !b.end.report;
  }
  el.textContent = line;
  el.className = b.running ? "running" : "";
}

function onView(view) {
  const byIf = {};
  view.interfaces.forEach(function (i) { byIf[i.node + ":" + i.interface] = i; });
  updateLinks(byIf);
  updateNodes(view.nodes);
  updateCPUs(view);
  updateBench(view.bench);
  const st = document.getElementById("state");
  st.className = "";
  st.textContent = "sampled " + new Date(view.time).toLocaleTimeString() + " over " + view.interval.toFixed(2) + " s";
  document.body.dataset.views = String(Number(document.body.dataset.views || 0) + 1);
}

const events = new EventSource("/events");
events.onmessage = function (e) {
  const m = JSON.parse(e.data);
  if (m.type === "view") onView(m.view);
  else if (m.type === "reload") location.reload();
  else if (m.type === "error") {
    const st = document.getElementById("state");
    st.className = "gone";
    st.textContent = "a reading failed: " + m.error;
  }
  else if (m.type === "gone") {
    const st = document.getElementById("state");
    st.className = "gone";
    st.textContent = "the lab was destroyed";
  }
};
