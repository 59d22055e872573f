/* Brokers page.
 *
 * Cards (address, rack, up/down, controller, disk, traffic) follow the monitor's /ws/cluster/;
 * counts per broker, the election panel and the broker × partition heatmap follow
 * /ws/ui/brokers/?topic=<filter>, which pushes the layout only when leadership, replica sets
 * or ISRs change. Typing a filter opens a socket for that filter (no polling).
 */
(function () {
  "use strict";
  const { esc, fmt } = Weir;

  let cluster = Weir.data("cluster-data") || { brokers: [], controller: null };
  let layout = Weir.data("layout-data");
  const filterInput = document.getElementById("heatmap-filter");
  const heatmapDiv = document.getElementById("heatmap");
  const countsDiv = document.getElementById("counts-chart");
  const canOperate = Boolean(document.getElementById("elect-all"));

  // Heatmap cell values and their colours (a discrete scale over 0..3).
  const STATES = ["no replica", "replica not in ISR", "in-sync follower", "leader"];
  const COLORS = ["#f0f2f5", "#cf222e", "#9cc3f5", "#1f6feb"];
  const SCALE = COLORS.flatMap((c, i) => [[i / COLORS.length, c], [(i + 1) / COLORS.length, c]]);
  const LABELLED_COLUMNS = 80;

  function brokerIds() {
    const ids = new Set(cluster.brokers.map((b) => b.id));
    for (const id of Object.keys(layout.brokers || {})) ids.add(Number(id));
    return [...ids].sort((a, b) => a - b);
  }

  function counts(id) {
    return (layout.brokers || {})[String(id)] || { leaders: 0, replicas: 0, preferred: 0, out_of_sync: 0 };
  }

  function renderStats() {
    const up = cluster.brokers.filter((b) => b.alive).length;
    const outOfSync = Object.values(layout.brokers || {}).reduce((n, c) => n + c.out_of_sync, 0);
    const values = {
      up: `${up} / ${cluster.brokers.length}`,
      controller: cluster.controller != null && cluster.controller >= 0 ? cluster.controller : "none",
      partitions: fmt.num(layout.partitions),
      off_preferred: fmt.num(layout.off_preferred),
      out_of_sync: fmt.num(outOfSync),
    };
    Weir.stats(values);
  }

  function renderCards() {
    const byId = Object.fromEntries(cluster.brokers.map((b) => [b.id, b]));
    const totalLeaders = brokerIds().reduce((n, id) => n + counts(id).leaders, 0);
    document.getElementById("broker-cards").innerHTML = brokerIds().map((id) => {
      const b = byId[id] || { id, host: "?", port: "", rack: null, alive: false };
      const c = counts(id);
      const share = totalLeaders ? (100 * c.leaders) / totalLeaders : 0;
      return `
      <section class="broker-card ${b.alive ? "" : "down"}" id="broker-${id}" data-broker="${id}">
        <div class="head">
          <span class="name">Broker ${id}</span>
          ${id === cluster.controller ? '<span class="badge controller">controller</span>' : ""}
          <span class="badge ${b.alive ? "up" : "down"}">${b.alive ? "up" : "down"}</span>
        </div>
        <div class="addr"><span class="mono">${esc(b.host)}${b.port ? ":" + b.port : ""}</span>
          · rack ${esc(b.rack || "–")}</div>
        <dl>
          <div><dt>Leaders</dt><dd data-field="leaders">${fmt.num(c.leaders)}</dd></div>
          <div><dt>Replicas</dt><dd data-field="replicas">${fmt.num(c.replicas)}</dd></div>
          <div><dt>Not in ISR</dt><dd data-field="out_of_sync" class="${c.out_of_sync ? "bad" : ""}">${fmt.num(c.out_of_sync)}</dd></div>
          <div><dt>Disk</dt><dd data-field="disk">${fmt.bytes(b.disk_bytes)}</dd></div>
          <div><dt>In</dt><dd data-field="in">${b.bytes_in_per_s == null ? "–" : fmt.rate(b.bytes_in_per_s)}</dd></div>
          <div><dt>Out</dt><dd data-field="out">${b.bytes_out_per_s == null ? "–" : fmt.rate(b.bytes_out_per_s)}</dd></div>
        </dl>
        <div class="share">
          <div class="label"><span>Leader share</span>
            <span>${share.toFixed(0)} % · preferred leader of ${fmt.num(c.preferred)}</span></div>
          <div class="progress"><div style="width:${share.toFixed(1)}%"></div></div>
        </div>
      </section>`;
    }).join("");
    if (location.hash) {
      const target = document.querySelector(location.hash.replace(/[^#\w-]/g, ""));
      if (target && !renderCards.scrolled) { target.scrollIntoView(); renderCards.scrolled = true; }
    }
  }

  const plotConfig = { displaylogo: false, responsive: true, displayModeBar: false };
  // A cell is at most this wide: a filter down to a few partitions stays a heatmap, not a wall.
  const MAX_CELL_PX = 48;
  const transparent = { paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)" };

  function renderCountsChart() {
    const ids = brokerIds();
    const x = ids.map((id) => `broker ${id}`);
    const trace = (name, key, color) => ({
      type: "bar", name, x, y: ids.map((id) => counts(id)[key]), marker: { color },
    });
    Plotly.react(countsDiv, [
      trace("replicas", "replicas", "#9cc3f5"),
      trace("leaders", "leaders", "#1f6feb"),
      trace("preferred leader", "preferred", "#6e40c9"),
    ], Object.assign({
      barmode: "group", margin: { l: 50, r: 10, t: 10, b: 40 },
      legend: { orientation: "h", y: -0.18 }, yaxis: { rangemode: "tozero" },
    }, transparent), plotConfig);
  }

  function renderElection() {
    const count = document.getElementById("off-preferred-count");
    count.textContent = fmt.num(layout.off_preferred);
    count.classList.toggle("bad", layout.off_preferred > 0);
    document.getElementById("off-preferred-text").textContent = layout.off_preferred === 1
      ? "partition is led by a replica other than its preferred (first) replica."
      : "partitions are led by a replica other than their preferred (first) replica.";
    if (!canOperate) return;
    const button = document.getElementById("elect-off-preferred");
    button.disabled = layout.off_preferred === 0;
    button.textContent = layout.off_preferred
      ? `Elect preferred leaders (${fmt.num(layout.off_preferred)} partition${layout.off_preferred === 1 ? "" : "s"})`
      : "Every partition has its preferred leader";
  }

  function cellState(id, leader, replicas, isr) {
    if (!replicas.includes(id)) return 0;
    if (id === leader) return 3;
    return isr.includes(id) ? 2 : 1;
  }

  function renderHeatmap() {
    const ids = brokerIds();
    const cols = layout.shown || [];
    const shown = document.getElementById("heatmap-shown");
    const scope = layout.filter ? ` matching “${layout.filter}”` : "";
    shown.textContent = cols.length < layout.matching
      ? `Showing the first ${fmt.num(cols.length)} of ${fmt.num(layout.matching)} partitions${scope} — filter to narrow`
      : `${fmt.num(cols.length)} partition${cols.length === 1 ? "" : "s"}${scope}`;
    if (!cols.length) {
      Plotly.purge(heatmapDiv);
      heatmapDiv.innerHTML = `<p class="muted">No partition${scope}.</p>`;
      return;
    }
    if (heatmapDiv.querySelector("p")) heatmapDiv.innerHTML = "";
    const x = cols.map(([t, p]) => `${t}-${p}`);
    const z = ids.map((id) => cols.map(([, , leader, replicas, isr]) => cellState(id, leader, replicas, isr)));
    const text = ids.map((id, row) => cols.map(([t, p, leader, replicas, isr], col) =>
      `<b>${esc(t)}-${p}</b><br>broker ${id}: ${STATES[z[row][col]]}` +
      `<br>leader ${leader < 0 ? "none" : leader} (preferred ${replicas[0] ?? "–"})` +
      `<br>replicas [${replicas.join(", ")}]<br>ISR [${isr.join(", ")}]`));
    const labelled = cols.length <= LABELLED_COLUMNS;
    const room = Math.max(1, heatmapDiv.clientWidth - 80);
    const widthShare = Math.min(1, (cols.length * MAX_CELL_PX) / room);
    Plotly.react(heatmapDiv, [{
      type: "heatmap", x, y: ids.map((id) => `broker ${id}`), z, text, hoverinfo: "text",
      colorscale: SCALE, zmin: -0.5, zmax: 3.5, showscale: false, xgap: 1, ygap: 2,
    }], Object.assign({
      height: 90 + 46 * ids.length + (labelled ? 110 : 0),
      margin: { l: 70, r: 10, t: 10, b: labelled ? 120 : 20 },
      xaxis: {
        type: "category", tickangle: -45, showticklabels: labelled, automargin: true, showgrid: false,
        domain: [0, widthShare],
      },
      yaxis: { type: "category", autorange: "reversed", showgrid: false },
    }, transparent), plotConfig);
  }

  function renderLayout() {
    renderStats();
    renderCards();
    renderCountsChart();
    renderElection();
    renderHeatmap();
  }

  // Live: the monitor's cluster message for the cards, the layout socket for the rest.
  Weir.live("/ws/cluster/", (message) => {
    if (message.type !== "cluster") return;
    cluster = message;
    renderStats();
    renderCards();
  });

  const errorBox = document.getElementById("heatmap-error");
  let layoutSocket = null;
  function follow(filter) {
    if (layoutSocket) layoutSocket.close();
    const path = "/ws/ui/brokers/" + (filter ? "?topic=" + encodeURIComponent(filter) : "");
    layoutSocket = Weir.live(path, (message) => {
      if (message.type === "error") {
        errorBox.textContent = message.message;
        errorBox.hidden = false;
        return;
      }
      if (message.type !== "layout" || message.filter !== filterInput.value.trim()) return;
      errorBox.hidden = true;
      layout = message;
      renderLayout();
    });
  }

  const datalist = document.getElementById("topic-names");
  datalist.innerHTML = (Weir.data("topic-names-data") || [])
    .map((name) => `<option value="${esc(name)}"></option>`).join("");
  let typing = null;
  filterInput.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => follow(filterInput.value.trim()), 250);
  });

  // Preferred leader election (operators only).
  function electionResult(result) {
    const box = document.getElementById("election-result");
    const rows = result.results.slice(0, 200).map((r) => {
      const kind = r.elected ? "elected" : (r.succeeded ? "not-needed" : "failed");
      const label = r.elected ? "elected" : (r.succeeded ? "already preferred" : "failed");
      return `<tr><td class="mono">${esc(r.topic)}-${r.partition}</td>
        <td><span class="badge ${kind}">${label}</span></td><td>${esc(r.message)}</td></tr>`;
    }).join("");
    const more = result.results.length > 200 ? `<p class="muted">and ${result.results.length - 200} more</p>` : "";
    box.innerHTML = `
      <div class="summary" data-result>
        <span class="badge elected">${fmt.num(result.elected)} elected</span>
        <span class="badge not-needed">${fmt.num(result.not_needed)} already preferred</span>
        <span class="badge failed">${fmt.num(result.failed)} failed</span>
      </div>
      ${rows ? `<table><thead><tr><th>Partition</th><th>Result</th><th>Message</th></tr></thead><tbody>${rows}</tbody></table>`
        : '<p class="muted">No partition needed a new leader.</p>'}${more}`;
    box.hidden = false;
  }

  async function elect(all) {
    const listed = layout.off_preferred_partitions || [];
    // Beyond the listed partitions an election over everything has the same effect.
    const everything = all || listed.length < layout.off_preferred;
    const body = everything ? { all: true }
      : { partitions: listed.map(([topic, partition]) => ({ topic, partition })) };
    const count = everything ? layout.partitions : listed.length;
    const result = await Weir.act({
      confirm: {
        title: "Preferred leader election",
        message: all
          ? `Run a preferred leader election over all ${fmt.num(count)} partitions? Leadership moves wherever the preferred replica is in sync and not leading.`
          : `Move leadership of ${fmt.num(layout.off_preferred)} partition(s) back to their preferred replica?`,
        confirmLabel: "Elect leaders",
      },
      run: () => Weir.api("POST", "/api/elections/preferred/", body),
      done: (r) => `Election done: ${r.elected} elected, ${r.not_needed} already preferred, ${r.failed} failed`,
    });
    if (result) electionResult(result);
  }

  if (canOperate) {
    document.getElementById("elect-off-preferred").addEventListener("click", () => elect(false));
    document.getElementById("elect-all").addEventListener("click", () => elect(true));
  }

  renderLayout();
  follow("");
})();
