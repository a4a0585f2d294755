// perfgate dashboard: one case's charts (uPlot, vendored) and its runs. Data comes from the page's JSON
// block and is inserted as text; every point opens its run's page.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("perfgate-data").textContent);
  const tooltip = document.getElementById("tooltip");
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const xAxis = document.getElementById("x-axis");
  const logScale = document.getElementById("log-scale");
  const view = { x: "run", log: false }; // the charts' x-axis labels and y scale, from the two controls

  // a commit links to the repository's page for it when the site knows the repository (repo_url)
  function commitLink(parent, commit) {
    const c = commit || "";
    if (/^https?:\/\//.test(data.repo || "") && /^[0-9a-f]{7,64}$/.test(c)) {
      const a = el("a", c.slice(0, 12), "commit");
      a.href = data.repo + "/commit/" + c;
      a.rel = "noopener";
      parent.appendChild(a);
    } else {
      parent.appendChild(document.createTextNode(c.slice(0, 12) || "-"));
    }
  }

  function xLabel(d, i) {
    if (d.runs.id[i] === undefined) return "";
    if (view.x === "commit") return d.runs.commit[i] ? d.runs.commit[i].slice(0, 8) : "-";
    if (view.x === "date") return (d.runs.date[i] || "").slice(5, 16);
    return "#" + d.runs.id[i];
  }

  // the axis labels drawn last, kept on the chart's box (the canvas holds them only as pixels)
  function ticks(box, name, labels) {
    box.dataset[name] = labels.filter((l) => l).join(" | ");
    return labels;
  }

  // on a log scale a value <= 0 has no place: a gap
  function positive(values) {
    return view.log ? values.map((v) => (v !== null && v > 0 ? v : null)) : values;
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  function fmt(v, unit) {
    if (v === null || v === undefined) return "-";
    if (unit === "ms") {
      if (v < 1) return (v * 1000).toPrecision(4) + " us";
      return v.toPrecision(4) + " ms";
    }
    if (unit === "x") return v.toFixed(3) + "x";
    if (unit === "byte") {
      const units = ["B", "KiB", "MiB", "GiB", "TiB"];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
      return (i ? v.toFixed(1) : String(v)) + " " + units[i];
    }
    return (Math.abs(v) >= 1e6 ? v.toPrecision(4) : String(Number(v.toPrecision(4)))) + (unit ? " " + unit : "");
  }

  function runHref(runId) {
    return "../run/" + Number(runId) + ".html";
  }

  // autotune choices are interned: a list of distinct strings and, per run, an index (-1: none)
  function autotune(d, i) {
    const k = d.autotune.index[i];
    return k >= 0 ? d.autotune.values[k] : "";
  }

  function details(d, i) {
    const r = d.runs;
    const lines = ["run #" + r.id[i] + (r.calibration[i] ? " (calibration process)" : ""),
      "commit " + (r.commit[i] || "-") + (r.branch[i] ? " on " + r.branch[i] : ""), r.date[i] || "",
      "time " + fmt(d.time.median[i], "ms")];
    if (d.time.confirmations[i].length) {
      lines.push("confirmation processes: " + d.time.confirmations[i].map((v) => fmt(v, "ms")).join(", "));
    }
    if (d.speedup && d.speedup.value[i] !== null) lines.push("speedup " + fmt(d.speedup.value[i], "x"));
    if (d.memory && d.memory[i] !== null) lines.push("peak memory " + fmt(d.memory[i], "byte"));
    const g = d.gpu;
    if (g.clock[i] !== null || g.throttled[i] !== null) {
      lines.push("GPU: " + fmt(g.clock[i], "MHz") + ", " + fmt(g.power[i], "W") + ", " + fmt(g.temperature[i], "C")
        + ", throttled " + (g.throttled[i] === null ? "-" : (100 * g.throttled[i]).toFixed(0) + "%"));
    }
    const tuned = autotune(d, i);
    if (tuned) lines.push("autotune: " + tuned);
    return lines;
  }

  function showTooltip(d, u) {
    const i = u.cursor.idx;
    if (i === null || i === undefined || u.cursor.left < 0) { tooltip.hidden = true; return; }
    tooltip.replaceChildren(...details(d, i).map((line) => el("div", line)));
    const box = u.over.getBoundingClientRect();
    tooltip.style.left = Math.min(window.scrollX + box.left + u.cursor.left + 14, window.scrollX + window.innerWidth - 330) + "px";
    tooltip.style.top = (window.scrollY + box.top + u.cursor.top + 14) + "px";
    tooltip.hidden = false;
  }

  function drawChanges(d, u) {
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = "#d62728";
    ctx.fillStyle = "#d62728";
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
    ctx.font = (11 * devicePixelRatio) + "px sans-serif";
    d.changes.forEach((c) => {
      const x = Math.round(u.valToPos(c.index - 0.5, "x", true));
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.fillText("time " + (c.pct > 0 ? "+" : "") + c.pct.toFixed(1) + "%", x + 4 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
    });
    ctx.restore();
  }

  function pointsOnly(label, stroke, size, fill) {
    return { label: label, stroke: stroke, fill: fill, width: 0, paths: () => null,
      points: { show: true, size: size, stroke: stroke, fill: fill, width: 1.5 } };
  }

  // values: one per run (null: absent); extra: {confirmations, band: {centre, threshold}, unit, lines}
  function chart(parent, d, title, unit, values, extra) {
    const n = d.runs.id.length;
    const xs = Array.from({ length: n }, (_, i) => i);
    const series = [{ label: "run" }];
    const cols = [xs];
    const bands = [];
    (extra.lines || [{ label: title, values: values }]).forEach((line, k) => {
      series.push({ label: line.label, stroke: COLORS[k % COLORS.length], width: 1.5, spanGaps: true,
        points: { show: true, size: 5, fill: COLORS[k % COLORS.length] } });
      cols.push(positive(line.values));
    });
    if (!extra.lines && d.runs.calibration.some((c) => c)) {
      series.push(pointsOnly("calibration", "#9467bd", 10, "rgba(255,255,255,0)"));
      cols.push(positive(values.map((v, i) => (d.runs.calibration[i] ? v : null))));
    }
    const conf = extra.confirmations || [];
    const depth = conf.reduce((m, c) => Math.max(m, c.length), 0);
    for (let j = 0; j < depth; j += 1) {
      series.push(pointsOnly("confirmation " + (j + 1), "#ff7f0e", 5, "#ff7f0e"));
      cols.push(positive(conf.map((c) => (c.length > j ? c[j] : null))));
    }
    const band = extra.band;
    if (band && band.centre !== null && band.threshold !== null && band.threshold !== undefined) {
      const t = band.threshold / 100;
      series.push({ label: "baseline", stroke: "#2ca02c", width: 1, dash: [6, 4], points: { show: false } });
      cols.push(xs.map(() => band.centre));
      series.push({ label: "+" + band.threshold.toFixed(1) + "%", stroke: "rgba(44,160,44,0.35)", width: 1,
        points: { show: false } });
      cols.push(xs.map(() => band.centre * (1 + t)));
      series.push({ label: "-" + band.threshold.toFixed(1) + "%", stroke: "rgba(44,160,44,0.35)", width: 1,
        points: { show: false } });
      cols.push(positive(xs.map(() => band.centre * (1 - t))));
      bands.push({ series: [series.length - 2, series.length - 1], fill: "rgba(44,160,44,0.12)" });
    }
    const box = el("div", null, "chart");
    box.dataset.metric = title;
    box.dataset.scale = view.log ? "log" : "linear";
    parent.appendChild(box);
    const width = Math.max(280, Math.min(1100, parent.clientWidth || 900));
    const opts = {
      title: title + (view.log ? " (log scale)" : ""), width: width, height: 230, series: series, bands: bands,
      scales: { x: { time: false }, y: view.log ? { distr: 3, log: 10 } : {} },
      axes: [
        { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], space: view.x === "run" ? 50 : 80,
          values: (u, splits) => ticks(box, "xticks", splits.map((i) => xLabel(d, i))) },
        { size: 80, values: (u, splits) => ticks(box, "yticks", splits.map((v) => (v === null ? "" : fmt(v, unit)))) },
      ],
      legend: { live: false },
      hooks: { draw: [(u) => drawChanges(d, u)], setCursor: [(u) => showTooltip(d, u)] },
    };
    const u = new uPlot(opts, cols, box);
    u.over.addEventListener("click", () => {
      const i = u.cursor.idx;
      if (i !== null && i !== undefined) window.location.href = runHref(d.runs.id[i]);
    });
    u.over.addEventListener("mouseleave", () => { tooltip.hidden = true; });
    const plotted = (extra.lines || [{ values: values }]).reduce((s, l) => s + l.values.filter((v) => v !== null).length, 0);
    box.dataset.points = String(plotted);
    return u;
  }

  function latestTable(d) {
    const t = el("table", null, "latest");
    const head = el("tr");
    ["latest run's metric", "verdict", "change", "detects"].forEach((h) => head.appendChild(el("th", h)));
    t.appendChild(head);
    d.latest.forEach((row) => {
      const tr = el("tr", null, "verdict-" + row.verdict.replace(/[^a-z]+/g, "-"));
      tr.appendChild(el("td", row.metric));
      tr.appendChild(el("td", row.verdict, "verdict"));
      tr.appendChild(el("td", row.change === null ? "-" : (row.change > 0 ? "+" : "") + row.change.toFixed(1) + "%", "num"));
      tr.appendChild(el("td", row.detects === null ? "-" : "\u2265 " + row.detects.toFixed(1) + "%", "num"));
      t.appendChild(tr);
    });
    return t;
  }

  function runLink(d, runId, commit) {
    const span = el("span");
    const a = el("a", "#" + runId);
    a.href = runHref(runId);
    span.appendChild(a);
    if (commit) {
      span.appendChild(document.createTextNode(" ("));
      commitLink(span, commit);
      span.appendChild(document.createTextNode(")"));
    }
    return span;
  }

  function changeList(d) {
    const ul = el("ul", null, "changes");
    d.changes.forEach((c) => {
      const li = el("li", (c.pct > 0 ? "slower " : "faster ") + (c.pct > 0 ? "+" : "") + c.pct.toFixed(1) + "% between ");
      li.appendChild(runLink(d, c.before.run, c.before.commit));
      li.appendChild(document.createTextNode(" (last before) and "));
      li.appendChild(runLink(d, c.after.run, c.after.commit));
      li.appendChild(document.createTextNode(" (first after)"));
      ul.appendChild(li);
    });
    return ul;
  }

  function runsTable(d) {
    const box = el("details", null, "runs");
    box.appendChild(el("summary", "All " + d.runs.id.length + " runs"));
    const t = el("table");
    const head = el("tr");
    ["run", "commit", "branch", "date", "kind", "time", "confirmations", "speedup", "peak memory", "throttled",
      "autotune"].forEach((h) => head.appendChild(el("th", h)));
    t.appendChild(head);
    d.runs.id.forEach((id, i) => {
      const tr = el("tr");
      const first = el("td");
      const a = el("a", "#" + id);
      a.href = runHref(id);
      first.appendChild(a);
      tr.appendChild(first);
      const c = el("td");
      commitLink(c, d.runs.commit[i]);
      tr.appendChild(c);
      tr.appendChild(el("td", d.runs.branch[i] || "-"));
      tr.appendChild(el("td", d.runs.date[i] || "-"));
      tr.appendChild(el("td", d.runs.calibration[i] ? "calibration" : "gate"));
      tr.appendChild(el("td", fmt(d.time.median[i], "ms"), "num"));
      tr.appendChild(el("td", d.time.confirmations[i].map((v) => fmt(v, "ms")).join(", ") || "-"));
      tr.appendChild(el("td", d.speedup ? fmt(d.speedup.value[i], "x") : "-", "num"));
      tr.appendChild(el("td", d.memory ? fmt(d.memory[i], "byte") : "-", "num"));
      const th = d.gpu.throttled[i];
      tr.appendChild(el("td", th === null ? "-" : (100 * th).toFixed(0) + "%", "num"));
      tr.appendChild(el("td", autotune(d, i) || "-"));
      t.appendChild(tr);
    });
    box.appendChild(wide(t));
    return box;
  }

  function wide(table) {
    const w = el("div", null, "wide");
    w.appendChild(table);
    return w;
  }

  function dims(v) {
    if (!v) return "?";
    const s = v.slice();
    while (s.length > 1 && s[s.length - 1] === 1) s.pop();
    return s.join("x");
  }

  // the compiled kernels of the latest run that recorded them, and the runs where their facts changed
  function kernelsBox(d) {
    const k = d.kernels;
    const box = el("details", null, "kernels");
    box.open = true;
    box.appendChild(el("summary", "Compiled kernels (" + k.kernels.length + ", run #" + k.run + ")"));
    const t = el("table", null, "kernels");
    const head = el("tr");
    ["kernel", "registers", "spills", "shared memory", "block x grid", "warps / stages", "occupancy", "SASS"]
      .forEach((h) => head.appendChild(el("th", h)));
    t.appendChild(head);
    k.kernels.forEach((x) => {
      const tr = el("tr");
      tr.appendChild(el("td", x.key + (x.launches > 1 ? " x" + x.launches : "") + (x.source === "library" ? " (library)" : ""), "kernel"));
      tr.appendChild(el("td", x.registers === null ? "-" : String(x.registers), "num"));
      tr.appendChild(el("td", x.spills === null ? "-" : x.spills + " B", "num"));
      tr.appendChild(el("td", fmt(x.shared, "byte"), "num"));
      tr.appendChild(el("td", x.block ? dims(x.block) + " x " + dims(x.grid) : "-", "num"));
      tr.appendChild(el("td", (x.warps === null ? "-" : x.warps) + " / " + (x.stages === null ? "-" : x.stages), "num"));
      tr.appendChild(el("td", x.occupancy === null ? "-" : Number(x.occupancy.toPrecision(4)) + " %" + (x.limiter ? " (" + x.limiter + ")" : ""), "num"));
      tr.appendChild(el("td", x.sass || "-", "sass"));
      t.appendChild(tr);
    });
    box.appendChild(wide(t));
    if (k.changes.length) {
      const ul = el("ul", null, "kernel-changes");
      k.changes.forEach((c) => {
        const li = el("li", c.kernel + ": " + c.what + " between ");
        li.appendChild(runLink(d, c.before.run, c.before.commit));
        li.appendChild(document.createTextNode(" and "));
        li.appendChild(runLink(d, c.run, c.commit));
        ul.appendChild(li);
      });
      box.appendChild(ul);
    }
    return box;
  }

  function drawCharts(d, holder) {
    holder.replaceChildren();
    const b = d.baseline || {};
    chart(holder, d, "time (run median)", "ms", d.time.median, { confirmations: d.time.confirmations, band: b.time });
    if (d.speedup) {
      chart(holder, d, "speedup" + (d.reference ? " vs " + d.reference : ""), "x", d.speedup.value,
        { confirmations: d.speedup.confirmations, band: b.speedup });
    }
    if (d.memory) chart(holder, d, "peak memory", "byte", d.memory, { band: b.memory });
    // counters with a trend get a chart; those measured in one run only (one profiled run) a table row
    const once = [];
    const trends = d.counters.filter((c) => {
      const runs = new Set();
      c.kernels.forEach((k) => k.values.forEach((v, i) => { if (v !== null) runs.add(i); }));
      if (runs.size > 1) return true;
      c.kernels.forEach((k) => k.values.forEach((v, i) => { if (v !== null) once.push([c, k.kernel, v, i]); }));
      return false;
    });
    if (trends.length || once.length) {
      const box = el("details", null, "counters");
      box.open = true;
      box.appendChild(el("summary", "Gated profiler counters (" + d.counters.length + ")"));
      holder.appendChild(box);
      trends.forEach((c) => {
        const lines = c.kernels.map((k) => ({ label: k.kernel || "(case)", values: k.values }));
        chart(box, d, c.label + " (" + c.metric + ")", c.unit, lines[0].values, { lines: lines });
      });
      if (once.length) {
        const t = el("table", null, "once");
        const head = el("tr");
        ["counter (measured in one run)", "kernel", "value", "run"].forEach((h) => head.appendChild(el("th", h)));
        t.appendChild(head);
        once.forEach(([c, kernel, v, i]) => {
          const tr = el("tr");
          tr.appendChild(el("td", c.label));
          tr.appendChild(el("td", kernel || "(case)"));
          tr.appendChild(el("td", fmt(v, c.unit), "num"));
          const td = el("td");
          td.appendChild(runLink(d, d.runs.id[i], d.runs.commit[i]));
          tr.appendChild(td);
          t.appendChild(tr);
        });
        box.appendChild(wide(t));
      }
    }
  }

  const holders = [];
  data.devices.forEach((d, k) => {
    const section = document.querySelector('section.device[data-device="' + k + '"]');
    if (d.latest.length) section.appendChild(wide(latestTable(d)));
    if (d.changes.length) section.appendChild(changeList(d));
    const holder = el("div", null, "charts");
    section.appendChild(holder);
    holders.push([d, holder]);
    if (d.kernels) section.appendChild(kernelsBox(d));
    section.appendChild(runsTable(d));
  });
  function redraw() {
    view.x = xAxis.value;
    view.log = logScale.checked;
    holders.forEach(([d, holder]) => drawCharts(d, holder));
    document.body.dataset.view = view.x + (view.log ? " log" : "");
  }
  const query = new URLSearchParams(window.location.search);
  if (["run", "commit", "date"].includes(query.get("x"))) xAxis.value = query.get("x");
  logScale.checked = query.get("log") === "1";
  xAxis.addEventListener("change", redraw);
  logScale.addEventListener("change", redraw);
  redraw();
  document.body.dataset.ready = "true";
})();
