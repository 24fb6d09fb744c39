// nslab web: updates the lab's drawing, its links' charts and the bench's
// panel from the server's events. Every figure on the page is one of the
// view's (the server's sampler): a link's labels and chart are its two
// interfaces' transmit rates, a drop badge is an interface's drops in the
// interval, and the bench's line is its receiver's receive rate.
"use strict";

const CHART_POINTS = 600; // as many views as the server keeps
const CHART_MIN = 120; // the narrowest window drawn: a chart fills from the left as views come
const CHART_W = 600, CHART_H = 180, PAD_L = 4, PAD_T = 14, PAD_B = 16;
const history = {}; // link number -> [{t, ab, ba, drops}]
const SVGNS = "http://www.w3.org/2000/svg";

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

function drops(i) { return i.rx_drops + i.tx_drops + i.qdisc_drops; }

// badge shows the packets dropped at one end of a link in the interval
// of secs seconds.
function badge(id, n, secs) {
  const g = document.getElementById(id);
  if (!g) return;
  g.dataset.count = String(n);
  g.setAttribute("visibility", n > 0 ? "visible" : "hidden");
  g.querySelector(".count").textContent = n > 0 ? n + " dropped in " + secs.toFixed(2) + " s" : "";
}

function chartCard(n, el) {
  let card = document.getElementById("chart-" + n);
  if (card) return card;
  card = document.createElement("div");
  card.className = "chart panel";
  card.id = "chart-" + n;
  const h = document.createElement("h3");
  h.textContent = el.dataset.a + " ⇄ " + el.dataset.b;
  const legend = document.createElement("div");
  legend.className = "legend";
  legend.innerHTML = '<span class="ab"></span><span class="ba"></span><span class="dr"></span>';
  const svg = document.createElementNS(SVGNS, "svg");
  svg.setAttribute("viewBox", "0 0 " + CHART_W + " " + CHART_H);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.innerHTML = '<g class="bars" fill="#d22"></g>' +
    '<polyline class="ab" fill="none" stroke="#1f6fd1" stroke-width="2" vector-effect="non-scaling-stroke"/>' +
    '<polyline class="ba" fill="none" stroke="#d97a00" stroke-width="2" vector-effect="non-scaling-stroke"/>' +
    '<line x1="0" x2="' + CHART_W + '" y1="' + (CHART_H - PAD_B) + '" y2="' + (CHART_H - PAD_B) + '" stroke="#bbb"/>';
  const axis = document.createElement("div");
  axis.className = "legend";
  axis.innerHTML = '<span class="top"></span><span class="span" style="margin-left:auto"></span>';
  card.append(h, legend, svg, axis);
  document.getElementById("charts").appendChild(card);
  return card;
}

// drawChart draws link n's last minutes: its rate each way as lines on
// one scale, and its drops in each interval as red bars on their own.
function drawChart(n, el) {
  const card = chartCard(n, el), hist = history[n];
  const last = hist[hist.length - 1];
  const top = Math.max(1, ...hist.map(p => Math.max(p.ab, p.ba)));
  const topDrops = Math.max(1, ...hist.map(p => p.drops));
  const span = Math.max(CHART_MIN, hist.length);
  const x = i => PAD_L + i * (CHART_W - PAD_L) / (span - 1);
  const y = v => PAD_T + (CHART_H - PAD_T - PAD_B) * (1 - v / top);
  const off = 0;
  const line = key => hist.map((p, i) => x(off + i).toFixed(1) + "," + y(p[key]).toFixed(1)).join(" ");
  const svg = card.querySelector("svg");
  svg.querySelector("polyline.ab").setAttribute("points", line("ab"));
  svg.querySelector("polyline.ba").setAttribute("points", line("ba"));
  const bars = svg.querySelector(".bars");
  bars.textContent = "";
  hist.forEach(function (p, i) {
    if (p.drops <= 0) return;
    const r = document.createElementNS(SVGNS, "rect"), hgt = Math.max(2, (CHART_H - PAD_T - PAD_B) * p.drops / topDrops);
    r.setAttribute("x", (x(off + i) - 1.5).toFixed(1));
    r.setAttribute("width", "3");
    r.setAttribute("y", (CHART_H - PAD_B - hgt).toFixed(1));
    r.setAttribute("height", hgt.toFixed(1));
    bars.appendChild(r);
  });
  const spans = card.querySelectorAll(".legend span");
  spans[0].textContent = "→ " + fmtRate(last.ab);
  spans[1].textContent = "← " + fmtRate(last.ba);
  spans[2].textContent = last.drops > 0 ? "✕ " + last.drops + " dropped in the last interval" : "no drops in the last interval";
  spans[3].textContent = "top " + fmtRate(top) + (topDrops > 1 ? ", drops up to " + topDrops + " an interval" : "");
  const secs = (last.t - hist[0].t) / 1000;
  spans[4].textContent = secs >= 90 ? "last " + (secs / 60).toFixed(1) + " min" : "last " + secs.toFixed(0) + " s";
  card.dataset.abPps = last.ab.toFixed(1);
  card.dataset.baPps = last.ba.toFixed(1);
  card.dataset.drops = String(last.drops);
  card.dataset.points = String(hist.length);
}

function updateLinks(byIf, t, secs) {
  document.querySelectorAll(".link").forEach(function (el) {
    const a = byIf[el.dataset.a], b = byIf[el.dataset.b];
    if (!a || !b) return;
    const n = el.id.split("-")[1];
    const ab = a.tx_pps, ba = b.tx_pps, da = drops(a), db = drops(b), both = da + db;
    el.setAttribute("stroke", linkColour(ab + ba, both));
    const label = document.getElementById("label-" + n), back = document.getElementById("label-" + n + "-ba");
    label.textContent = fmtRate(ab) + " →";
    back.textContent = "← " + fmtRate(ba);
    label.dataset.abPps = ab.toFixed(1);
    label.dataset.baPps = ba.toFixed(1);
    label.dataset.drops = String(both);
    badge("drop-" + n + "-a", da, secs);
    badge("drop-" + n + "-b", db, secs);
    history[n] = (history[n] || []).concat([{t: t, ab: ab, ba: ba, drops: both}]).slice(-CHART_POINTS);
    drawChart(n, el);
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
    const d = document.getElementById("discard-" + n.node);
    if (d) {
      d.dataset.count = String(n.discards);
      d.setAttribute("visibility", n.discards > 0 ? "visible" : "hidden");
      d.textContent = n.discards > 0 ? "✕ " + n.discards + " IP discards" : "";
    }
    let title = g.querySelector("title");
    if (!title) { title = document.createElementNS(SVGNS, "title"); g.appendChild(title); }
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
    s.className = "chip" + (sn.dropped > 0 ? " drops" : "");
    s.textContent = c.cpu + " " + (100 - c.idle).toFixed(0) + "% busy · softirq " + c.soft.toFixed(0) + "% · steal " + c.steal.toFixed(0) + "% · backlog drops " + sn.dropped;
    el.appendChild(s);
  });
}

// updateBench shows the bench that runs on the lab: its receiver's rate
// now, as this page's sampler read it (the same figure as the receiver's
// link), then its verdicts, what it measured (the lab file and its
// SHA-256, nslab's version) and its report.
function updateBench(b, byIf) {
  const panel = document.getElementById("bench"), line = document.getElementById("bench-line");
  if (!b) return;
  line.textContent = "";
  line.append("pid " + b.pid + " " + (b.running ? "running" : "ended") + ": traffic " + b.traffic);
  if (b.running && b.last && b.last.hops && b.last.hops.length) {
    const h = b.last.hops[b.last.hops.length - 1], rx = byIf[h.node + ":" + h.interface];
    line.append(document.createElement("br"), b.last.frame + "-byte frames, " + b.last.at.toFixed(1) + " s in; " + h.node + ":" + h.interface + " receives ");
    const fig = document.createElement("b");
    fig.id = "bench-rate";
    fig.textContent = rx ? fmtRate(rx.rx_pps) : "?";
    fig.dataset.pps = rx ? rx.rx_pps.toFixed(1) : "";
    line.append(fig);
  }
  const list = document.getElementById("verdicts"), box = document.getElementById("report-box");
  list.textContent = "";
  if (b.end) {
    if (b.end.error) { const li = document.createElement("li"); li.textContent = "failed: " + b.end.error; list.appendChild(li); }
    (b.end.verdicts || []).forEach(function (v) { const li = document.createElement("li"); li.textContent = v; list.appendChild(li); });
    const id = [];
    if (b.end.lab_file) id.push("lab " + b.end.lab + " from " + b.end.lab_file);
    if (b.end.lab_sha256) id.push("sha256 " + b.end.lab_sha256);
    if (b.end.nslab) id.push(b.end.nslab);
    document.getElementById("identity").textContent = id.join("\n");
    document.getElementById("identity").style.whiteSpace = "pre-line";
    if (box.hidden && b.end.report) box.open = true;
    document.getElementById("report").textContent = b.end.report || "";
    box.hidden = !b.end.report;
  } else {
    document.getElementById("identity").textContent = "";
    box.hidden = true;
  }
  panel.className = "panel" + (b.running ? " running" : "");
}

function onView(view) {
  const byIf = {};
  view.interfaces.forEach(function (i) { byIf[i.node + ":" + i.interface] = i; });
  updateLinks(byIf, Date.parse(view.time), view.interval);
  updateNodes(view.nodes);
  updateCPUs(view);
  updateBench(view.bench, byIf);
  const st = document.getElementById("state");
  st.className = "";
  st.textContent = "sampled " + new Date(view.time).toLocaleTimeString() + " over " + view.interval.toFixed(2) + " s";
  document.body.dataset.viewTime = view.time;
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
