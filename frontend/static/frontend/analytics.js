/* Analytics page: one section per Spark analytics job, drawn from its newest stored result.
 *
 * First paint: every job's newest result (the JSON of GET /api/analytics/<name>/) embedded in
 * the page. Then /ws/ui/jobs/?kind=analytics: a run in progress shows its bar in its section;
 * when a run newer than the result on screen has succeeded, that one result is fetched from
 * /api/analytics/<name>/ and redrawn — requests only when the server says there is something
 * new. Operators run a job now (POST /api/jobs/), confirmed and reported like every action.
 *
 * What each job's `data` holds (the charts) is written down in docs/dashboard.md; `summary`
 * is drawn generically as well (scalars as figures, `advice` as a list, lists of rows as
 * tables), so a job that adds a headline figure needs no change here.
 */
(function () {
  "use strict";
  const { esc, fmt } = Weir;

  const page = Weir.data("analytics-data");
  const results = page.results; // name -> result or null
  const fetched = new Set(); // job ids whose result was (being) fetched
  const plotConfig = { displaylogo: false, responsive: true };
  const baseLayout = {
    margin: { l: 60, r: 20, t: 30, b: 50 },
    legend: { orientation: "h", y: -0.25 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
  };
  const HOT = "#cf222e";
  const NORMAL = "#1f6feb";

  // generic pieces ---------------------------------------------------------------------------

  function label(key) {
    const text = String(key).replace(/_/g, " ");
    return text.charAt(0).toUpperCase() + text.slice(1);
  }

  function figure(key, value) {
    let shown = value;
    if (typeof value === "number") {
      if (/bytes/.test(key)) shown = fmt.bytes(value);
      else if (/(_ms|_at)$/.test(key) && value > 1e11) shown = fmt.time(value);
      else if (/share|ratio|fraction/.test(key) && value <= 1) shown = `${(value * 100).toFixed(1)} %`;
      else shown = Number.isInteger(value) ? fmt.num(value) : value.toFixed(2);
    } else if (typeof value === "boolean") {
      shown = value ? "yes" : "no";
    }
    return `<div class="mini" data-figure="${esc(key)}"><div class="label">${esc(label(key))}</div>
      <div class="value">${esc(shown)}</div></div>`;
  }

  function cell(key, value) {
    if (value == null) return '<td class="muted">–</td>';
    if (typeof value === "number") {
      if (/bytes|size|^p\d+$|^max$|^min$|^mean$/.test(key)) return `<td class="num">${fmt.bytes(value)}</td>`;
      if (/share/.test(key) && value <= 1) return `<td class="num">${(value * 100).toFixed(1)} %</td>`;
      return `<td class="num">${Number.isInteger(value) ? fmt.num(value) : value.toFixed(3)}</td>`;
    }
    if (typeof value === "object") return `<td class="mono">${esc(JSON.stringify(value))}</td>`;
    return `<td>${esc(value)}</td>`;
  }

  function table(rows, options) {
    const o = options || {};
    if (!rows || !rows.length) return "";
    const keys = o.keys || [...new Set(rows.flatMap((r) => Object.keys(r)))];
    const shown = rows.slice(0, o.limit || 50);
    return `<table class="compact ${esc(o.cls || "")}"><thead><tr>${keys.map((k) =>
      `<th>${esc(label(k))}</th>`).join("")}</tr></thead><tbody>${shown.map((r) =>
      `<tr${o.rowAttrs ? o.rowAttrs(r) : ""}>${keys.map((k) => cell(k, r[k])).join("")}</tr>`).join("")}</tbody></table>
      ${rows.length > shown.length ? `<p class="muted small">and ${rows.length - shown.length} more</p>` : ""}`;
  }

  function summaryHtml(summary, skip) {
    const figures = [];
    const lists = [];
    for (const [key, value] of Object.entries(summary || {})) {
      if (skip.includes(key)) continue;
      if (value == null || typeof value !== "object") {
        figures.push(figure(key, value));
      } else if (Array.isArray(value) && value.length && value.every((v) => typeof v === "string")) {
        lists.push(`<div class="summary-list" data-summary="${esc(key)}"><h3>${esc(label(key))}</h3>
          <ul>${value.map((v) => `<li>${esc(v)}</li>`).join("")}</ul></div>`);
      } else if (Array.isArray(value) && value.length && value.every((v) => v && typeof v === "object")) {
        lists.push(`<div class="summary-list" data-summary="${esc(key)}"><h3>${esc(label(key))}</h3>${table(value, { limit: 20 })}</div>`);
      }
    }
    return (figures.length ? `<div class="figures">${figures.join("")}</div>` : "") + lists.join("");
  }

  function advice(summary) {
    const items = (summary && summary.advice) || [];
    if (!items.length) return "";
    return `<div class="advice" data-advice><h3>Advice</h3><ul>${items.map((a) => `<li>${esc(a)}</li>`).join("")}</ul></div>`;
  }

  function chartBox(name, what) {
    return `<div class="chart" data-chart="${esc(what)}" id="chart-${esc(name)}-${esc(what)}"></div>`;
  }

  function bars(div, traces, layout) {
    return Plotly.newPlot(div, traces, Object.assign({}, baseLayout, layout), plotConfig);
  }

  const noChart = '<p class="muted" data-no-chart>This result has no chart data.</p>';

  // one renderer per job: html, then draw(section) once the html is in the page ----------------

  const RENDER = {
    traffic(result, section) {
      const series = (result.data && result.data.series) || [];
      const partitions = (result.data && result.data.partitions) || [];
      section.querySelector("[data-body]").innerHTML = summaryHtml(result.summary, []) +
        (series.length
          ? `<div class="chart-pair">${chartBox("traffic", "records")}${chartBox("traffic", "bytes")}</div>`
          : noChart) +
        (partitions.length ? `<h3>Per partition</h3>${table(partitions, { keys: ["topic", "partition", "records", "bytes"] })}` : "");
      if (!series.length) return;
      const names = series.map((s) => s.topic);
      const x = series.map((s) => s.minute_ms);
      Weir.chart.create(section.querySelector('[data-chart="records"]'), names,
        { x, y: series.map((s) => s.records), title: "Records per minute", yTitle: "records/min" });
      Weir.chart.create(section.querySelector('[data-chart="bytes"]'), names,
        { x, y: series.map((s) => s.bytes), title: "Bytes per minute", yTitle: "bytes/min" });
    },

    "hot-partitions"(result, section) {
      const partitions = (result.data && result.data.partitions) || [];
      const keys = (result.data && result.data.keys) || [];
      const hot = partitions.filter((p) => p.hot);
      const flagged = hot.length
        ? `<p class="flagged" data-flagged>${hot.length} hot partition${hot.length === 1 ? "" : "s"}: ${hot.map((p) =>
          `<span class="hot-chip">${esc(p.topic)}/${p.partition} · ${(p.share * 100).toFixed(1)} %</span>`).join(" ")}</p>`
        : '<p class="muted" data-flagged>No partition stands out.</p>';
      section.querySelector("[data-body]").innerHTML =
        summaryHtml(result.summary, ["advice", "flagged", "hot_keys"]) + flagged + advice(result.summary) +
        (partitions.length ? chartBox("hot-partitions", "shares") : noChart) +
        (keys.length ? `<h3>Hottest keys</h3>${table(keys, { limit: 20, cls: "hot-keys",
          rowAttrs: (k) => (k.hot ? ' class="hot"' : "") })}` : "");
      if (!partitions.length) return;
      const ordered = [...partitions].sort((a, b) => b.share - a.share);
      const div = section.querySelector('[data-chart="shares"]');
      bars(div, [{
        type: "bar",
        x: ordered.map((p) => `${p.topic}/${p.partition}`),
        y: ordered.map((p) => p.share * 100),
        marker: { color: ordered.map((p) => (p.hot ? HOT : NORMAL)) },
        text: ordered.map((p) => (p.hot ? "hot" : "")),
        hovertemplate: "%{x}: %{y:.1f} %<extra></extra>",
      }], {
        title: { text: "Share of records per partition (hot ones in red)", font: { size: 13 } },
        yaxis: { title: { text: "% of the topic's records" }, rangemode: "tozero" },
        xaxis: { type: "category", automargin: true },
      });
    },

    "record-sizes"(result, section) {
      const histograms = (result.data && result.data.histograms) || [];
      const percentiles = (result.data && result.data.percentiles) || [];
      section.querySelector("[data-body]").innerHTML = summaryHtml(result.summary, []) +
        (histograms.length ? chartBox("record-sizes", "histogram") : noChart) +
        (percentiles.length ? `<h3>Percentiles</h3>${table(percentiles, { cls: "percentiles" })}` : "");
      if (!histograms.length) return;
      // Buckets [edges[i], edges[i+1]) labelled by their upper edge, the same for every topic.
      const traces = histograms.map((h) => ({
        type: "bar",
        name: h.topic,
        x: h.counts.map((_, i) => `${fmt.bytes(h.edges[i])}–${fmt.bytes(h.edges[i + 1])}`),
        y: h.counts,
      }));
      bars(section.querySelector('[data-chart="histogram"]'), traces, {
        barmode: "group",
        title: { text: "Records by size", font: { size: 13 } },
        yaxis: { title: { text: "records" }, rangemode: "tozero" },
        xaxis: { type: "category", automargin: true },
      });
    },

    "lag-trends"(result, section) {
      const series = (result.data && result.data.series) || [];
      const name = (s) => (s.topic ? `${s.group} · ${s.topic}` : s.group);
      section.querySelector("[data-body]").innerHTML = summaryHtml(result.summary, []) +
        (series.length ? chartBox("lag-trends", "lag") : noChart) +
        (series.length ? `<h3>Trend per group</h3>${table(series.map((s) => ({
          group: s.group, ...(s.topic ? { topic: s.topic } : {}),
          lag_now: s.lag.length ? s.lag[s.lag.length - 1] : null,
          slope_per_min: s.slope_per_min ?? null,
          trend: s.trend ?? null,
        })), { cls: "trends" })}` : "");
      if (!series.length) return;
      Weir.chart.create(section.querySelector('[data-chart="lag"]'), series.map(name),
        { x: series.map((s) => s.at_ms), y: series.map((s) => s.lag), title: "Lag over time", yTitle: "records behind" });
    },
  };

  // sections ---------------------------------------------------------------------------------

  function draw(name) {
    const section = document.querySelector(`[data-analytics="${name}"]`);
    const result = results[name];
    const produced = section.querySelector("[data-produced]");
    section.dataset.state = result ? "result" : "empty";
    if (!result) {
      produced.textContent = "";
      const run = section.querySelector("[data-run]")
        ? "Run it now, or wait for its schedule." : "It runs on its schedule (operators can also run it now).";
      section.querySelector("[data-body]").innerHTML =
        `<div class="empty-state" data-empty><p>No result yet: this job has not run successfully.</p><p class="muted">${run}</p></div>`;
      return;
    }
    section.dataset.job = result.job_id;
    produced.innerHTML = `from job <a href="/jobs/?kind=analytics">#${result.job_id}</a>, ${esc(new Date(result.created_at).toLocaleString("en-GB"))}`;
    try {
      (RENDER[name] || ((r, s) => { s.querySelector("[data-body]").innerHTML = summaryHtml(r.summary, []); }))(result, section);
    } catch (error) {
      console.error(error);
      section.querySelector("[data-body]").innerHTML = `<p class="error-text">Could not draw this result: ${esc(error.message)}</p>`;
    }
  }

  function showJobs(jobs) {
    for (const name of Object.keys(results)) {
      const section = document.querySelector(`[data-analytics="${name}"]`);
      const mine = jobs.filter((j) => j.name === `analytics:${name}`);
      const state = section.querySelector("[data-job-state]");
      const active = mine.find((j) => j.status === "running" || j.status === "queued");
      if (active) {
        const percent = Math.round(active.progress * 100);
        state.hidden = false;
        state.dataset.status = active.status;
        state.innerHTML = active.status === "queued" ? '<span class="badge job-queued">queued</span>'
          : `<span class="badge job-running">running</span>
             <span class="progress inline" role="progressbar" aria-valuenow="${percent}"><span style="width:${percent}%"></span></span>
             <span class="muted small">${percent} % ${esc(active.message || "")}</span>`;
      } else {
        const last = mine[0];
        const failed = last && last.status === "failed";
        state.hidden = !failed;
        state.dataset.status = failed ? "failed" : "";
        state.innerHTML = failed ? `<span class="badge job-failed" title="${esc(last.error)}">last run failed</span>` : "";
      }
      const shown = results[name] ? results[name].job_id : 0;
      const newer = mine.find((j) => j.status === "succeeded" && j.id > shown && !fetched.has(j.id));
      if (newer) {
        fetched.add(newer.id);
        Weir.api("GET", `/api/analytics/${encodeURIComponent(name)}/`).then((result) => {
          results[name] = result;
          draw(name);
        }, (error) => Weir.toast(`Could not load the ${name} result: ${error.message}`, "error"));
      }
    }
  }

  for (const name of Object.keys(results)) draw(name);
  showJobs(page.jobs || []);
  Weir.live("/ws/ui/jobs/?kind=analytics", (message) => {
    if (message.type === "error") { Weir.toast(message.message, "error"); return; }
    if (message.type === "jobs") showJobs(message.jobs);
  });

  document.querySelector("main").addEventListener("click", (event) => {
    const button = event.target.closest("[data-run]");
    if (!button) return;
    const job = button.dataset.run;
    Weir.act({
      confirm: {
        title: `Run ${job} now`,
        message: "Spark reads the topics (the last day by default) and the result replaces the one shown here when it is done.",
        confirmLabel: "Run now",
      },
      run: () => Weir.api("POST", "/api/jobs/", { name: job }),
      done: (created) => `Job ${created.id} (${created.name}) queued`,
    });
  });
})();
