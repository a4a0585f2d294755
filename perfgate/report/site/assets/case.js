// perfgate dashboard: one case's charts (uPlot, vendored) and its runs. Data comes from the page's JSON
// block and is inserted as text; every point opens its run's page.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("perfgate-data").textContent);
  const tooltip = document.getElementById("tooltip");
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

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
      cols.push(line.values);
    });
    if (!extra.lines && d.runs.calibration.some((c) => c)) {
      series.push(pointsOnly("calibration", "#9467bd", 10, "rgba(255,255,255,0)"));
      cols.push(values.map((v, i) => (d.runs.calibration[i] ? v : null)));
    }
    const conf = extra.confirmations || [];
    const depth = conf.reduce((m, c) => Math.max(m, c.length), 0);
    for (let j = 0; j < depth; j += 1) {
      series.push(pointsOnly("confirmation " + (j + 1), "#ff7f0e", 5, "#ff7f0e"));
      cols.push(conf.map((c) => (c.length > j ? c[j] : null)));
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
      cols.push(xs.map(() => band.centre * (1 - t)));
      bands.push({ series: [series.length - 2, series.length - 1], fill: "rgba(44,160,44,0.12)" });
    }
    const box = el("div", null, "chart");
    box.dataset.metric = title;
    parent.appendChild(box);
    const width = Math.max(320, Math.min(1100, parent.clientWidth || 900));
    const opts = {
      title: title, width: width, height: 230, series: series, bands: bands,
      scales: { x: { time: false } },
      axes: [
        { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
          values: (u, splits) => splits.map((i) => (d.runs.id[i] !== undefined ? "#" + d.runs.id[i] : "")) },
        { size: 80, values: (u, splits) => splits.map((v) => fmt(v, unit)) },
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
    const a = el("a", "#" + runId + (commit ? " (" + commit + ")" : ""));
    a.href = runHref(runId);
    return a;
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
      tr.appendChild(el("td", d.runs.commit[i] || "-"));
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
    box.appendChild(t);
    return box;
  }

  data.devices.forEach((d, k) => {
    const section = document.querySelector('section.device[data-device="' + k + '"]');
    if (d.latest.length) section.appendChild(latestTable(d));
    if (d.changes.length) section.appendChild(changeList(d));
    const b = d.baseline || {};
    chart(section, d, "time (run median)", "ms", d.time.median, { confirmations: d.time.confirmations, band: b.time });
    if (d.speedup) {
      chart(section, d, "speedup" + (d.reference ? " vs " + d.reference : ""), "x", d.speedup.value,
        { confirmations: d.speedup.confirmations, band: b.speedup });
    }
    if (d.memory) chart(section, d, "peak memory", "byte", d.memory, { band: b.memory });
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
      section.appendChild(box);
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
        box.appendChild(t);
      }
    }
    section.appendChild(runsTable(d));
  });
  document.body.dataset.ready = "true";
})();
