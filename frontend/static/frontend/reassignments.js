/* Reassignments and rebalance page.
 *
 * The reassignment table and the rebalance plan follow /ws/ui/reassignments/ (the server
 * pushes progress when a number moves; no polling). Operators pick topics and target brokers,
 * generate a proposal (POST /api/reassignments/generate/), review the diff of replica sets,
 * set a throttle and execute it (POST /api/reassignments/); or propose and execute a cluster
 * rebalance (POST /api/cluster/rebalance/). Every change confirms first and reports back.
 */
(function () {
  "use strict";
  const { esc, fmt } = Weir;

  const brokers = Weir.data("brokers-data") || [];
  const topics = Weir.data("topics-data") || [];
  const canOperate = Boolean(document.getElementById("new-reassignment"));
  let live = Weir.data("live-data");

  // helpers ----------------------------------------------------------------------------------

  // Clock time (local) with the full timestamp on hover.
  function ago(ms) {
    if (ms == null) return "–";
    const when = new Date(ms);
    return `<time datetime="${when.toISOString()}" title="${fmt.time(ms)} UTC">${when.toLocaleTimeString("en-GB")}</time>`;
  }

  // Replica lists as chips: brokers leaving struck through, brokers joining highlighted.
  function chips(list, other, kind) {
    if (!list.length) return '<span class="muted">–</span>';
    return list.map((b) => {
      const changed = !other.includes(b);
      const cls = changed ? (kind === "old" ? "diff-old" : "diff-new") : "";
      return `<span class="rep ${cls}" title="broker ${b}">${b}</span>`;
    }).join("");
  }

  function replicaDiff(before, after) {
    return `<span class="reps">${chips(before, after, "old")}</span><span class="arrow">→</span>` +
      `<span class="reps">${chips(after, before, "new")}</span>`;
  }

  function throttleValue(box) {
    const raw = box.querySelector("[data-throttle]").value.trim();
    if (!raw) return { value: null };
    const number = Number(raw);
    if (!Number.isFinite(number) || number <= 0) {
      return { error: "The throttle must be a positive number (or empty for no throttle)." };
    }
    const unit = Number(box.querySelector("[data-throttle-unit]").value);
    return { value: Math.max(1, Math.round(number * unit)) };
  }

  // the live part ----------------------------------------------------------------------------

  const STATE_LABEL = { in_progress: "moving", completed: "done", cancelled: "cancelled" };

  function progressCell(item) {
    if (item.state === "completed") {
      return `<div class="progress done" role="progressbar" aria-valuenow="100" data-progress>
        <div style="width:100%"></div></div><div class="progress-text">done</div>`;
    }
    if (item.state === "cancelled") {
      return `<div class="progress" role="progressbar" aria-valuenow="0" data-progress><div style="width:0%"></div></div>
        <div class="progress-text muted">cancelled — replicas back on [${item.replicas.join(", ")}]</div>`;
    }
    const copied = item.progress.reduce((n, r) => n + r.bytes_copied, 0);
    const total = item.progress.reduce((n, r) => n + r.bytes_total, 0);
    const detail = item.progress.map((r) =>
      `broker ${r.broker}: ${r.percent}%${r.in_sync ? " (in sync)" : ""}, offset ${r.log_end_offset ?? "–"} of ${r.leader_log_end_offset ?? "–"}`)
      .join("\n");
    const text = item.progress.length
      ? `${fmt.bytes(copied)} / ${fmt.bytes(total)} · ${item.percent.toFixed(1)} %`
      : "removing old replicas";
    return `<div class="progress" role="progressbar" aria-valuenow="${item.percent}" title="${esc(detail)}" data-progress>
      <div style="width:${item.percent}%"></div></div><div class="progress-text">${text}</div>`;
  }

  function renderReassignments() {
    const data = live.reassignments;
    const showFinished = document.getElementById("show-finished").checked;
    const moving = data.reassignments.filter((r) => r.state === "in_progress");
    const finished = data.reassignments.filter((r) => r.state !== "in_progress")
      .sort((a, b) => (b.submitted_ms || 0) - (a.submitted_ms || 0));
    const rows = [...moving, ...(showFinished ? finished : [])];
    const columns = canOperate ? 6 : 5;
    document.querySelector("#reassignments-table tbody").innerHTML = rows.map((r) => `
      <tr data-key="${esc(r.topic)}/${r.partition}" data-state="${r.state}">
        <td><a href="/topics/${encodeURIComponent(r.topic)}/">${esc(r.topic)}</a>
          <span class="muted">partition ${r.partition}</span></td>
        <td><span class="badge state-${r.state}">${STATE_LABEL[r.state] || esc(r.state)}</span></td>
        <td class="diff">${replicaDiff(r.original_replicas, r.target_replicas)}</td>
        <td class="progress-col">${progressCell(r)}</td>
        <td class="muted">${ago(r.submitted_ms)}</td>
        ${canOperate ? `<td>${r.state === "in_progress"
          ? `<button type="button" class="small" data-cancel="${esc(r.topic)}" data-partition="${r.partition}">Cancel</button>`
          : ""}</td>` : ""}
      </tr>`).join("") || `<tr><td colspan="${columns}" class="muted">No partition is being moved${
        finished.length && !showFinished ? ` (${finished.length} finished in the last hour)` : ""}.</td></tr>`;
    const cancelAll = document.getElementById("cancel-all");
    if (cancelAll) {
      cancelAll.hidden = moving.length === 0;
      cancelAll.textContent = `Cancel all (${moving.length})`;
    }
    const stats = {
      in_progress: fmt.num(data.in_progress),
      percent: data.in_progress ? `${data.percent.toFixed(1)} %` : "–",
      finished: fmt.num(finished.length),
      rebalance: live.rebalance.state === "none" ? "never run" : live.rebalance.state,
    };
    for (const [key, value] of Object.entries(stats)) {
      document.querySelector(`[data-stat="${key}"]`).textContent = value;
    }
  }

  const PLAN_ORDER = { in_flight: 0, pending: 1, failed: 2, done: 3, cancelled: 4 };

  function renderRebalance() {
    const plan = live.rebalance;
    const box = document.getElementById("rebalance-status");
    const cancel = document.getElementById("rebalance-cancel");
    if (cancel) cancel.hidden = plan.state !== "running";
    if (plan.state === "none") {
      box.innerHTML = '<p class="muted">No rebalance has been run on this cluster.</p>';
      return;
    }
    const finished = plan.done + plan.failed + plan.cancelled;
    const percent = plan.total ? (100 * finished) / plan.total : 100;
    const items = [...plan.partitions].sort((a, b) => PLAN_ORDER[a.status] - PLAN_ORDER[b.status]);
    const shown = items.slice(0, 200);
    const election = plan.election
      ? `<span>leader election: ${plan.election.elected} elected, ${plan.election.failed} failed</span>` : "";
    box.innerHTML = `
      <div class="plan-head">
        <span class="badge plan-${esc(plan.state)}">${esc(plan.state)}</span>
        <span class="mono muted">plan ${esc((plan.id || "").slice(0, 8))}</span>
        <span class="muted">started ${ago(plan.created_ms)}</span>
        <span class="muted">throttle ${plan.throttle_bytes_per_sec ? fmt.rate(plan.throttle_bytes_per_sec) : "none"}</span>
        <span class="muted">${plan.concurrency || "–"} at a time</span>
        ${election}
      </div>
      ${plan.message ? `<p>${esc(plan.message)}</p>` : ""}
      <div class="plan-progress">
        <div class="progress" role="progressbar" aria-valuenow="${percent.toFixed(1)}" data-plan-progress>
          <div style="width:${percent.toFixed(1)}%"></div></div>
        <span>${finished} of ${plan.total} partitions</span>
      </div>
      <div class="plan-counts">
        ${["pending", "in_flight", "done", "failed", "cancelled"].map((s) =>
          `<span class="count"><span class="badge plan-${s}">${s.replace("_", " ")}</span> ${plan[s]}</span>`).join("")}
      </div>
      ${shown.length ? `<table class="plan-table"><thead><tr><th>Partition</th><th>Status</th><th>Replicas</th><th>Message</th></tr></thead>
        <tbody>${shown.map((p) => `<tr><td>${esc(p.topic)} <span class="muted">partition ${p.partition}</span></td>
          <td><span class="badge plan-${p.status}">${p.status.replace("_", " ")}</span></td>
          <td class="diff">${replicaDiff(p.current_replicas, p.proposed_replicas)}</td>
          <td class="muted">${esc(p.message)}</td></tr>`).join("")}</tbody></table>
        ${items.length > shown.length ? `<p class="muted">and ${items.length - shown.length} more</p>` : ""}` : ""}`;
  }

  function render() {
    renderReassignments();
    renderRebalance();
  }

  document.getElementById("show-finished").addEventListener("change", renderReassignments);
  render();
  Weir.live("/ws/ui/reassignments/", (message) => {
    if (message.type === "error") { Weir.toast(message.message, "error"); return; }
    if (message.type !== "reassignments") return;
    live = message;
    render();
  });

  if (!canOperate) return;

  // cancelling -------------------------------------------------------------------------------

  document.querySelector("#reassignments-table tbody").addEventListener("click", (event) => {
    const button = event.target.closest("[data-cancel]");
    if (!button) return;
    const topic = button.dataset.cancel;
    const partition = Number(button.dataset.partition);
    Weir.act({
      confirm: {
        title: "Cancel reassignment",
        message: `Stop moving ${topic} partition ${partition}? It goes back to its original replicas and copied data is discarded.`,
        confirmLabel: "Cancel the move", danger: true,
      },
      run: () => Weir.api("POST", "/api/reassignments/cancel/", { partitions: [{ topic, partition }] }),
      done: (r) => (r.cancelled.length ? `Cancelled ${topic} partition ${partition}`
        : `${topic} partition ${partition} was no longer moving`),
    });
  });

  document.getElementById("cancel-all").addEventListener("click", () => {
    const count = live.reassignments.in_progress;
    Weir.act({
      confirm: {
        title: "Cancel every reassignment",
        message: `Stop all ${count} partition moves? Each partition goes back to its original replicas.`,
        confirmLabel: "Cancel all moves", danger: true,
      },
      run: () => Weir.api("POST", "/api/reassignments/cancel/", {}),
      done: (r) => `Cancelled ${r.cancelled.length} reassignment(s)` +
        (r.failed.length ? `; ${r.failed.length} could not be cancelled` : ""),
    });
  });

  // pickers ----------------------------------------------------------------------------------

  const SHOWN_TOPICS = 100;

  function topicPicker(container) {
    const selected = new Set();
    container.innerHTML = `
      <div class="toolbar">
        <input type="search" placeholder="Search ${fmt.num(topics.length)} topic${topics.length === 1 ? "" : "s"}" aria-label="Search topics" data-search>
        <button type="button" class="small" data-select-shown>Select shown</button>
        <button type="button" class="small" data-clear>Clear</button>
        <span class="muted" data-count></span>
      </div>
      <div class="chips" data-chips></div>
      <div class="topic-list" data-list></div>`;
    const search = container.querySelector("[data-search]");
    const list = container.querySelector("[data-list]");
    let matches = [];

    function draw() {
      const needle = search.value.trim().toLowerCase();
      matches = topics.filter((t) => t.name.toLowerCase().includes(needle));
      list.innerHTML = matches.slice(0, SHOWN_TOPICS).map((t) => `
        <label class="topic-option">
          <input type="checkbox" value="${esc(t.name)}" ${selected.has(t.name) ? "checked" : ""}>
          <span class="mono name">${esc(t.name)}</span>
          <span class="muted meta">${t.partitions} partition${t.partitions === 1 ? "" : "s"} · RF ${t.replication_factor}
            · on ${t.brokers.length ? t.brokers.join(", ") : "–"}${t.internal ? " · internal" : ""}</span>
        </label>`).join("") +
        (matches.length > SHOWN_TOPICS
          ? `<p class="muted more">${fmt.num(matches.length - SHOWN_TOPICS)} more match — refine the search</p>` : "") +
        (matches.length ? "" : '<p class="muted more">No topic matches.</p>');
      container.querySelector("[data-chips]").innerHTML = [...selected].map((name) =>
        `<span class="chip">${esc(name)}<button type="button" aria-label="remove ${esc(name)}" data-remove="${esc(name)}">×</button></span>`).join("");
      container.querySelector("[data-count]").textContent = `${selected.size} selected`;
    }

    search.addEventListener("input", draw);
    list.addEventListener("change", (event) => {
      const box = event.target;
      if (box.checked) selected.add(box.value); else selected.delete(box.value);
      draw();
    });
    container.querySelector("[data-chips]").addEventListener("click", (event) => {
      const button = event.target.closest("[data-remove]");
      if (button) { selected.delete(button.dataset.remove); draw(); }
    });
    container.querySelector("[data-select-shown]").addEventListener("click", () => {
      for (const t of matches.slice(0, SHOWN_TOPICS)) selected.add(t.name);
      draw();
    });
    container.querySelector("[data-clear]").addEventListener("click", () => { selected.clear(); draw(); });
    draw();
    return {
      values: () => [...selected],
      clear() { selected.clear(); search.value = ""; draw(); },
    };
  }

  function brokerPicker(container, { allowDead }) {
    container.innerHTML = brokers.map((b) => `
      <label class="broker-option ${b.alive ? "" : "dead"}">
        <input type="checkbox" value="${b.id}" ${!b.alive && !allowDead ? "disabled" : ""}>
        <strong>Broker ${b.id}</strong>
        <span class="muted">${esc(b.host)}:${b.port} · rack ${esc(b.rack || "–")}</span>
        <span class="badge ${b.alive ? "up" : "down"}">${b.alive ? "up" : "down"}</span>
      </label>`).join("");
    return {
      values: () => [...container.querySelectorAll("input:checked")].map((i) => Number(i.value)),
    };
  }

  // proposals --------------------------------------------------------------------------------

  const SHOWN_DIFFS = 500;

  function perBroker(p) {
    const ids = [...new Set([
      ...Object.keys(p.before.replicas_per_broker), ...Object.keys(p.after.replicas_per_broker),
    ])].sort((a, b) => Number(a) - Number(b));
    const delta = (a, b) => {
      const d = (b || 0) - (a || 0);
      return d ? `<span class="${d > 0 ? "up-delta" : "down-delta"}">${d > 0 ? "+" : ""}${d}</span>` : "";
    };
    return `<table class="per-broker"><thead><tr><th>Broker</th><th class="num">Replicas before</th>
      <th class="num">after</th><th class="num">Leaders before</th><th class="num">after</th></tr></thead><tbody>
      ${ids.map((id) => {
        const rb = p.before.replicas_per_broker[id] || 0; const ra = p.after.replicas_per_broker[id] || 0;
        const lb = p.before.leaders_per_broker[id] || 0; const la = p.after.leaders_per_broker[id] || 0;
        return `<tr data-broker="${id}"><td>${id}</td><td class="num">${rb}</td><td class="num">${ra} ${delta(rb, ra)}</td>
          <td class="num">${lb}</td><td class="num">${la} ${delta(lb, la)}</td></tr>`;
      }).join("")}</tbody></table>`;
  }

  function drawBalanceChart(div, p) {
    const ids = [...new Set([
      ...Object.keys(p.before.replicas_per_broker), ...Object.keys(p.after.replicas_per_broker),
    ])].sort((a, b) => Number(a) - Number(b));
    const x = ids.map((id) => `broker ${id}`);
    const bar = (name, stats, key, color) => ({
      type: "bar", name, x, y: ids.map((id) => stats[key][id] || 0), marker: { color },
    });
    Plotly.newPlot(div, [
      bar("replicas before", p.before, "replicas_per_broker", "#c8cfdd"),
      bar("replicas after", p.after, "replicas_per_broker", "#1f6feb"),
      bar("leaders before", p.before, "leaders_per_broker", "#e6d5fb"),
      bar("leaders after", p.after, "leaders_per_broker", "#6e40c9"),
    ], {
      barmode: "group", margin: { l: 40, r: 10, t: 10, b: 40 }, legend: { orientation: "h", y: -0.2 },
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", yaxis: { rangemode: "tozero" },
    }, { displaylogo: false, responsive: true });
  }

  // Render a proposal (generate or rebalance) with its execute controls; `execute(throttle,
  // extra)` starts it.
  function showProposal(box, p, { total, emptyText, executeLabel, concurrency, execute }) {
    const diffs = p.partitions;
    if (!diffs.length) {
      box.innerHTML = `<p class="empty-proposal">${esc(emptyText)}</p>`;
      box.hidden = false;
      return;
    }
    box.innerHTML = `
      <h3>Proposal</h3>
      <div class="proposal-summary">
        <div class="mini"><div class="label">Partitions changing</div><div class="value" data-summary="partitions">${fmt.num(diffs.length)}${total != null ? ` <small>of ${fmt.num(total)}</small>` : ""}</div></div>
        <div class="mini"><div class="label">Replica copies</div><div class="value" data-summary="moves">${fmt.num(p.replica_moves)}</div></div>
        <div class="mini"><div class="label">Preferred leader changes</div><div class="value" data-summary="leaders">${fmt.num(p.leader_changes)}</div></div>
        <div class="mini"><div class="label">Replica spread</div><div class="value">${p.before.replica_spread} → ${p.after.replica_spread}</div></div>
        <div class="mini"><div class="label">Leader spread</div><div class="value">${p.before.leader_spread} → ${p.after.leader_spread}</div></div>
      </div>
      <div class="balance">
        <div class="balance-chart" data-chart></div>
        <div>${perBroker(p)}</div>
      </div>
      <table class="diff-table"><thead><tr><th>Partition</th><th>Current replicas</th><th></th><th>Proposed replicas</th><th class="num">Copies</th></tr></thead>
        <tbody>${diffs.slice(0, SHOWN_DIFFS).map((d) => `
          <tr data-key="${esc(d.topic)}/${d.partition}"><td>${esc(d.topic)} <span class="muted">partition ${d.partition}</span></td>
            <td class="reps" data-current>${chips(d.current_replicas, d.proposed_replicas, "old")}</td>
            <td class="arrow">→</td>
            <td class="reps" data-proposed>${chips(d.proposed_replicas, d.current_replicas, "new")}</td>
            <td class="num">${d.moves}${d.leader_change ? ' <span class="badge leader-change" title="the preferred leader changes">leader</span>' : ""}</td></tr>`).join("")}
        </tbody></table>
      ${diffs.length > SHOWN_DIFFS ? `<p class="muted">and ${fmt.num(diffs.length - SHOWN_DIFFS)} more partitions</p>` : ""}
      <div class="execute-row">
        <div><label for="${box.id}-throttle">Replication throttle</label>
          <div class="row"><input type="number" min="0" step="any" id="${box.id}-throttle" data-throttle placeholder="no throttle">
          <select data-throttle-unit aria-label="throttle unit"><option value="1024" selected>KB/s</option><option value="1048576">MB/s</option><option value="1">bytes/s</option></select></div></div>
        ${concurrency ? `<div><label for="${box.id}-concurrency">Partitions at a time</label>
          <input type="number" min="1" max="1000" value="5" id="${box.id}-concurrency" data-concurrency></div>` : ""}
        <button type="button" class="primary" data-execute>${esc(executeLabel)}</button>
        <button type="button" data-discard>Discard</button>
        <span class="error-text" data-error role="alert"></span>
      </div>`;
    box.hidden = false;
    drawBalanceChart(box.querySelector("[data-chart]"), p);
    box.querySelector("[data-discard]").addEventListener("click", () => { box.hidden = true; box.innerHTML = ""; });
    box.querySelector("[data-execute]").addEventListener("click", async () => {
      const error = box.querySelector("[data-error]");
      const throttle = throttleValue(box);
      error.textContent = throttle.error || "";
      if (throttle.error) return;
      let parallel = null;
      if (concurrency) {
        parallel = Number(box.querySelector("[data-concurrency]").value);
        if (!Number.isInteger(parallel) || parallel < 1 || parallel > 1000) {
          error.textContent = "Partitions at a time must be a whole number from 1 to 1000.";
          return;
        }
      }
      const started = await execute(throttle.value, parallel);
      if (started) { box.hidden = true; box.innerHTML = ""; }
    });
  }

  // new reassignment -------------------------------------------------------------------------

  const reassignTopics = topicPicker(document.getElementById("reassign-topics"));
  const reassignBrokers = brokerPicker(document.getElementById("reassign-brokers"), { allowDead: false });
  const reassignBox = document.getElementById("reassign-proposal");

  document.getElementById("generate").addEventListener("click", async () => {
    const chosen = reassignTopics.values();
    const targets = reassignBrokers.values();
    if (!chosen.length || !targets.length) {
      Weir.toast(!chosen.length ? "Choose at least one topic." : "Choose at least one target broker.", "error");
      return;
    }
    let proposal;
    try {
      proposal = await Weir.api("POST", "/api/reassignments/generate/", { topics: chosen, brokers: targets });
    } catch (error) {
      Weir.toast("Could not generate a proposal: " + error.message, "error");
      return;
    }
    showProposal(reassignBox, proposal, {
      total: proposal.partitions_total,
      emptyText: `Nothing to move: the chosen topics already sit on brokers ${targets.join(", ")} as evenly as the planner can make them.`,
      executeLabel: "Execute reassignment",
      execute: (throttle) => Weir.act({
        confirm: {
          title: "Execute reassignment",
          message: `Move ${proposal.partitions.length} partition(s) — ${proposal.replica_moves} replica copies — ` +
            (throttle ? `throttled to ${fmt.rate(throttle)} per broker?` : "without a replication throttle?"),
          confirmLabel: "Execute",
        },
        run: () => Weir.api("POST", "/api/reassignments/", {
          version: 1,
          partitions: proposal.partitions.map((d) => ({
            topic: d.topic, partition: d.partition, replicas: d.proposed_replicas,
          })),
          throttle_bytes_per_sec: throttle,
        }),
        done: (r) => {
          if (r.rejected.length) {
            Weir.toast(`${r.rejected.length} partition(s) rejected: ` +
              r.rejected.map((x) => `${x.topic}-${x.partition}: ${x.message}`).join("; "), "error");
          }
          return `Reassignment started for ${r.accepted.length} partition(s)`;
        },
      }).then((r) => {
        if (r) { reassignTopics.clear(); document.getElementById("current").scrollIntoView({ behavior: "smooth" }); }
        return r;
      }),
    });
  });

  // cluster rebalance ------------------------------------------------------------------------

  const rebalanceTopics = topicPicker(document.getElementById("rebalance-topics"));
  const rebalanceExclude = brokerPicker(document.getElementById("rebalance-exclude"), { allowDead: true });
  const rebalanceBox = document.getElementById("rebalance-proposal");

  function rebalanceScope() {
    const body = { exclude_brokers: rebalanceExclude.values() };
    const chosen = rebalanceTopics.values();
    if (chosen.length) body.topics = chosen;
    return body;
  }

  document.getElementById("propose").addEventListener("click", async () => {
    const scope = rebalanceScope();
    let proposal;
    try {
      proposal = await Weir.api("POST", "/api/cluster/rebalance/", { ...scope, dryrun: true });
    } catch (error) {
      Weir.toast("Could not propose a rebalance: " + error.message, "error");
      return;
    }
    showProposal(rebalanceBox, proposal, {
      total: null,
      emptyText: "The cluster is already balanced: the planner proposes no change.",
      executeLabel: "Execute rebalance",
      concurrency: true,
      execute: (throttle, parallel) => Weir.act({
        confirm: {
          title: "Execute rebalance",
          message: `Start moving ${proposal.partitions.length} partition(s) (${proposal.replica_moves} replica copies), ` +
            `${parallel} at a time, ${throttle ? `throttled to ${fmt.rate(throttle)}` : "without a throttle"}? ` +
            "The plan is computed again from the cluster as it is now.",
          confirmLabel: "Execute",
        },
        run: () => Weir.api("POST", "/api/cluster/rebalance/", {
          ...scope, dryrun: false, concurrency: parallel, throttle_bytes_per_sec: throttle,
        }),
        done: (r) => `Rebalance started: ${r.plan.total} partition(s) to move`,
      }),
    });
  });

  document.getElementById("rebalance-cancel").addEventListener("click", () => {
    Weir.act({
      confirm: {
        title: "Cancel rebalance",
        message: "Stop the rebalance? Pending partitions are not moved and moves in flight go back to their old replicas.",
        confirmLabel: "Cancel rebalance", danger: true,
      },
      run: () => Weir.api("DELETE", "/api/cluster/rebalance/"),
      done: "Rebalance cancelled",
    });
  });
})();
