/* Consumer groups list: first drawn from the monitor's group list (server JSON), then kept
 * current from /ws/cluster/ (every group's status and total lag each monitor tick).
 * Search, status filter and sorting run in the browser over the JSON. */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const body = document.querySelector("#groups-table tbody");
  const search = document.getElementById("group-search");
  const statusFilter = document.getElementById("status-filter");
  const STATUS_RANK = { OK: 0, NOTFOUND: 1, WARN: 2, ERR: 3 };

  // group id -> {group, state, members, status, total_lag, max_lag_seconds}
  const groups = new Map();
  let sortKey = "group";
  let sortDir = 1;
  let lastDrawn = "";

  for (const g of Weir.data("groups-data") || []) groups.set(g.group, g);

  function compare(a, b) {
    let x = a[sortKey]; let y = b[sortKey];
    if (sortKey === "status") { x = STATUS_RANK[x] ?? 0; y = STATUS_RANK[y] ?? 0; }
    if (x == null) x = -1;
    if (y == null) y = -1;
    if (x < y) return -sortDir;
    if (x > y) return sortDir;
    return a.group < b.group ? -1 : 1;
  }

  function visible() {
    const needle = search.value.trim().toLowerCase();
    const wanted = statusFilter.value;
    return [...groups.values()]
      .filter((g) => !needle || g.group.toLowerCase().includes(needle))
      .filter((g) => !wanted || g.status === wanted)
      .sort(compare);
  }

  function row(g) {
    const state = g.state || "–";
    return `<tr data-group="${esc(g.group)}">
      <td><a href="/groups/${encodeURIComponent(g.group)}/">${esc(g.group)}</a></td>
      <td><span class="badge state ${esc(state)}">${esc(state)}</span></td>
      <td class="num">${fmt.num(g.members)}</td>
      <td class="num" data-col="lag">${fmt.num(g.total_lag)}</td>
      <td class="num">${g.max_lag_seconds ? fmt.seconds(g.max_lag_seconds) : "–"}</td>
      <td><span class="badge ${esc(g.status)}" data-col="status">${esc(g.status)}</span></td>
    </tr>`;
  }

  function draw() {
    const shown = visible();
    const html = shown.map(row).join("") || `<tr><td colspan="6" class="muted">${
      groups.size ? "No group matches." : "No consumer groups yet."}</td></tr>`;
    if (html !== lastDrawn) { body.innerHTML = html; lastDrawn = html; }
    const plural = groups.size === 1 ? "group" : "groups";
    document.getElementById("group-count").textContent = shown.length === groups.size
      ? `${groups.size} ${plural}` : `${shown.length} of ${groups.size} ${plural}`;
    const counts = { OK: 0, WARN: 0, ERR: 0 };
    let lag = 0;
    for (const g of groups.values()) {
      if (g.status in counts) counts[g.status] += 1;
      lag += g.total_lag || 0;
    }
    const stat = (key, value) => { document.querySelector(`[data-stat="${key}"]`).textContent = value; };
    stat("count", fmt.num(groups.size));
    for (const [key, n] of Object.entries(counts)) stat(key, fmt.num(n));
    stat("lag", fmt.num(lag));
  }

  for (const th of document.querySelectorAll("#groups-table th[data-sort]")) {
    th.addEventListener("click", () => {
      const key = th.dataset.sort;
      // Numbers and status read best worst-first; names alphabetically.
      sortDir = key === sortKey ? -sortDir : (["group", "state"].includes(key) ? 1 : -1);
      sortKey = key;
      for (const other of th.parentElement.children) other.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      draw();
    });
  }
  search.addEventListener("input", draw);
  statusFilter.addEventListener("change", draw);
  draw();

  Weir.live("/ws/cluster/", (cluster) => {
    if (cluster.type !== "cluster") return;
    // A cluster view computed without the monitor has no groups; it must not empty the list.
    if (!cluster.groups.length && groups.size && !cluster.brokers.some((b) => "leaders" in b)) return;
    const seen = new Set();
    for (const g of cluster.groups) {
      seen.add(g.group);
      // Only what the message carries changes; state and members stay from the last reading.
      groups.set(g.group, Object.assign({}, groups.get(g.group) || { group: g.group }, g));
    }
    for (const name of [...groups.keys()]) if (!seen.has(name)) groups.delete(name);
    document.getElementById("updated-at").textContent = fmt.time(Date.parse(cluster.at));
    draw();
  });
})();
