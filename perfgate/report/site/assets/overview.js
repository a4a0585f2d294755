// perfgate dashboard: the overview table. Data comes from the page's JSON block and is inserted as text
// (textContent, attributes of created elements); nothing from the data is parsed as HTML.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("perfgate-data").textContent);
  const rows = data.cases;
  const tbody = document.querySelector("#cases tbody");
  const nameInput = document.getElementById("filter-name");
  const verdictSelect = document.getElementById("filter-verdict");
  const deviceSelect = document.getElementById("filter-device");
  const shown = document.getElementById("shown");
  const SVG = "http://www.w3.org/2000/svg";
  const PAGE = 250; // rows are built when first shown: 10,000 cases load as fast as 250
  let sortKey = "rank";
  let sortDir = 1;
  let limit = PAGE;

  function addOption(select, value) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = value;
    select.appendChild(o);
  }

  function pct(v) {
    if (v === null || v === undefined) return "-";
    return Math.abs(v) < 0.05 ? "0.0%" : (v > 0 ? "+" : "") + v.toFixed(1) + "%";
  }

  function bytes(v) {
    if (v === null || v === undefined) return "-";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return (i ? v.toFixed(1) : String(v)) + " " + units[i];
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function link(parent, href, text) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    parent.appendChild(a);
    return a;
  }

  function sparkline(values) {
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 100 24");
    svg.setAttribute("class", "spark");
    svg.setAttribute("role", "img");
    const finite = values.filter((v) => v !== null);
    if (finite.length > 1) {
      const lo = Math.min(...finite);
      const span = Math.max(...finite) - lo || 1;
      const step = 100 / (values.length - 1);
      const pts = [];
      values.forEach((v, i) => {
        if (v !== null) pts.push((i * step).toFixed(1) + "," + (22 - ((v - lo) / span) * 20).toFixed(1));
      });
      const line = document.createElementNS(SVG, "polyline");
      line.setAttribute("points", pts.join(" "));
      svg.appendChild(line);
    }
    const title = document.createElementNS(SVG, "title");
    title.textContent = "last " + values.length + " run medians";
    svg.appendChild(title);
    return svg;
  }

  function buildRow(r) {
    const tr = document.createElement("tr");
    tr.className = "verdict-" + r.verdict.replace(/[^a-z]+/g, "-");
    link(cell(tr, ""), r.href, r.case).className = "case-link";
    cell(tr, r.device || "-");
    cell(tr, r.verdict, "verdict");
    cell(tr, pct(r.change), "num");
    cell(tr, r.detects === null ? "-" : "\u2265 " + r.detects.toFixed(1) + "%", "num");
    cell(tr, r.speedup === null ? "-" : r.speedup.toFixed(2) + "x" + (r.reference ? " vs " + r.reference : ""),
      "num");
    cell(tr, bytes(r.peak), "num");
    cell(tr, "").appendChild(sparkline(r.spark));
    const cp = cell(tr, r.changes ? String(r.changes) : "-", "num");
    if (r.lastChange) cp.title = "latest: " + r.lastChange;
    const run = cell(tr, "");
    link(run, r.runHref, "#" + r.run);
    run.appendChild(document.createTextNode(" " + r.date + " "));
    if (r.commit && /^https?:\/\//.test(data.repo || "") && /^[0-9a-f]{7,64}$/.test(r.commit)) {
      link(run, data.repo + "/commit/" + r.commit, r.commit.slice(0, 8)).className = "commit";
    } else if (r.commit) {
      run.appendChild(document.createTextNode(r.commit.slice(0, 8)));
    }
    return tr;
  }

  function compare(a, b) {
    let x = a[sortKey];
    let y = b[sortKey];
    if (sortKey === "rank" && x === y) {
      x = -Math.abs(a.change || 0);
      y = -Math.abs(b.change || 0);
    }
    if (x === y) return a.case < b.case ? -1 : a.case > b.case ? 1 : 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * sortDir;
  }

  const items = rows.map((r) => ({ r: r, tr: null }));
  const more = document.createElement("button");
  more.type = "button";
  more.id = "more";
  more.hidden = true;
  document.getElementById("cases").after(more);
  more.addEventListener("click", () => { limit += PAGE * 4; render(); });

  function render() {
    const name = nameInput.value.trim().toLowerCase();
    const verdict = verdictSelect.value;
    const device = deviceSelect.value;
    const visible = items.filter((it) => (!name || it.r.case.toLowerCase().includes(name))
      && (!verdict || it.r.verdict === verdict) && (!device || it.r.device === device));
    visible.sort((p, q) => compare(p.r, q.r));
    const page = visible.slice(0, limit);
    page.forEach((it) => { if (!it.tr) it.tr = buildRow(it.r); });
    tbody.replaceChildren(...page.map((it) => it.tr));
    shown.textContent = visible.length + " of " + rows.length + " shown";
    more.hidden = visible.length <= limit;
    more.textContent = "show " + Math.min(PAGE * 4, visible.length - limit) + " more of " + (visible.length - limit);
    document.querySelectorAll("#cases th[data-key]").forEach((th) => {
      th.setAttribute("aria-sort", th.dataset.key === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none");
    });
  }

  Array.from(new Set(rows.map((r) => r.verdict))).sort().forEach((v) => addOption(verdictSelect, v));
  data.devices.forEach((d) => addOption(deviceSelect, d));
  const query = new URLSearchParams(window.location.search);
  nameInput.value = query.get("case") || "";
  if (query.get("verdict")) verdictSelect.value = query.get("verdict");
  if (query.get("device")) deviceSelect.value = query.get("device");
  const refilter = () => { limit = PAGE; render(); };
  nameInput.addEventListener("input", refilter);
  verdictSelect.addEventListener("change", refilter);
  deviceSelect.addEventListener("change", refilter);
  document.querySelectorAll("#cases th[data-key]").forEach((th) => {
    th.addEventListener("click", () => {
      sortDir = th.dataset.key === sortKey ? -sortDir : 1;
      sortKey = th.dataset.key;
      render();
    });
  });
  render();
  document.body.dataset.ready = "true";
})();
