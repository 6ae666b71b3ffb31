// report.html's own script: lays out the charts of a propulate-rs run with Apache ECharts from the
// data the run embedded (crates/engine/src/report_html/data.rs). Charts are drawn as SVG, so that
// they print and zoom sharply and a test can count what was drawn.
"use strict";
(function () {
  const body = document.body;
  const errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    body.dataset.reportErrors = errors.join(" | ");
  });

  const D = JSON.parse(document.getElementById("report-data").textContent);
  const params = D.params;
  const trials = D.trials;
  const PALETTE = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0"];
  const islandColour = (i) => PALETTE[i % PALETTE.length];
  const charts = [];

  function fmt(x) {
    if (x === null || x === undefined) return "";
    if (typeof x !== "number") return String(x);
    const a = Math.abs(x);
    // Four significant digits, no trailing zeros: 1e-4, 2.5e-3, 0.1632.
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return (+x.toPrecision(4)).toExponential();
    return String(+x.toPrecision(4));
  }

  const idOf = (t) => t.island + "/" + (t.worker === null ? "imported" : t.worker) + "/" + t.generation;

  // A log axis when every value is positive and they span more than two decades.
  function wantsLog(values) {
    if (values.length === 0 || values.some((v) => !(v > 0))) return false;
    return Math.max(...values) / Math.min(...values) > 100;
  }

  // The time axis in the unit that suits the run's length.
  const end = trials.reduce((m, t) => Math.max(m, t.t), 0);
  const unit = end > 7200 ? { name: "hours", s: 3600 } : end > 600 ? { name: "minutes", s: 60 } : { name: "seconds", s: 1 };

  function draw(el, option) {
    const c = echarts.init(el, null, { renderer: "svg" });
    c.setOption(Object.assign({ animation: false, textStyle: { fontFamily: "system-ui, sans-serif" } }, option));
    charts.push(c);
    return c;
  }
  window.addEventListener("resize", () => charts.forEach((c) => c.resize()));

  function trialTooltip(t) {
    const lines = ["<b>trial " + idOf(t) + "</b> (island/worker/generation)", "loss: " + (t.loss === null ? "none (" + t.state + ")" : fmt(t.loss))];
    params.forEach((p, i) => lines.push(p.name + ": " + t.shown[i]));
    if (t.constraints) lines.push("constraints: " + t.constraints.map(fmt).join(", ") + (t.feasible ? " (feasible)" : " (infeasible)"));
    if (t.state !== "complete") lines.push(t.state + (t.reason ? ": " + t.reason : ""));
    return lines.join("<br>");
  }
  // Scatter points carry their trial's index last, for the tooltip.
  const pointTooltip = { trigger: "item", formatter: (p) => trialTooltip(trials[p.value[p.value.length - 1]]) };

  const finite = trials.map((t, k) => [t, k]).filter(([t]) => t.loss !== null);
  const lossLog = wantsLog(finite.map(([t]) => t.loss));
  const lossAxis = { type: lossLog ? "log" : "value", name: "loss", scale: true, axisLabel: { formatter: fmt } };
  const islands = [...Array(D.islands).keys()];

  // --- Summary ---
  const summary = [
    "<b>" + D.evaluations + "</b> evaluations",
    D.failed ? "<b>" + D.failed + "</b> failed" : null,
    D.pruned ? "<b>" + D.pruned + "</b> pruned" : null,
    D.objectives.length >= 2
      ? "Pareto front of <b>" + D.front.length + "</b> (" + D.objectives.map((o) => o.name + " " + o.direction).join(", ") + ")"
      : "best loss <b>" + (D.best_loss === null ? "none" : fmt(D.best_loss)) + "</b>",
    "<b>" + D.islands + "</b> island" + (D.islands === 1 ? "" : "s"),
    D.start ? "started " + D.start.replace("T", " ").slice(0, 19) + " UTC" : null,
    "report written " + D.generated.replace("T", " ").replace("Z", " UTC"),
  ].filter((x) => x !== null);
  document.getElementById("summary").innerHTML = summary.join(" &middot; ");
  if (D.total > trials.length) {
    const s = document.getElementById("sampled");
    s.hidden = false;
    s.textContent = "Showing " + trials.length + " of " + D.total + " evaluations: the best and an even sample of the rest (best-so-far lines use all of them).";
  }

  // --- Pareto front (several objectives) ---
  if (D.objectives.length >= 2) {
    document.getElementById("front-section").hidden = false;
    const fronts = document.getElementById("fronts");
    const m = D.objectives.length;
    // Two objectives: one chart across the page; more: a grid of pairs.
    if (m === 2) fronts.className = "";
    const pairs = [];
    for (let a = 0; a < m; a++) for (let b = a + 1; b < m; b++) pairs.push([a, b]);
    const frontTooltip = (list) => ({
      trigger: "item",
      formatter: (p) => {
        const t = list[p.value[p.value.length - 1]];
        return trialTooltip(t) + "<br>" + D.objectives.map((o, k) => o.name + ": " + fmt(t.objectives[k])).join("<br>");
      },
    });
    const evaluated = trials.map((t, k) => [t, k]).filter(([t]) => t.objectives);
    for (const [a, b] of pairs.slice(0, 6)) {
      const el = document.createElement("div");
      el.className = "chart";
      el.dataset.chart = "front:" + D.objectives[a].name + ":" + D.objectives[b].name;
      fronts.appendChild(el);
      const axis = (k) => ({ type: "value", name: D.objectives[k].name + " (" + D.objectives[k].direction + ")", nameLocation: "middle", nameGap: 30, scale: true, axisLabel: { formatter: fmt } });
      const line = D.front.map((t, k) => [t.objectives[a], t.objectives[b], k]).sort((p, q) => p[0] - q[0]);
      const series = [
        { name: "evaluations", type: "scatter", data: evaluated.map(([t, k]) => [t.objectives[a], t.objectives[b], k]), symbolSize: 4, itemStyle: { color: "#b8bec8", opacity: 0.6 }, tooltip: frontTooltip(trials) },
      ];
      // The front of two objectives, both minimized, as the staircase that bounds what it dominates.
      if (m === 2) {
        const staircase = D.objectives.every((o) => o.direction === "min");
        series.push({ name: "front", type: "line", data: line, step: staircase ? "end" : false, showSymbol: false, lineStyle: { color: "#333", width: 1.2 }, tooltip: { show: false }, z: 2 });
      }
      for (const i of islands) {
        const points = D.front.map((t, k) => [t, k]).filter(([t]) => t.island === i).map(([t, k]) => [t.objectives[a], t.objectives[b], k]);
        if (points.length) series.push({ name: "front, island " + i, type: "scatter", data: points, symbolSize: 7, itemStyle: { color: islandColour(i) }, z: 3, tooltip: frontTooltip(D.front) });
      }
      draw(el, { legend: { top: 0 }, grid: { top: 40, left: 70, right: 30, bottom: 50 }, tooltip: { trigger: "item" }, xAxis: axis(a), yAxis: axis(b), series: series });
    }
  }

  // --- Loss over time ---
  const timeSeries = [];
  const scale = (line) => line.map(([t, l]) => [t / unit.s, l]);
  timeSeries.push({ name: "whole run, best so far", type: "line", step: "end", data: scale(D.best_so_far), showSymbol: false, z: 1, lineStyle: { color: "#b8bec8", width: 6 }, itemStyle: { color: "#b8bec8" } });
  for (const i of islands) {
    const name = "island " + i;
    const points = finite.filter(([t]) => t.island === i).map(([t, k]) => [t.t / unit.s, t.loss, k]);
    timeSeries.push({ name: name, type: "scatter", data: points, symbolSize: 5, itemStyle: { color: islandColour(i), opacity: 0.55 }, z: 2, tooltip: pointTooltip });
    timeSeries.push({ name: name, type: "line", step: "end", data: scale(D.island_best_so_far[i] || []), showSymbol: false, z: 3, lineStyle: { color: islandColour(i), width: 1.8 }, itemStyle: { color: islandColour(i) }, tooltip: { show: false } });
  }
  draw(document.getElementById("chart-time"), {
    legend: { top: 0 },
    grid: { top: 40, left: 70, right: 30, bottom: 70 },
    tooltip: { trigger: "item" },
    xAxis: { type: "value", name: unit.name + " since start", nameLocation: "middle", nameGap: 28, min: 0 },
    yAxis: lossAxis,
    dataZoom: [{ type: "inside" }, { type: "slider", bottom: 8, height: 18 }],
    series: timeSeries,
  });

  // --- Loss against each parameter ---
  const grid = document.getElementById("params");
  params.forEach((p, i) => {
    const el = document.createElement("div");
    el.className = "chart";
    el.dataset.chart = "param:" + p.name;
    grid.appendChild(el);
    let xAxis;
    // Categorical choices as strips: a point's place across its strip is fixed by its index.
    const jitter = (k) => (((k * 0.6180339887) % 1) - 0.5) * 0.5;
    let x = (t) => t.values[i];
    if (p.type === "categorical") {
      const at = [...p.choices.keys()];
      xAxis = {
        type: "value", min: -0.5, max: p.choices.length - 0.5, splitLine: { show: false },
        axisLabel: { customValues: at, formatter: (v) => p.choices[Math.round(v)] ?? "" }, axisTick: { customValues: at },
      };
      x = (t, k) => t.values[i] + jitter(k);
    } else if (p.type === "float" && p.log) {
      xAxis = { type: "log", min: p.lo, max: p.hi, axisLabel: { formatter: fmt } };
    } else {
      xAxis = { type: "value", min: p.lo, max: p.hi, minInterval: p.type === "int" ? 1 : 0, axisLabel: { formatter: fmt } };
    }
    xAxis.name = p.name;
    xAxis.nameLocation = "middle";
    xAxis.nameGap = 26;
    draw(el, {
      grid: { top: 16, left: 64, right: 18, bottom: 44 },
      tooltip: pointTooltip,
      xAxis: xAxis,
      yAxis: lossAxis,
      series: islands.map((isl) => ({
        name: "island " + isl,
        type: "scatter",
        symbolSize: 5,
        itemStyle: { color: islandColour(isl), opacity: 0.55 },
        // An inactive conditional parameter (null) has no place on its axis.
        data: finite.filter(([t]) => t.island === isl && t.values[i] !== null).map(([t, k]) => [x(t, k), t.loss, k]),
      })),
    });
  });

  // --- Parallel coordinates ---
  const losses = finite.map(([t]) => t.loss);
  const parallelAxis = params.map((p, i) => {
    const a = { dim: i, name: p.name };
    if (p.type === "categorical") Object.assign(a, { type: "category", data: p.choices });
    else if (p.type === "float" && p.log) Object.assign(a, { type: "log", min: p.lo, max: p.hi });
    else Object.assign(a, { type: "value", min: p.lo, max: p.hi });
    return a;
  });
  parallelAxis.push({ dim: params.length, name: "loss", type: lossLog ? "log" : "value", scale: true });
  draw(document.getElementById("chart-parallel"), {
    parallel: { left: 60, right: 190, top: 40, bottom: 30, parallelAxisDefault: { nameLocation: "start", nameGap: 18, axisLabel: { formatter: fmt } } },
    parallelAxis: parallelAxis,
    visualMap: {
      type: "continuous",
      dimension: params.length,
      min: losses.length ? Math.min(...losses) : 0,
      max: losses.length ? Math.max(...losses) : 1,
      calculable: true,
      right: 10,
      top: "middle",
      text: ["high loss", "low loss"],
      // The best lines strong, the worst pale, so that what works stands out.
      inRange: { color: ["#3b0f70", "#de4968", "#fe9f6d", "#dcdcdc"] },
      formatter: fmt,
    },
    series: [{
      type: "parallel",
      lineStyle: { width: 1, opacity: 0.45 },
      data: finite.map(([t]) => params.map((p, i) => (t.values[i] === null ? null : p.type === "categorical" ? p.choices[t.values[i]] : t.values[i])).concat([t.loss])),
    }],
  });

  // --- Learning curves ---
  const withCurves = trials.map((t, k) => [t, k]).filter(([t]) => t.curve && t.curve.length > 0);
  if (withCurves.length === 0) {
    document.getElementById("chart-curves").remove();
    document.getElementById("curves-note").textContent = "No trial reported intermediate values (the CNN task reports one per epoch; a command trial, lines 'propulate: step=N loss=X').";
  } else {
    // All curves of a kind in one series, each ended by a gap, so that the legend has two entries.
    const joined = (state) => withCurves.filter(([t]) => (t.state === "pruned") === state).flatMap(([t]) => t.curve.concat([[t.curve[t.curve.length - 1][0], "-"]]));
    const stops = withCurves.filter(([t]) => t.state === "pruned").map(([t, k]) => t.curve[t.curve.length - 1].concat([k]));
    const curveValues = withCurves.flatMap(([t]) => t.curve.map((p) => p[1]));
    draw(document.getElementById("chart-curves"), {
      legend: { top: 0 },
      grid: { top: 40, left: 70, right: 30, bottom: 50 },
      tooltip: { trigger: "item" },
      xAxis: { type: "value", name: "step", nameLocation: "middle", nameGap: 28, minInterval: 1 },
      yAxis: { type: wantsLog(curveValues) ? "log" : "value", name: "reported value", scale: true, axisLabel: { formatter: fmt } },
      series: [
        { name: "ran to the end", type: "line", data: joined(false), showSymbol: false, connectNulls: false, lineStyle: { color: "#4269d0", width: 1, opacity: 0.6 }, itemStyle: { color: "#4269d0" }, tooltip: { show: false } },
        { name: "pruned", type: "line", data: joined(true), showSymbol: false, connectNulls: false, lineStyle: { color: "#e8590c", width: 1, opacity: 0.6, type: "dashed" }, itemStyle: { color: "#e8590c" }, tooltip: { show: false } },
        { name: "pruned", type: "scatter", data: stops, symbol: "triangle", symbolSize: 7, itemStyle: { color: "#e8590c" }, tooltip: pointTooltip },
      ],
    });
  }

  // --- Members (population-based training): loss against the member's steps, and lineage ---
  const withLineage = trials.map((t, k) => [t, k]).filter(([t]) => t.lineage && t.loss !== null);
  if (withLineage.length > 0) {
    document.getElementById("members-section").hidden = false;
    const el = document.createElement("div");
    el.className = "chart";
    el.dataset.chart = "members";
    document.getElementById("members").appendChild(el);
    const reached = (t) => t.lineage.step + t.lineage.steps;
    const shownById = new Map(withLineage.map(([t]) => [idOf(t), t]));
    // Each edge from the parent's point to the child's, ended by a gap: one series per kind.
    const edges = (exploited) => withLineage
      .filter(([t]) => t.lineage.parent !== null && t.lineage.exploited === exploited && shownById.has(t.lineage.parent))
      .flatMap(([t]) => {
        const p = shownById.get(t.lineage.parent);
        return [[reached(p), p.loss], [reached(t), t.loss], [reached(t), "-"]];
      });
    const memberSeries = [
      { name: "continued", type: "line", data: edges(false), showSymbol: false, connectNulls: false, lineStyle: { color: "#8a8f98", width: 1 }, itemStyle: { color: "#8a8f98" }, tooltip: { show: false } },
      { name: "exploited", type: "line", data: edges(true), showSymbol: false, connectNulls: false, lineStyle: { color: "#8a8f98", width: 1, type: "dashed" }, itemStyle: { color: "#8a8f98" }, tooltip: { show: false } },
    ];
    for (let i = 0; i < D.islands; i++) {
      const points = withLineage.filter(([t]) => t.island === i).map(([t, k]) => [reached(t), t.loss, k]);
      if (points.length) memberSeries.push({ name: "island " + i, type: "scatter", data: points, symbolSize: 6, itemStyle: { color: islandColour(i) }, z: 3, tooltip: pointTooltip });
    }
    draw(el, {
      legend: { top: 0 },
      grid: { top: 40, left: 70, right: 30, bottom: 50 },
      tooltip: { trigger: "item" },
      xAxis: { type: "value", name: "training steps", nameLocation: "middle", nameGap: 28, minInterval: 1 },
      yAxis: { type: wantsLog(withLineage.map(([t]) => t.loss)) ? "log" : "value", name: "loss", scale: true, axisLabel: { formatter: fmt } },
      series: memberSeries,
    });
  }

  // --- Trials table, sortable ---
  const columns = [
    { name: "trial", get: (t) => idOf(t), key: (t) => [t.island, t.worker, t.generation] },
    { name: "island", get: (t) => t.island },
    { name: "state", get: (t) => t.state },
    { name: "loss", get: (t) => t.loss, show: fmt },
  ]
    // With constraints (at most 0 each: feasible), whether each trial met them.
    .concat(trials.some((t) => t.constraints) ? [{ name: "feasible", get: (t) => (t.constraints ? (t.feasible ? "yes" : "no") : "") }] : [])
    .concat(params.map((p, i) => ({ name: p.name, get: (t) => (p.type === "categorical" || t.values[i] === null ? t.shown[i] : t.values[i]), show: (v) => (typeof v === "number" ? fmt(v) : v) })))
    .concat([
      { name: "finished (s)", get: (t) => t.t, show: (v) => v.toFixed(1) },
      { name: "duration (s)", get: (t) => t.duration_s, show: (v) => v.toFixed(2) },
      { name: "reason", get: (t) => t.reason ?? (t.state === "pruned" ? "stopped early after step " + t.curve[t.curve.length - 1][0] : ""), cls: "reason" },
    ]);
  const table = document.getElementById("trials");
  const head = table.createTHead().insertRow();
  const tbody = table.createTBody();
  let order = trials.map((t, k) => k);
  let sortedBy = null;
  let ascending = true;
  function compare(a, b) {
    // Missing values (a failed trial's loss) sort last either way.
    if (a === null || a === undefined) return b === null || b === undefined ? 0 : 1;
    if (b === null || b === undefined) return -1;
    if (Array.isArray(a)) {
      for (let j = 0; j < a.length; j++) if (a[j] !== b[j]) return (a[j] < b[j] ? -1 : 1) * (ascending ? 1 : -1);
      return 0;
    }
    if (a === b) return 0;
    return (a < b ? -1 : 1) * (ascending ? 1 : -1);
  }
  function fill() {
    const rows = order.map((k) => {
      const t = trials[k];
      const cells = columns.map((c) => {
        const v = c.get(t);
        const text = v === null || v === undefined ? "" : c.show ? c.show(v) : String(v);
        const td = document.createElement("td");
        if (c.cls) td.className = c.cls;
        td.textContent = text;
        return td;
      });
      const tr = document.createElement("tr");
      tr.className = t.state;
      tr.append(...cells);
      return tr;
    });
    tbody.replaceChildren(...rows);
  }
  columns.forEach((c, j) => {
    const th = document.createElement("th");
    th.textContent = c.name;
    th.addEventListener("click", () => {
      ascending = sortedBy === j ? !ascending : true;
      sortedBy = j;
      const key = c.key || c.get;
      order.sort((a, b) => compare(key(trials[a]), key(trials[b])));
      head.querySelectorAll("th").forEach((h) => (h.className = ""));
      th.className = ascending ? "sorted-asc" : "sorted-desc";
      fill();
    });
    head.appendChild(th);
  });
  // Best first, failures last, until the reader sorts otherwise.
  head.children[3].click();

  // --- Settings ---
  const settings = document.getElementById("settings");
  for (const [k, v] of Object.entries(D.settings)) {
    const row = settings.insertRow();
    row.insertCell().textContent = k.replace(/_/g, " ");
    const code = document.createElement("code");
    const scalar = (x) => x === null || typeof x !== "object";
    if (k === "objectives") code.textContent = v.map((o) => o.name + ":" + o.direction).join(",");
    else if (Array.isArray(v) && v.every(scalar)) code.textContent = v.join(" ");
    else if (v !== null && typeof v === "object" && !Array.isArray(v) && Object.values(v).every(scalar)) {
      code.textContent = Object.entries(v).map(([a, b]) => a + "=" + b).join(", ");
    } else code.textContent = scalar(v) ? String(v) : JSON.stringify(v);
    row.insertCell().appendChild(code);
  }

  body.dataset.charts = String(charts.length);
  body.dataset.reportState = "drawn";
})();
