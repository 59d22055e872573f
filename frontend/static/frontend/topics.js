/* Topic list: rows from the page (json_script), then from /ws/ui/topics/ (rows + rates).
 * Filtering, sorting and the internal-topics toggle happen here, in the browser. */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const cluster = document.body.dataset.cluster;
  const tbody = document.querySelector("#topics-table tbody");
  const search = document.getElementById("topic-search");
  const showInternal = document.getElementById("show-internal");
  // A page of rows at a time: laying out 1,000 table rows costs the browser more than the
  // whole response, and nobody reads past the first screens without filtering.
  const PAGE = 100;
  // One formatter for every cell (toLocaleString builds a new one per call).
  const numbers = new Intl.NumberFormat("en-US");
  const num = (n) => (n == null ? "–" : numbers.format(n));

  let rows = Weir.data("topics-data") || [];
  let sortKey = "name";
  let ascending = true;
  const pages = Weir.pager("topics", PAGE, () => render());

  function rate(value, unit) {
    if (value == null) return '<span class="muted">–</span>';
    if (value === 0) return `<span class="rate-zero">0 ${unit}</span>`;
    return unit === "B/s" ? fmt.rate(value) : `${num(Math.round(value * 10) / 10)} ${unit}`;
  }

  function visible() {
    const needle = search.value.trim().toLowerCase();
    return rows.filter((r) => (showInternal.checked || !r.internal)
      && (!needle || r.name.toLowerCase().includes(needle)));
  }

  function sorted(list) {
    const sign = ascending ? 1 : -1;
    return [...list].sort((a, b) => {
      const x = a[sortKey]; const y = b[sortKey];
      if (x == null && y == null) return a.name.localeCompare(b.name);
      if (x == null) return 1;
      if (y == null) return -1;
      if (typeof x === "string") return sign * x.localeCompare(y);
      return sign * (x - y) || a.name.localeCompare(b.name);
    });
  }

  function renderStats() {
    const shown = rows.filter((r) => showInternal.checked || !r.internal);
    const sum = (key) => shown.reduce((n, r) => n + (r[key] || 0), 0);
    const anyRate = shown.some((r) => r.records_per_s != null);
    const stats = {
      topics: num(shown.length),
      partitions: num(sum("partitions")),
      under_replicated: num(sum("under_replicated")),
      size: fmt.bytes(sum("size")),
      records_per_s: anyRate ? `${num(Math.round(sum("records_per_s")))}/s` : "–",
      bytes_per_s: anyRate ? fmt.rate(sum("bytes_per_s")) : "–",
    };
    Weir.stats(stats);
  }

  function render() {
    const list = sorted(visible());
    tbody.innerHTML = pages.rows(list).map((r) => `
      <tr data-topic="${esc(r.name)}">
        <td class="name"><a href="/topics/${encodeURIComponent(r.name)}/">${esc(r.name)}</a>
          ${r.internal ? '<span class="badge internal">internal</span>' : ""}</td>
        <td class="num">${num(r.partitions)}</td>
        <td class="num">${num(r.replication_factor)}</td>
        <td class="num">${r.under_replicated || r.offline
          ? `<span class="badge ${r.offline ? "bad" : "urp"}">${num(r.under_replicated)}${r.offline ? ` · ${r.offline} offline` : ""}</span>`
          : "0"}</td>
        <td class="num">${num(r.records)}</td>
        <td class="num">${fmt.bytes(r.size)}</td>
        <td class="num" data-col="records_per_s">${rate(r.records_per_s, "rec/s")}</td>
        <td class="num" data-col="bytes_per_s">${rate(r.bytes_per_s, "B/s")}</td>
      </tr>`).join("")
      || `<tr><td colspan="8" class="empty">${rows.length ? "No topic matches the filter." : "No topics yet."}</td></tr>`;
    const internalHidden = showInternal.checked ? 0 : rows.filter((r) => r.internal).length;
    document.getElementById("topic-count").textContent =
      `${num(list.length)} topic${list.length === 1 ? "" : "s"}${search.value.trim() ? " match" : ""}`
      + (internalHidden ? ` · ${num(internalHidden)} internal hidden` : "");
    document.querySelectorAll("#topics-table th[data-sort]").forEach((th) => {
      th.classList.toggle("sorted", th.dataset.sort === sortKey);
      th.classList.toggle("asc", th.dataset.sort === sortKey && ascending);
    });
    renderStats();
  }

  document.querySelectorAll("#topics-table th[data-sort]").forEach((th) => {
    th.addEventListener("click", () => {
      if (sortKey === th.dataset.sort) ascending = !ascending;
      else { sortKey = th.dataset.sort; ascending = sortKey === "name"; }
      pages.reset();
      render();
    });
  });
  search.addEventListener("input", () => { pages.reset(); render(); });
  showInternal.addEventListener("change", () => { pages.reset(); render(); });

  Weir.live("/ws/ui/topics/", (message) => {
    if (message.type !== "topics") return;
    rows = message.topics;
    render();
  });
  render();

  // -- create (admins) ------------------------------------------------------------------
  const panel = document.getElementById("create-panel");
  if (!panel) return;
  const form = document.getElementById("create-form");
  const errorBox = document.getElementById("create-error");
  const toggle = document.getElementById("create-toggle");

  const showError = (text) => Weir.showError(errorBox, text);

  // "name=value" lines → [{name, value}]; a line without "=" is an error the user must fix.
  function parseConfigs(text) {
    const configs = [];
    text.split("\n").map((l) => l.trim()).filter(Boolean).forEach((line, i) => {
      const at = line.indexOf("=");
      if (at <= 0) throw new Error(`config line ${i + 1} ("${line}") is not name=value`);
      configs.push({ name: line.slice(0, at).trim(), value: line.slice(at + 1).trim() });
    });
    return configs;
  }

  toggle.addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    if (!panel.hidden) document.getElementById("create-name").focus();
  });
  document.getElementById("create-cancel").addEventListener("click", () => { panel.hidden = true; });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    const name = document.getElementById("create-name").value.trim();
    let configs;
    try {
      if (!name) throw new Error("the topic needs a name");
      configs = parseConfigs(document.getElementById("create-configs").value);
    } catch (error) {
      showError(error.message);
      return;
    }
    const body = { topic_name: name, configs };
    const partitions = document.getElementById("create-partitions").value.trim();
    const rf = document.getElementById("create-rf").value.trim();
    if (partitions) body.partitions_count = Number(partitions);
    if (rf) body.replication_factor = Number(rf);
    const summary = `${partitions || "default"} partitions, replication factor ${rf || "default"}`
      + (configs.length ? `, ${configs.map((c) => `${c.name}=${c.value}`).join(", ")}` : "");
    const created = await Weir.act({
      confirm: { title: `Create topic ${name}?`, message: summary, confirmLabel: "Create" },
      run: async () => {
        try {
          return await Weir.api("POST", `/kafka/v3/clusters/${cluster}/topics`, body);
        } catch (error) {
          showError(error.message);
          throw error;
        }
      },
      done: `Topic ${name} created`,
    });
    if (created) {
      form.reset();
      panel.hidden = true;
      // Shown at once; the socket's next message confirms it with sizes and rates.
      if (!rows.some((r) => r.name === name)) {
        rows = rows.concat([{
          name, internal: false, partitions: created.partitions_count,
          replication_factor: created.replication_factor, under_replicated: 0, offline: 0,
          size: null, records: null, records_per_s: null, bytes_per_s: null,
        }]);
      }
      render();
    }
  });
})();
