/* Analytics page: one section per Spark analytics job, drawn from its newest stored result.
 *
 * First paint: every job's newest result (the JSON of GET /api/analytics/<name>/) embedded in
 * the page. Then /ws/ui/jobs/?kind=analytics: a run in progress shows its bar in its section;
 * when a run newer than the result on screen has succeeded, that one result is fetched from
 * /api/analytics/<name>/ and redrawn — requests only when the server says there is something
 * new. Operators run a job now (POST /api/jobs/), confirmed and reported like every action.
 *
 * Each job's renderer reads the series its spark_jobs.analytics module stores in `data` and
 * the tables in `summary` (docs/dashboard.md lists them); the rest of `summary` is drawn
 * generically (numbers as figures, lists of text as lists), so a job that adds a headline
 * figure needs no change here. Sections draw at most a few charts and a dozen traces each.
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
    if (typeof value === "boolean") return `<td>${value ? '<span class="badge job-failed">yes</span>' : "–"}</td>`;
    if (typeof value === "number") {
      let text;
      if (/bytes_per_second/.test(key)) text = fmt.rate(value);
      else if (/bytes|^p\d+$|^max$|^min$|^mean$/.test(key)) text = fmt.bytes(value);
      else if (/share/.test(key) && value <= 1) text = `${(value * 100).toFixed(1)} %`;
      else if (/seconds/.test(key)) text = fmt.seconds(value);
      else text = Number.isInteger(value) ? fmt.num(value) : value.toFixed(2);
      return `<td class="num">${text}</td>`;
    }
    if (Array.isArray(value)) return `<td>${esc(value.join(", ")) || "–"}</td>`;
    if (typeof value === "object") return `<td class="mono">${esc(JSON.stringify(value))}</td>`;
    if (/^\d{4}-\d\d-\d\dT/.test(value)) return `<td>${esc(new Date(value).toLocaleString("en-GB"))}</td>`;
    return `<td>${esc(value)}</td>`;
  }

  function table(rows, options) {
    const o = options || {};
    if (!rows || !rows.length) return "";
    const keys = o.keys || [...new Set(rows.flatMap((r) => Object.keys(r)))];
    const shown = rows.slice(0, o.limit || 50);
    const numeric = (k) => typeof (rows.find((r) => r[k] != null) || {})[k] === "number";
    return `<table class="compact ${esc(o.cls || "")}"><thead><tr>${keys.map((k) =>
      `<th${numeric(k) ? ' class="num"' : ""}>${esc(label(k))}</th>`).join("")}</tr></thead><tbody>${shown.map((r) =>
      `<tr${o.rowAttrs ? o.rowAttrs(r) : ""}>${keys.map((k) => cell(k, r[k])).join("")}</tr>`).join("")}</tbody></table>
      ${rows.length > shown.length ? `<p class="muted small">and ${rows.length - shown.length} more</p>` : ""}`;
  }

  function summaryHtml(summary, skip) {
    const figures = [];
    const lists = [];
    for (const [key, value] of Object.entries(summary || {})) {
      if (skip.includes(key)) continue;
      if (typeof value === "string" && value.length > 60) {
        lists.push(`<p class="muted small" data-summary="${esc(key)}">${esc(value)}</p>`);
      } else if (value == null || typeof value !== "object") {
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

  // one renderer per job (the shapes spark_jobs.analytics returns) -----------------------------

  const MAX_CHARTS = 6; // per section: a cluster with 1,000 topics must not draw 1,000 charts
  const MAX_TRACES = 12;

  function body(section, html) {
    section.querySelector("[data-body]").innerHTML = html;
  }

  function rule(summary) {
    return summary && summary.rule ? `<p class="muted small rule" data-rule>${esc(summary.rule)}</p>` : "";
  }

  function byRecords(perTopic) {
    return Object.keys(perTopic || {}).sort((a, b) =>
      sum(perTopic[b].records) - sum(perTopic[a].records) || (a < b ? -1 : 1));
  }

  function sum(values) {
    return (values || []).reduce((n, v) => n + (v || 0), 0);
  }

  function more(total, shown, what) {
    return total > shown ? `<p class="muted small">The ${shown} busiest of ${total} ${what} are drawn.</p>` : "";
  }

  const RENDER = {
    traffic(result, section) {
      const perTopic = (result.data && result.data.per_topic) || {};
      const topics = byRecords(perTopic).slice(0, MAX_TRACES);
      body(section, summaryHtml(result.summary, ["per_topic"]) +
        (topics.length
          ? `<div class="chart-pair">${chartBox("traffic", "records")}${chartBox("traffic", "bytes")}</div>`
          : noChart) +
        more(Object.keys(perTopic).length, topics.length, "topics") +
        table((result.summary && result.summary.per_topic) || [], {
          cls: "per-topic",
          keys: ["topic", "partitions", "records", "bytes", "peak_records_per_minute", "avg_records_per_minute",
            "avg_bytes_per_second", "first_minute", "last_minute"],
        }));
      if (!topics.length) return;
      const x = topics.map((t) => perTopic[t].minute);
      Weir.chart.create(section.querySelector('[data-chart="records"]'), topics,
        { x, y: topics.map((t) => perTopic[t].records), title: "Records per minute", yTitle: "records / min" });
      Weir.chart.create(section.querySelector('[data-chart="bytes"]'), topics,
        { x, y: topics.map((t) => perTopic[t].bytes), title: "Bytes per minute", yTitle: "bytes / min" });
    },

    "hot-partitions"(result, section) {
      const summary = result.summary || {};
      const partitions = (result.data && result.data.partitions) || {};
      const hotPartitions = summary.hot_partitions || [];
      const hotKeys = summary.hot_keys || [];
      // Topics with a hot partition first, then the most skewed.
      const skew = Object.fromEntries((summary.topics || []).map((t) => [t.topic, t.skew || 0]));
      const hotTopics = new Set(hotPartitions.map((p) => p.topic));
      const drawn = Object.keys(partitions).sort((a, b) =>
        (hotTopics.has(b) - hotTopics.has(a)) || (skew[b] || 0) - (skew[a] || 0) || (a < b ? -1 : 1))
        .slice(0, MAX_CHARTS);
      const flagged = hotPartitions.length
        ? `<p class="flagged" data-flagged>Hot: ${hotPartitions.map((p) =>
          `<span class="hot-chip" data-hot="${esc(p.topic)}/${p.partition}">${esc(p.topic)}/${p.partition} · ${(p.share * 100).toFixed(1)} %</span>`).join(" ")}</p>`
        : '<p class="muted" data-flagged>No partition is hot.</p>';
      body(section, summaryHtml(summary, ["topics", "hot_partitions", "hot_keys", "advice", "rule"]) +
        flagged + advice(summary) +
        (hotKeys.length ? `<h3>Hot keys</h3>${table(hotKeys, { cls: "hot-keys", keys: ["topic", "key", "records", "bytes", "share"] })}` : "") +
        (drawn.length ? `<div class="chart-grid">${drawn.map((t, i) => chartBox("hot-partitions", `share-${i}`)).join("")}</div>` : noChart) +
        more(Object.keys(partitions).length, drawn.length, "topics") +
        `<h3>Topics</h3>${table(summary.topics || [], {
          cls: "skew",
          keys: ["topic", "partitions", "records", "distinct_keys", "max_share", "skew", "hot_partitions"],
          rowAttrs: (t) => ((t.hot_partitions || []).length ? ' class="hot"' : ""),
        })}` + rule(summary));
      drawn.forEach((topic, i) => {
        const p = partitions[topic];
        bars(section.querySelector(`[data-chart="share-${i}"]`), [{
          type: "bar",
          name: "share of records",
          x: p.partition.map(String),
          y: p.share.map((v) => v * 100),
          marker: { color: p.hot.map((h) => (h ? HOT : NORMAL)) },
          hovertemplate: "partition %{x}: %{y:.1f} %<extra></extra>",
        }], {
          title: { text: `${topic}: share of records per partition`, font: { size: 13 } },
          xaxis: { title: { text: "partition" }, type: "category" },
          yaxis: { title: { text: "% of records" }, rangemode: "tozero" },
          shapes: [line(p.fair_share * 100, "#1a7f37"), line(p.threshold * 100, HOT)],
          showlegend: false,
        });
      });
    },

    "record-sizes"(result, section) {
      const summary = result.summary || {};
      const histograms = (result.data && result.data.histograms) || {};
      const records = Object.fromEntries((summary.topics || []).map((t) => [t.topic, t.records]));
      const topics = Object.keys(histograms).sort((a, b) => (records[b] || 0) - (records[a] || 0)).slice(0, MAX_TRACES);
      // Every topic's buckets share the same bounds; the longest list labels the axis.
      const labels = topics.map((t) => histograms[t].bucket).reduce((a, b) => (b.length > a.length ? b : a), []);
      body(section, summaryHtml(summary, ["topics", "advice"]) + advice(summary) +
        (topics.length ? chartBox("record-sizes", "histogram") : noChart) +
        more(Object.keys(histograms).length, topics.length, "topics") +
        ((summary.topics || []).length ? `<h3>Percentiles (key + value)</h3>${table(summary.topics, {
          cls: "percentiles", keys: ["topic", "records", "min", "p50", "p90", "p99", "max", "mean"],
        })}` : ""));
      if (!topics.length) return;
      bars(section.querySelector('[data-chart="histogram"]'), topics.map((t) => ({
        type: "bar", name: t, x: histograms[t].bucket, y: histograms[t].records,
      })), {
        barmode: "group",
        title: { text: "Records by size", font: { size: 13 } },
        xaxis: { type: "category", categoryorder: "array", categoryarray: labels, title: { text: "size" } },
        yaxis: { title: { text: "records" }, rangemode: "tozero" },
      });
    },

    "lag-trends"(result, section) {
      const summary = result.summary || {};
      const series = (result.data && result.data.series) || {};
      const lines = [];
      for (const [group, perTopic] of Object.entries(series)) {
        for (const [topic, cell] of Object.entries(perTopic)) lines.push({ group, topic, cell });
      }
      const growing = new Set((summary.growing || []).map((g) => `${g.group}/${g.topic}`));
      lines.sort((a, b) => growing.has(`${b.group}/${b.topic}`) - growing.has(`${a.group}/${a.topic}`)
        || Math.max(...b.cell.lag) - Math.max(...a.cell.lag));
      const drawn = lines.slice(0, MAX_TRACES);
      const growingHtml = (summary.growing || []).length
        ? `<p class="flagged" data-growing>Lag growing: ${summary.growing.map((g) =>
          `<span class="hot-chip">${esc(g.group)} / ${esc(g.topic)} · +${fmt.num(Math.round(g.slope_per_hour))}/h</span>`).join(" ")}</p>`
        : '<p class="muted" data-growing>No group\'s lag keeps growing.</p>';
      body(section, summaryHtml(summary, ["groups", "growing", "rule"]) + growingHtml +
        (drawn.length ? chartBox("lag-trends", "lag") : noChart) +
        more(lines.length, drawn.length, "group and topic series") +
        ((summary.groups || []).length ? `<h3>Trend per group and topic</h3>${table(summary.groups, {
          cls: "trends",
          keys: ["group", "topic", "samples", "first_lag", "last_lag", "max_lag", "slope_per_hour", "last_lag_seconds", "growing"],
          rowAttrs: (g) => (g.growing ? ' class="hot"' : ""),
        })}` : "") + rule(summary));
      if (!drawn.length) return;
      Weir.chart.create(section.querySelector('[data-chart="lag"]'), drawn.map((l) => `${l.group} / ${l.topic}`), {
        x: drawn.map((l) => l.cell.at), y: drawn.map((l) => l.cell.lag), title: "Lag over time", yTitle: "records behind",
      });
    },
  };

  function line(y, color) {
    return { type: "line", xref: "paper", x0: 0, x1: 1, y0: y, y1: y, line: { color, dash: "dash", width: 1 } };
  }

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

  Weir.runButtons(document.querySelector("main"), () =>
    "Spark reads the topics (the last day by default) and the result replaces the one shown here when it is done.");
})();
