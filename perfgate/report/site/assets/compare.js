// perfgate dashboard: compare two runs. Each run's medians come from data/run-<id>.js (a call of
// perfgateRunLoaded with the run's JSON), loaded on demand; everything is inserted as text.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("perfgate-data").textContent);
  const loaded = {};
  const waiting = {};
  const selA = document.getElementById("run-a");
  const selB = document.getElementById("run-b");
  const tbody = document.querySelector("#compare tbody");
  const shown = document.getElementById("shown");
  const commits = document.getElementById("commits");

  window.perfgateRunLoaded = function (run) {
    loaded[run.id] = run;
    (waiting[run.id] || []).forEach((f) => f(run));
    delete waiting[run.id];
  };

  function load(id, done) {
    if (loaded[id]) { done(loaded[id]); return; }
    if (waiting[id]) { waiting[id].push(done); return; }
    waiting[id] = [done];
    const s = document.createElement("script");
    s.src = "data/run-" + Number(id) + ".js";
    document.head.appendChild(s);
  }

  function label(r) {
    return "#" + r.id + " " + (r.commit ? r.commit.slice(0, 8) + " " : "") + r.date + " " + r.device
      + (r.kind !== "gate" ? " (" + r.kind + ")" : "");
  }

  function fmt(v) {
    if (v === null || v === undefined) return "-";
    return v < 1 ? (v * 1000).toPrecision(4) + " us" : v.toPrecision(4) + " ms";
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function commitLink(parent, commit) {
    const c = commit || "";
    if (/^https?:\/\//.test(data.repo) && /^[0-9a-f]{7,64}$/.test(c)) {
      const a = document.createElement("a");
      a.href = data.repo + "/commit/" + c;
      a.rel = "noopener";
      a.className = "commit";
      a.textContent = c.slice(0, 12);
      parent.appendChild(a);
    } else {
      parent.appendChild(document.createTextNode(c.slice(0, 12) || "-"));
    }
  }

  // a run id, or a commit (prefix): the latest run of it
  function resolve(text) {
    if (!text) return null;
    if (/^\d+$/.test(text) && data.runs.some((r) => r.id === Number(text))) return Number(text);
    const t = text.toLowerCase();
    const hits = data.runs.filter((r) => r.commit && (r.commit.startsWith(t) || t.startsWith(r.commit)));
    return hits.length ? hits[hits.length - 1].id : null;
  }

  function render() {
    const a = Number(selA.value);
    const b = Number(selB.value);
    load(a, (ra) => load(b, (rb) => {
      if (Number(selA.value) !== a || Number(selB.value) !== b) return;
      const names = Array.from(new Set(Object.keys(ra.cases).concat(Object.keys(rb.cases)))).sort();
      const rows = names.map((name) => {
        const x = ra.cases[name];
        const y = rb.cases[name];
        const ratio = x && y ? y / x : null;
        const d = data.detects[name];
        let mark = "-";
        if (ratio !== null && d !== null && d !== undefined) {
          mark = ratio > 1 + d / 100 ? "slower" : ratio < 1 - d / 100 ? "faster" : "within detects";
        } else if (ratio !== null) mark = "no threshold";
        return { name: name, x: x, y: y, ratio: ratio, d: d, mark: mark };
      });
      const order = { slower: 0, faster: 1, "within detects": 2, "no threshold": 3, "-": 4 };
      rows.sort((p, q) => order[p.mark] - order[q.mark] || (q.ratio || 0) - (p.ratio || 0));
      tbody.replaceChildren(...rows.map((r) => {
        const tr = document.createElement("tr");
        tr.className = "mark-" + r.mark.replace(/[^a-z]+/g, "-");
        cell(tr, r.name, "case-name");
        cell(tr, fmt(r.x), "num");
        cell(tr, fmt(r.y), "num");
        cell(tr, r.ratio === null ? "-" : r.ratio.toFixed(3) + "x", "num");
        const m = cell(tr, "", "marked");
        const dot = document.createElement("span");
        dot.className = "mark dot " + ({ slower: "bad", faster: "good" }[r.mark] || "plain");
        m.appendChild(dot);
        m.appendChild(document.createTextNode(" " + r.mark));
        cell(tr, r.d === null || r.d === undefined ? "-" : "\u2265 " + r.d.toFixed(1) + "%", "num");
        return tr;
      }));
      const slower = rows.filter((r) => r.mark === "slower").length;
      const faster = rows.filter((r) => r.mark === "faster").length;
      shown.textContent = rows.length + " case(s): " + slower + " slower, " + faster + " faster";
      commits.replaceChildren(document.createTextNode("base commit "));
      commitLink(commits, ra.commit);
      commits.appendChild(document.createTextNode(", head commit "));
      commitLink(commits, rb.commit);
      const q = "?a=" + a + "&b=" + b;
      if (window.location.search !== q) history.replaceState(null, "", q);
      document.body.dataset.ready = "true";
    }));
  }

  [selA, selB].forEach((sel) => {
    data.runs.slice().reverse().forEach((r) => {
      const o = document.createElement("option");
      o.value = String(r.id);
      o.textContent = label(r);
      sel.appendChild(o);
    });
    sel.addEventListener("change", render);
  });
  if (!data.runs.length) {
    shown.textContent = "No runs in the history yet.";
    document.body.dataset.ready = "true";
    return;
  }
  const query = new URLSearchParams(window.location.search);
  const last = data.runs[data.runs.length - 1];
  const sameDevice = data.runs.filter((r) => r.device === last.device && r.id !== last.id);
  const a = resolve(query.get("a")) || (sameDevice.length ? sameDevice[sameDevice.length - 1].id : last.id);
  const b = resolve(query.get("b")) || last.id;
  selA.value = String(a);
  selB.value = String(b);
  render();
})();
