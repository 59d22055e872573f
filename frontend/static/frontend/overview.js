/* Cluster overview: rendered from /ws/cluster/ messages (the monitor's tick). */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const chartDiv = document.getElementById("traffic-chart");
  const SHOWN_GROUPS = 15;

  function totals(brokers) {
    let inRate = 0; let outRate = 0;
    for (const b of Object.values(brokers || {})) {
      inRate += b.bytes_in_per_s || 0; outRate += b.bytes_out_per_s || 0;
    }
    return [inRate, outRate];
  }

  function drawChart(history) {
    const x = history.map((p) => p.at);
    const ins = history.map((p) => totals(p.brokers)[0]);
    const outs = history.map((p) => totals(p.brokers)[1]);
    return Weir.chart.create(chartDiv, ["bytes in/s", "bytes out/s"], {
      x: [x, x], y: [ins, outs], yTitle: "bytes/s",
    });
  }

  function render(cluster) {
    const up = cluster.brokers.filter((b) => b.alive).length;
    const stats = {
      brokers: `${up} / ${cluster.brokers.length}`,
      controller: cluster.controller >= 0 ? cluster.controller : "none",
      topics: fmt.num(cluster.topics),
      partitions: fmt.num(cluster.partitions.count),
      under_replicated: fmt.num(cluster.partitions.under_replicated),
      offline: fmt.num(cluster.partitions.offline),
      groups: fmt.num(cluster.groups.length),
    };
    Weir.stats(stats);
    document.querySelector("#brokers-table tbody").innerHTML = cluster.brokers.map((b) => `
      <tr data-broker="${b.id}">
        <td><a href="/brokers/#broker-${b.id}">${b.id}</a>
          ${b.id === cluster.controller ? '<span class="badge controller">controller</span>' : ""}</td>
        <td class="mono">${esc(b.host)}:${b.port}</td>
        <td>${esc(b.rack || "–")}</td>
        <td><span class="badge ${b.alive ? "up" : "down"}">${b.alive ? "up" : "down"}</span></td>
        <td class="num">${fmt.num(b.leaders)}</td>
        <td class="num">${fmt.num(b.replicas)}</td>
        <td class="num">${fmt.bytes(b.disk_bytes)}</td>
        <td class="num">${fmt.rate(b.bytes_in_per_s)}</td>
        <td class="num">${fmt.rate(b.bytes_out_per_s)}</td>
      </tr>`).join("");
    const groups = [...cluster.groups].sort((a, b) => b.total_lag - a.total_lag);
    document.querySelector("#groups-table tbody").innerHTML = groups.slice(0, SHOWN_GROUPS).map((g) => `
      <tr><td><a href="/groups/${encodeURIComponent(g.group)}/">${esc(g.group)}</a></td>
      <td><span class="badge ${esc(g.status)}">${esc(g.status)}</span></td>
      <td class="num">${fmt.num(g.total_lag)}</td></tr>`).join("")
      || '<tr><td colspan="3" class="muted">No consumer groups.</td></tr>';
    document.getElementById("groups-more").textContent = groups.length > SHOWN_GROUPS
      ? `and ${groups.length - SHOWN_GROUPS} more on the consumer groups page` : "";
    document.getElementById("updated-at").textContent = cluster.at || "–";
  }

  let lastAt = null;
  const ready = drawChart(Weir.data("traffic-data") || []);
  render(Weir.data("cluster-data"));
  Weir.live("/ws/cluster/", (cluster) => {
    if (cluster.type !== "cluster") return;
    render(cluster);
    // Only the monitor's messages carry rates; a point per tick, not per message.
    const rated = cluster.brokers.some((b) => "bytes_in_per_s" in b);
    if (!rated || cluster.at === lastAt) return;
    lastAt = cluster.at;
    const byId = Object.fromEntries(cluster.brokers.map((b) => [b.id, b]));
    ready.then(() => Weir.chart.push(chartDiv, cluster.at, totals(byId)));
  });
})();
