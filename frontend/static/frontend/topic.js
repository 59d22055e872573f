/* Topic detail: partition table live from /ws/ui/topics/<name>/, configs, and operations
 * (add partitions, edit or reset a config, delete the topic with typed confirmation). */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const cluster = document.body.dataset.cluster;
  const canOperate = Boolean(document.getElementById("operations"));
  let topic = Weir.data("topic-data");
  let configs = Weir.data("configs-data") || [];
  const name = topic.name;
  const base = `/kafka/v3/clusters/${cluster}/topics/${encodeURIComponent(name)}`;

  function replicas(list, row, kind) {
    return list.map((b) => {
      const classes = ["replica"];
      if (b === row.leader) classes.push("leader");
      if (kind === "replicas" && !row.isr.includes(b)) classes.push("out");
      return `<span class="${classes.join(" ")}" title="broker ${b}">${b}</span>`;
    }).join("");
  }

  function renderStats() {
    const ps = topic.partitions;
    const known = ps.filter((p) => p.size != null);
    const sum = (key) => known.reduce((n, p) => n + p[key], 0);
    const records = known.reduce((n, p) => n + Math.max(0, p.high_watermark - p.log_start_offset), 0);
    const stats = {
      partitions: fmt.num(ps.length),
      replication_factor: fmt.num(topic.replication_factor),
      under_replicated: fmt.num(ps.filter((p) => p.under_replicated).length),
      offline: fmt.num(ps.filter((p) => p.offline).length),
      records: known.length ? fmt.num(records) : "–",
      size: known.length ? fmt.bytes(sum("size")) : "–",
    };
    Weir.stats(stats);
    const count = document.getElementById("partitions-count");
    if (count && !count.value) count.value = ps.length + 1;
    if (count) count.min = ps.length + 1;
  }

  function renderPartitions() {
    document.querySelector("#partitions-table tbody").innerHTML = topic.partitions.map((p) => {
      const badges = [];
      if (p.offline) badges.push('<span class="badge bad">offline</span>');
      else if (p.under_replicated) badges.push('<span class="badge urp">under-replicated</span>');
      if (p.adding.length || p.removing.length) badges.push('<span class="badge warn">reassigning</span>');
      const records = p.high_watermark == null ? null : Math.max(0, p.high_watermark - p.log_start_offset);
      return `<tr data-partition="${p.partition}">
        <td class="num">${p.partition}</td>
        <td>${p.leader == null ? '<span class="badge bad">none</span>'
          : `${p.leader}${p.leader === p.preferred_leader ? " ★" : ""}`}</td>
        <td>${replicas(p.replicas, p, "replicas")}</td>
        <td>${replicas(p.isr, p, "isr")}</td>
        <td class="num" data-col="log_start">${fmt.num(p.log_start_offset)}</td>
        <td class="num" data-col="leo">${fmt.num(p.log_end_offset)}</td>
        <td class="num" data-col="hw">${fmt.num(p.high_watermark)}</td>
        <td class="num">${fmt.num(records)}</td>
        <td class="num">${fmt.bytes(p.size)}</td>
        <td>${badges.join(" ")} <a href="/topics/${encodeURIComponent(name)}/messages/?partition=${p.partition}">messages</a></td>
      </tr>`;
    }).join("");
  }

  // -- configs ------------------------------------------------------------------------------
  const configSearch = document.getElementById("config-search");
  const onlyOverrides = document.getElementById("only-overrides");

  function isOverride(c) { return c.source === "DYNAMIC_TOPIC_CONFIG"; }

  function renderConfigs() {
    const needle = configSearch.value.trim().toLowerCase();
    const shown = configs.filter((c) => (!onlyOverrides.checked || isOverride(c))
      && (!needle || c.name.includes(needle) || String(c.value ?? "").toLowerCase().includes(needle)));
    document.querySelector("#configs-table tbody").innerHTML = shown.map((c) => `
      <tr data-config="${esc(c.name)}" class="${isOverride(c) ? "override" : ""}">
        <td class="name mono">${esc(c.name)}</td>
        <td class="value">${c.is_sensitive ? '<span class="muted">(sensitive)</span>'
          : (c.value == null ? '<span class="null">null</span>' : esc(c.value))}</td>
        <td>${isOverride(c) ? '<span class="badge override">topic override</span>'
          : `<span class="muted">${esc(c.source.toLowerCase().replaceAll("_", " "))}</span>`}</td>
        ${canOperate ? `<td class="actions">${c.is_read_only ? '<span class="muted">read-only</span>'
          : `<button type="button" data-edit="${esc(c.name)}">Edit</button>
             ${isOverride(c) ? `<button type="button" data-reset="${esc(c.name)}">Reset</button>` : ""}`}</td>` : ""}
      </tr>`).join("")
      || `<tr><td colspan="4" class="empty">No config matches.</td></tr>`;
  }

  async function reloadConfigs() {
    const list = await Weir.api("GET", `${base}/configs`);
    configs = list.data.map((c) => ({
      name: c.name, value: c.value, source: c.source, is_read_only: c.is_read_only,
      is_sensitive: c.is_sensitive, is_default: c.is_default,
    }));
    renderConfigs();
  }

  configSearch.addEventListener("input", renderConfigs);
  onlyOverrides.addEventListener("change", renderConfigs);

  function editConfig(configName) {
    const config = configs.find((c) => c.name === configName);
    const cell = document.querySelector(`#configs-table tr[data-config="${CSS.escape(configName)}"] td.value`);
    cell.innerHTML = `<form class="config-edit">
        <input aria-label="new value of ${esc(configName)}" value="${esc(config.value ?? "")}">
        <button type="submit" class="primary">Save</button>
        <button type="button" class="cancel">Cancel</button>
      </form><div class="error-text config-error" role="alert" hidden></div>`;
    const form = cell.querySelector("form");
    const input = form.querySelector("input");
    const errorBox = cell.querySelector(".config-error");
    input.focus();
    input.select();
    form.querySelector(".cancel").addEventListener("click", renderConfigs);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const value = input.value.trim();
      errorBox.hidden = true;
      const done = await Weir.act({
        confirm: {
          title: `Set ${configName}?`,
          message: `${configName}: ${config.value ?? "null"} → ${value} on topic ${name}`,
          confirmLabel: "Save",
        },
        run: async () => {
          try {
            await Weir.api("PUT", `${base}/configs/${encodeURIComponent(configName)}`, { value });
            return true;
          } catch (error) {
            errorBox.textContent = error.message;
            errorBox.hidden = false;
            throw error;
          }
        },
        done: `${configName} set to ${value}`,
      });
      if (done) await reloadConfigs();
    });
  }

  async function resetConfig(configName) {
    const done = await Weir.act({
      confirm: {
        title: `Reset ${configName}?`,
        message: `Remove the topic override; ${configName} falls back to the broker default.`,
        confirmLabel: "Reset",
      },
      run: async () => {
        await Weir.api("DELETE", `${base}/configs/${encodeURIComponent(configName)}`);
        return true;
      },
      done: `${configName} reset to its default`,
    });
    if (done) await reloadConfigs();
  }

  document.getElementById("configs-table").addEventListener("click", (event) => {
    const edit = event.target.closest("[data-edit]");
    const reset = event.target.closest("[data-reset]");
    if (edit) editConfig(edit.dataset.edit);
    if (reset) resetConfig(reset.dataset.reset);
  });

  // -- operations -----------------------------------------------------------------------------
  const partitionsForm = document.getElementById("partitions-form");
  if (partitionsForm) {
    partitionsForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const count = Number(document.getElementById("partitions-count").value);
      const current = topic.partitions.length;
      await Weir.act({
        confirm: {
          title: `Add partitions to ${name}?`,
          message: `${current} → ${count} partitions. Partitions cannot be removed afterwards.`,
          confirmLabel: "Add partitions",
        },
        run: () => Weir.api("PATCH", base, { partitions_count: count }),
        done: (result) => `${name} now has ${result.partitions_count} partitions`,
      });
    });
  }

  const deleteButton = document.getElementById("delete-topic");
  if (deleteButton) {
    deleteButton.addEventListener("click", async () => {
      const done = await Weir.act({
        confirm: {
          title: `Delete topic ${name}?`,
          message: "Every partition and record of this topic is deleted. This cannot be undone.",
          typed: name,
          danger: true,
          confirmLabel: "Delete topic",
        },
        run: async () => { await Weir.api("DELETE", base); return true; },
        done: `Topic ${name} deleted`,
      });
      if (done) {
        live.close();
        Weir.go("/topics/", `Topic ${name} deleted`);
      }
    });
  }

  const gone = document.getElementById("topic-gone");
  const live = Weir.live(`/ws/ui/topics/${encodeURIComponent(name)}/`, (message) => {
    if (message.type === "error") {
      gone.textContent = message.message;
      gone.hidden = false;
      return;
    }
    if (message.type !== "topic") return;
    gone.hidden = true;
    // Overrides changed elsewhere (another operator, the CLI): re-read the configs once.
    const overrides = JSON.stringify(message.overrides);
    if (overrides !== JSON.stringify(topic.overrides)) reloadConfigs().catch(() => {});
    topic = message;
    renderStats();
    renderPartitions();
  });

  renderStats();
  renderPartitions();
  renderConfigs();
})();
