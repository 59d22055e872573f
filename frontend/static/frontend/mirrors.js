/* Mirrors page: flows and partitions from the page (json_script), then from /ws/ui/mirrors/.
 * Each message adds a point per flow to the lag and throughput charts (a flow first seen later
 * gets its own trace). Operators fail a group over with POST /api/mirrors/<src>/<dst>/failover/:
 * "Dry run" shows the translated offsets, "Commit" applies them after a confirmation. */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const PAGE = 100;
  let state = Weir.data("mirrors-data") || { flows: [], config: {} };
  const pager = Weir.pager("partitions", PAGE, () => render());

  const age = (s) => (s == null ? '<span class="muted">never</span>' : fmt.seconds(s));

  function flowErrors(f) {
    const lines = [];
    if (f.cluster_error) lines.push(`clusters: ${f.cluster_error}`);
    for (const e of f.errors.slice(0, 3)) lines.push(`${fmt.time(e.at_ms)} ${e.process_id}: ${e.message}`);
    if (!lines.length) return '<span class="muted">–</span>';
    return `<div class="flow-errors">${lines.map((l) => `<div title="${esc(l)}">${esc(l)}</div>`).join("")}</div>`;
  }

  function render() {
    const config = state.config || {};
    Weir.showError("mirror-config-error", config.error || "");
    const note = document.getElementById("mirror-config-note");
    note.hidden = Boolean(config.loaded || config.error);
    note.textContent = "WEIR_MIRROR_PROPERTIES is not set: the flows below are what running mirror-maker "
      + "processes publish, their lag is the processes' own, and failover needs the setting.";

    const flows = state.flows || [];
    Weir.stats({
      flows: fmt.num(flows.filter((f) => f.enabled).length),
      processes: fmt.num(flows.reduce((n, f) => n + f.processes_alive, 0)),
      lag: fmt.num(flows.reduce((n, f) => n + f.lag_records, 0)),
      rate: `${fmt.num(Math.round(flows.reduce((n, f) => n + f.record_rate, 0)))} rec/s`,
      errors: fmt.num(flows.filter((f) => f.error || f.cluster_error).length),
    });

    document.querySelector("#flows-table tbody").innerHTML = flows.map((f) => `
      <tr data-flow="${esc(f.flow)}">
        <td class="mono">${esc(f.flow)}${f.enabled ? "" : ' <span class="muted small">heartbeats only</span>'}</td>
        <td><span class="badge ${esc(f.state)}">${esc(f.state)}</span></td>
        <td class="num" data-col="processes">${fmt.num(f.processes_alive)}</td>
        <td class="num" data-col="lag">${fmt.num(f.lag_records)}</td>
        <td class="num">${fmt.seconds(f.lag_seconds)}</td>
        <td class="num">${fmt.num(Math.round(f.record_rate))}</td>
        <td class="num">${fmt.rate(f.byte_rate)}</td>
        <td class="num" data-col="checkpoint">${age(f.checkpoint_age_s)}</td>
        <td class="num" data-col="heartbeat">${age(f.heartbeat_age_s)}</td>
        <td data-col="skipped">${f.skipped_active_groups.map((g) => `<span class="badge WARN">${esc(g)}</span>`).join(" ") || '<span class="muted">–</span>'}</td>
        <td>${flowErrors(f)}</td>
      </tr>`).join("") || '<tr><td colspan="11" class="empty">No mirror flow is configured or running.</td></tr>';

    const rows = flows.flatMap((f) => f.partitions.map((p) => ({ flow: f.flow, ...p })));
    document.querySelector("#partitions-table tbody").innerHTML = pager.rows(rows).map((p) => `
      <tr data-flow="${esc(p.flow)}" data-topic="${esc(p.source_topic)}" data-partition="${p.partition}">
        <td class="mono">${esc(p.flow)}</td>
        <td class="mono">${esc(p.source_topic)}</td>
        <td class="num">${p.partition}</td>
        <td class="mono">${esc(p.target_topic)}</td>
        <td class="num">${fmt.num(p.source_end_offset)}</td>
        <td class="num">${fmt.num(p.committed_offset)}</td>
        <td class="num" data-col="lag">${fmt.num(p.lag_records)}</td>
        <td class="num">${fmt.seconds(p.lag_seconds)}</td>
        <td class="num">${p.replication_latency_ms == null || p.replication_latency_ms < 0 ? "–" : fmt.num(Math.round(p.replication_latency_ms))}</td>
        <td class="mono small">${esc(p.process_id || "–")}</td>
      </tr>`).join("") || '<tr><td colspan="10" class="empty">No mirrored partition yet.</td></tr>';
    document.getElementById("partition-count").textContent = `${fmt.num(rows.length)} partition${rows.length === 1 ? "" : "s"}`;
    fillFlowChoices(flows);
  }

  // -- charts: one trace per flow, a point per message ---------------------------------------
  const lagDiv = document.getElementById("mirror-lag-chart");
  const rateDiv = document.getElementById("mirror-rate-chart");
  const traces = [];
  const ready = Promise.all([
    Weir.chart.create(lagDiv, [], { title: "Lag (records)", yTitle: "records" }),
    Weir.chart.create(rateDiv, [], { title: "Throughput (records/s)", yTitle: "records/s" }),
  ]);

  function plot(message) {
    ready.then(() => {
      const at = new Date(message.at_ms);
      for (const f of message.flows.filter((flow) => flow.enabled)) {
        let index = traces.indexOf(f.flow);
        if (index < 0) {
          traces.push(f.flow);
          index = traces.length - 1;
          for (const div of [lagDiv, rateDiv]) {
            Plotly.addTraces(div, { x: [], y: [], name: f.flow, mode: "lines", type: "scatter" });
          }
        }
        Plotly.extendTraces(lagDiv, { x: [[at]], y: [[f.lag_records]] }, [index], 1800);
        Plotly.extendTraces(rateDiv, { x: [[at]], y: [[f.record_rate]] }, [index], 1800);
      }
    });
  }

  Weir.live("/ws/ui/mirrors/", (message) => {
    if (message.type !== "mirrors") return;
    state = message;
    render();
    plot(message);
  });
  render();
  plot(state);

  // -- failover (operators) -------------------------------------------------------------------
  function fillFlowChoices(flows) {
    const select = document.getElementById("failover-flow");
    if (!select) return;
    const wanted = flows.filter((f) => f.enabled).map((f) => f.flow);
    const have = Array.from(select.options).map((o) => o.value);
    if (wanted.join("\n") === have.join("\n")) return;
    const chosen = select.value;
    select.innerHTML = wanted.map((name) => `<option value="${esc(name)}">${esc(name)}</option>`).join("");
    if (wanted.includes(chosen)) select.value = chosen;
  }

  const form = document.getElementById("failover-form");
  if (!form) return;
  const flowSelect = document.getElementById("failover-flow");
  const groupInput = document.getElementById("failover-group");
  const errorBox = document.getElementById("failover-error");

  function url() {
    const flow = (state.flows || []).find((f) => f.flow === flowSelect.value);
    if (!flow) return null;
    return `/api/mirrors/${encodeURIComponent(flow.source)}/${encodeURIComponent(flow.target)}/failover/`;
  }

  function show(result) {
    document.getElementById("failover-result").hidden = false;
    document.getElementById("failover-summary").textContent =
      `${result.dry_run ? "Dry run" : "Committed"}: group ${result.group} on ${result.flow} `
      + `(${result.members_on_target} member(s) on the target, from ${result.checkpoints_topic})`;
    document.querySelector("#failover-table tbody").innerHTML = result.partitions.map((r) => `
      <tr data-topic="${esc(r.topic)}" data-partition="${r.partition}">
        <td class="mono">${esc(r.topic)}</td>
        <td class="num">${r.partition}</td>
        <td class="mono">${esc(r.source_topic || "–")}</td>
        <td class="num">${fmt.num(r.source_committed_offset)}</td>
        <td class="num" data-col="translated">${fmt.num(r.translated_offset)}${r.translated_offset < r.checkpoint_offset ? ' <span class="muted small">(capped)</span>' : ""}</td>
        <td class="num">${fmt.num(r.target_end_offset)}</td>
        <td class="num" data-col="current">${fmt.num(r.target_committed_offset)}</td>
      </tr>`).join("");
  }

  function request(dryRun) {
    Weir.showError(errorBox, "");
    const group = groupInput.value.trim();
    const target = url();
    if (!target) { Weir.showError(errorBox, "Pick a flow that replicates."); return null; }
    if (!group) { Weir.showError(errorBox, "Name the consumer group to fail over."); return null; }
    return { target, body: { group, dry_run: dryRun } };
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const call = request(true);
    if (!call) return;
    try {
      show(await Weir.api("POST", call.target, call.body));
    } catch (error) {
      Weir.showError(errorBox, error.message);
    }
  });

  document.getElementById("failover-commit").addEventListener("click", async () => {
    const call = request(false);
    if (!call) return;
    const result = await Weir.act({
      confirm: {
        title: `Commit ${call.body.group}'s translated offsets?`,
        message: `The group's offsets on the target of ${flowSelect.value} are set to the translated ones. `
          + "Its consumers must be stopped there; start them on the target afterwards.",
        confirmLabel: "Commit offsets",
        danger: true,
      },
      run: async () => {
        try {
          return await Weir.api("POST", call.target, call.body);
        } catch (error) {
          Weir.showError(errorBox, error.message);
          throw error;
        }
      },
      done: (answer) => `Group ${answer.group} failed over: ${answer.partitions.length} partition(s) committed`,
    });
    if (result !== null) show(result);
  });
})();
