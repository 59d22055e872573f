/* One consumer group: lag per partition, members, lag charts, Burrow status history, and
 * for operators the reset offsets wizard, the rebalance button and the webhooks editor.
 *
 * First paint comes from the server's JSON (the monitor's snapshot, stored history, members,
 * webhooks). Then two sockets keep it current without polling: /ws/groups/<g>/ (the monitor's
 * lag message every tick: table, stats, charts and status timeline grow from it) and
 * /ws/ui/groups/<g>/members/ (members and assignments, pushed when they change). */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const page = Weir.data("group-data");
  const group = page.group;
  const groupPath = encodeURIComponent(group);
  const $ = (id) => document.getElementById(id);

  let lag = Weir.data("lag-data");
  let members = page.members;
  const key = (topic, partition) => `${topic}-${partition}`;
  const when = (iso) => (iso ? Date.parse(iso) : NaN);

  // ---- members and owners -------------------------------------------------------------
  function owners() {
    const found = new Map();
    for (const m of (members && members.members) || []) {
      for (const a of m.assignments) found.set(key(a.topic, a.partition), m);
    }
    return found;
  }

  function drawMembers() {
    const tbody = document.querySelector("#members-table tbody");
    const note = $("members-note");
    if (!members || members.type === "error") {
      note.textContent = members ? `(${members.message})` : "";
      tbody.innerHTML = '<tr><td colspan="4" class="muted">Members are not known right now.</td></tr>';
      return;
    }
    note.textContent = members.members.length ? `(${members.members.length}, assignor ${members.assignor || "–"})` : "";
    tbody.innerHTML = members.members.map((m) => {
      const byTopic = {};
      for (const a of m.assignments) (byTopic[a.topic] = byTopic[a.topic] || []).push(a.partition);
      const assigned = Object.entries(byTopic).map(([t, ps]) =>
        `<span class="chip"><a href="/topics/${encodeURIComponent(t)}/">${esc(t)}</a>: ${ps.join(", ")}</span>`).join(" ");
      return `<tr data-consumer="${esc(m.consumer_id)}">
        <td>${esc(m.client_id)}${m.instance_id ? ` <span class="muted">(static ${esc(m.instance_id)})</span>` : ""}</td>
        <td class="mono">${esc(m.host)}</td>
        <td class="mono small">${esc(m.consumer_id)}</td>
        <td>${assigned || '<span class="muted">none</span>'}</td></tr>`;
    }).join("") || '<tr><td colspan="4" class="muted">No active members: the group is not consuming.</td></tr>';
  }

  // ---- stats and the partition table -----------------------------------------------------
  function setBadge(node, value, extra) {
    node.className = `badge ${extra || ""} ${value}`.trim();
    node.textContent = value;
  }

  function drawStats() {
    setBadge($("group-state"), lag.state, "state");
    setBadge($("group-status"), lag.status);
    $("updated-at").textContent = fmt.time(when(lag.at));
    const stats = {
      members: fmt.num(lag.members),
      partitions: fmt.num(lag.partitions.length),
      total_lag: fmt.num(lag.total_lag),
      max_lag_seconds: lag.max_lag_seconds ? fmt.seconds(lag.max_lag_seconds) : "0",
      coordinator: members && members.coordinator != null ? members.coordinator : "–",
      assignor: (members && members.assignor) || "–",
    };
    for (const [name, value] of Object.entries(stats)) {
      const node = document.querySelector(`[data-stat="${name}"]`);
      node.textContent = value;
      const box = node.closest(".stat");
      if (box.hasAttribute("data-bad-when-positive")) box.classList.toggle("bad", Boolean(lag.total_lag));
    }
  }

  const partitionSearch = $("partition-search");
  const laggingOnly = $("lagging-only");
  let lastTable = "";

  function drawPartitions() {
    const owner = owners();
    const needle = partitionSearch.value.trim().toLowerCase();
    const rows = lag.partitions.filter((p) => {
      if (laggingOnly.checked && !p.lag) return false;
      if (!needle) return true;
      const m = owner.get(key(p.topic, p.partition));
      return `${p.topic} ${m ? m.client_id + " " + m.host : ""}`.toLowerCase().includes(needle);
    });
    const html = rows.map((p) => {
      const m = owner.get(key(p.topic, p.partition));
      return `<tr data-partition="${esc(key(p.topic, p.partition))}">
        <td><a href="/topics/${encodeURIComponent(p.topic)}/">${esc(p.topic)}</a></td>
        <td class="num">${p.partition}</td>
        <td class="num" data-col="committed">${fmt.num(p.committed)}</td>
        <td class="num" data-col="hw">${fmt.num(p.high_watermark)}</td>
        <td class="num ${p.lag ? "lagging" : ""}" data-col="lag">${fmt.num(p.lag)}</td>
        <td class="num" data-col="lag-seconds">${p.lag ? fmt.seconds(p.lag_seconds) : "0"}</td>
        <td>${m ? `${esc(m.client_id)} <span class="muted">${esc(m.host)}</span>` : '<span class="muted">–</span>'}</td>
        <td><span class="badge ${esc(p.status)}" title="${p.complete ? "" : "window not full yet"}">${esc(p.status)}</span></td>
      </tr>`;
    }).join("") || `<tr><td colspan="8" class="muted">${
      lag.partitions.length ? "No partition matches." : "The group has no committed offsets."}</td></tr>`;
    if (html !== lastTable) { document.querySelector("#partitions-table tbody").innerHTML = html; lastTable = html; }
    $("partition-count").textContent = rows.length === lag.partitions.length
      ? `${lag.partitions.length} partitions` : `${rows.length} of ${lag.partitions.length} partitions`;
  }
  partitionSearch.addEventListener("input", drawPartitions);
  laggingOnly.addEventListener("change", drawPartitions);

  // ---- charts ---------------------------------------------------------------------------
  const totalDiv = $("lag-total-chart");
  const partsDiv = $("lag-partitions-chart");
  const traceOf = new Map(); // "topic-p" -> trace index in the per-partition chart
  let lastAt = NaN;

  const history = page.chart;
  history.partitions.forEach((s, i) => traceOf.set(key(s.topic, s.partition), i));
  const lastStored = history.total.x.length ? when(history.total.x[history.total.x.length - 1]) : NaN;
  if (!Number.isNaN(lastStored)) lastAt = lastStored;
  const chartsReady = Promise.all([
    Weir.chart.create(totalDiv, ["total lag"], {
      x: [history.total.x], y: [history.total.y], yTitle: "offsets", title: "Group total",
    }),
    Weir.chart.create(partsDiv, history.partitions.map((s) => key(s.topic, s.partition)), {
      x: history.partitions.map((s) => s.x), y: history.partitions.map((s) => s.y),
      yTitle: "offsets", title: "Per partition",
    }),
  ]);

  function extendCharts(message) {
    const at = when(message.at);
    if (Number.isNaN(at) || at <= lastAt) return; // the snapshot sent on connect, or a repeat
    lastAt = at;
    chartsReady.then(() => {
      Weir.chart.push(totalDiv, message.at, [message.total_lag], 3600);
      const known = [];
      const added = [];
      for (const p of message.partitions) {
        const name = key(p.topic, p.partition);
        if (traceOf.has(name)) known.push(p);
        else added.push(p);
      }
      if (known.length) {
        Plotly.extendTraces(partsDiv, {
          x: known.map(() => [message.at]), y: known.map((p) => [p.lag]),
        }, known.map((p) => traceOf.get(key(p.topic, p.partition))), 3600);
      }
      if (added.length) {
        for (const p of added) traceOf.set(key(p.topic, p.partition), traceOf.size);
        Plotly.addTraces(partsDiv, added.map((p) => ({
          x: [message.at], y: [p.lag], name: key(p.topic, p.partition), mode: "lines", type: "scatter",
        })));
      }
    });
  }

  // ---- Burrow status timeline -----------------------------------------------------------
  const spans = page.timeline;

  function extendTimeline(message) {
    const status = message.status === "NOTFOUND" ? "OK" : message.status;
    const last = spans[spans.length - 1];
    if (last && when(message.at) <= when(last.end)) return;
    if (last && last.status === status) {
      last.end = message.at; last.samples += 1; last.peak_lag = Math.max(last.peak_lag, message.total_lag);
    } else {
      if (last) last.end = message.at;
      spans.push({ status, start: message.at, end: message.at, samples: 1, peak_lag: message.total_lag });
    }
  }

  function duration(ms) {
    const s = Math.max(0, ms / 1000);
    if (s < 120) return `${Math.round(s)} s`;
    if (s < 7200) return `${(s / 60).toFixed(1)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }

  function drawTimeline() {
    const strip = $("status-strip");
    if (!spans.length) {
      strip.innerHTML = '<span class="muted small">No status recorded yet.</span>';
      document.querySelector("#status-table tbody").innerHTML =
        '<tr><td colspan="5" class="muted">The monitor has not stored this group\'s status yet.</td></tr>';
      return;
    }
    const start = when(spans[0].start);
    const end = Math.max(when(spans[spans.length - 1].end), start + 1);
    strip.innerHTML = spans.map((s) => {
      const width = Math.max(0.4, ((when(s.end) - when(s.start)) / (end - start)) * 100);
      return `<div class="seg ${esc(s.status)}" style="flex-grow:${width}"
        title="${esc(s.status)} ${fmt.time(when(s.start))} → ${fmt.time(when(s.end))}"></div>`;
    }).join("");
    $("strip-start").textContent = fmt.time(start);
    $("strip-end").textContent = fmt.time(end);
    document.querySelector("#status-table tbody").innerHTML = [...spans].reverse().slice(0, 50).map((s) => `
      <tr><td><span class="badge ${esc(s.status)}">${esc(s.status)}</span></td>
      <td>${fmt.time(when(s.start))}</td><td>${fmt.time(when(s.end))}</td>
      <td class="num">${duration(when(s.end) - when(s.start))}</td>
      <td class="num">${fmt.num(s.peak_lag)}</td></tr>`).join("");
  }

  // ---- live -----------------------------------------------------------------------------
  function render() { drawStats(); drawPartitions(); }
  render();
  drawMembers();
  drawTimeline();

  Weir.live(`/ws/groups/${groupPath}/`, (message) => {
    if (message.type !== "lag") return;
    lag = message;
    render();
    extendCharts(message);
    extendTimeline(message);
    drawTimeline();
  });
  Weir.live(`/ws/ui/groups/${groupPath}/members/`, (message) => {
    if (message.type === "error" && members && members.type === "members") return; // keep the last good one
    members = message;
    drawMembers();
    drawStats();
    drawPartitions();
  });

  // ---- operators: rebalance -------------------------------------------------------------
  const rebalance = $("rebalance-button");
  if (rebalance) {
    rebalance.addEventListener("click", () => Weir.act({
      confirm: {
        title: `Rebalance group ${group}?`,
        message: "Every member gives up its partitions and rejoins; consumption pauses until the new assignment.",
        confirmLabel: "Trigger rebalance",
      },
      run: () => Weir.api("POST", `/api/groups/${groupPath}/rebalance/`),
      done: (result) => `${result.message} (was ${result.previous_state})`,
    }));
  }

  // ---- operators: reset offsets wizard --------------------------------------------------
  const form = $("reset-form");
  if (form) {
    const strategy = $("reset-strategy");
    const errorBox = $("reset-error");
    const previewBox = $("reset-preview-box");
    let previewed = null; // the body of the last successful dry run

    function step(n) {
      for (const li of document.querySelectorAll("#reset-steps li")) {
        li.classList.toggle("active", Number(li.dataset.step) === n);
        li.classList.toggle("done", Number(li.dataset.step) < n);
      }
    }
    const showError = (text) => Weir.showError(errorBox, text);

    function topicsAndPartitions() {
      const found = new Map();
      const add = (t, p) => { if (!found.has(t)) found.set(t, new Set()); found.get(t).add(p); };
      for (const p of lag.partitions) add(p.topic, p.partition);
      for (const m of (members && members.members) || []) for (const a of m.assignments) add(a.topic, a.partition);
      return found;
    }

    function drawScope() {
      const scope = form.querySelector("input[name=scope]:checked").value;
      const topics = topicsAndPartitions();
      const topicBox = $("scope-topics");
      const partBox = $("scope-partitions");
      topicBox.hidden = scope !== "topics";
      partBox.hidden = scope !== "partitions";
      if (scope === "topics" && !topicBox.childElementCount) {
        topicBox.innerHTML = [...topics.keys()].sort().map((t) =>
          `<label class="inline"><input type="checkbox" name="topic" value="${esc(t)}"> ${esc(t)}</label>`).join("")
          || '<span class="muted">The group has no topics.</span>';
      }
      if (scope === "partitions" && !partBox.childElementCount) {
        partBox.innerHTML = [...topics.entries()].sort().map(([t, ps]) =>
          [...ps].sort((a, b) => a - b).map((p) =>
            `<label class="inline"><input type="checkbox" name="partition" data-topic="${esc(t)}" value="${p}"> ${esc(t)}-${p}</label>`).join(""))
          .join("") || '<span class="muted">The group has no partitions.</span>';
      }
    }

    function showValueField() {
      for (const box of form.querySelectorAll("[data-value-for]")) box.hidden = box.dataset.valueFor !== strategy.value;
    }

    function requestBody() {
      const body = { strategy: strategy.value };
      const s = strategy.value;
      if (s === "datetime") {
        const v = $("reset-datetime").value;
        if (!v) throw new Error("Choose a date and time.");
        body.value = v + "Z";
      } else if (s === "offset" || s === "shift") {
        const raw = $(s === "offset" ? "reset-offset" : "reset-shift").value.trim();
        if (!/^-?\d+$/.test(raw)) throw new Error(s === "offset" ? "Enter the offset (a whole number)." : "Enter how far to shift (a whole number, negative goes back).");
        body.value = Number(raw);
      } else if (s === "by-duration") {
        const v = $("reset-duration").value.trim();
        if (!v) throw new Error("Enter a duration such as PT10M (ten minutes) or P1D (a day).");
        body.value = v;
      }
      const scope = form.querySelector("input[name=scope]:checked").value;
      if (scope === "topics") {
        body.topics = [...form.querySelectorAll("input[name=topic]:checked")].map((i) => i.value);
        if (!body.topics.length) throw new Error("Choose at least one topic.");
      } else if (scope === "partitions") {
        body.partitions = [...form.querySelectorAll("input[name=partition]:checked")]
          .map((i) => ({ topic: i.dataset.topic, partition: Number(i.value) }));
        if (!body.partitions.length) throw new Error("Choose at least one partition.");
      }
      return body;
    }

    function drawRows(result, executed) {
      const rows = result.partitions;
      const changed = rows.filter((r) => r.current_offset !== r.new_offset).length;
      $("reset-summary").innerHTML = executed
        ? `<strong>Done.</strong> Offsets of ${rows.length} partition(s) of <strong>${esc(group)}</strong> were reset (${esc(result.strategy)}).`
        : `Dry run: ${changed} of ${rows.length} partition(s) would change. Nothing has been written yet.`;
      document.querySelector("#reset-preview-table tbody").innerHTML = rows.map((r) => {
        const delta = r.current_offset == null ? null : r.new_offset - r.current_offset;
        const same = delta === 0;
        return `<tr data-partition="${esc(key(r.topic, r.partition))}">
          <td>${esc(r.topic)}</td><td class="num">${r.partition}</td>
          <td class="num ${same ? "" : "diff-old"}" data-col="current">${r.current_offset == null ? "none" : fmt.num(r.current_offset)}</td>
          <td class="muted">→</td>
          <td class="num ${same ? "" : "diff-new"}" data-col="new">${fmt.num(r.new_offset)}</td>
          <td class="num">${delta == null ? "–" : (delta > 0 ? "+" : "") + fmt.num(delta)}</td></tr>`;
      }).join("") || '<tr><td colspan="6" class="muted">No partitions: the group has no committed offsets here.</td></tr>';
      previewBox.hidden = false;
      $("reset-execute").hidden = executed || !rows.length;
      $("reset-back").textContent = executed ? "New reset" : "Back";
    }

    strategy.addEventListener("change", () => { showValueField(); previewBox.hidden = true; step(1); });
    for (const radio of form.querySelectorAll("input[name=scope]")) radio.addEventListener("change", drawScope);
    form.addEventListener("input", () => { if (previewed) { previewed = null; previewBox.hidden = true; step(1); } });

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      showError("");
      let body;
      try { body = requestBody(); } catch (e) { showError(e.message); return; }
      const button = $("reset-preview");
      button.disabled = true;
      try {
        const result = await Weir.api("POST", `/api/groups/${groupPath}/reset-offsets/`, { ...body, dry_run: true });
        previewed = body;
        drawRows(result, false);
        step(2);
      } catch (e) {
        showError(e.message);
        previewBox.hidden = true;
      } finally {
        button.disabled = false;
      }
    });

    $("reset-back").addEventListener("click", () => { previewed = null; previewBox.hidden = true; showError(""); step(1); });

    $("reset-execute").addEventListener("click", async () => {
      if (!previewed) return;
      const body = previewed;
      const count = document.querySelectorAll("#reset-preview-table tbody tr[data-partition]").length;
      showError("");
      const result = await Weir.act({
        confirm: {
          title: `Reset offsets of ${group}?`,
          message: `The committed offsets of ${count} partition(s) move as previewed (${body.strategy}); ` +
            "the group's consumers resume from there. The group must have no active members.",
          confirmLabel: "Execute reset",
          danger: true,
        },
        run: async () => {
          try {
            return await Weir.api("POST", `/api/groups/${groupPath}/reset-offsets/`, { ...body, dry_run: false });
          } catch (e) { showError(e.message); throw e; }
        },
        done: (r) => `Offsets of ${r.partitions.length} partition(s) reset`,
      });
      if (result) { drawRows(result, true); step(3); previewed = null; }
    });

    showValueField();
    drawScope();
  }

  // ---- webhooks ---------------------------------------------------------------------------
  const webhooks = page.webhooks;
  const hookForm = $("webhook-form");
  let editing = null;

  function drawWebhooks() {
    const tbody = document.querySelector("#webhooks-table tbody");
    const columns = hookForm ? 7 : 6;
    tbody.innerHTML = webhooks.map((w) => {
      const delivery = w.last_delivery_at
        ? `${fmt.time(when(w.last_delivery_at))} · ${w.last_delivery_error
          ? `<span class="error-text">${esc(w.last_delivery_error)}</span>` : esc(w.last_delivery_status)}`
        : '<span class="muted">never</span>';
      return `<tr data-webhook="${w.id}">
        <td class="mono">${esc(w.url)}</td>
        <td>${w.group ? "this group" : '<span class="muted">all groups</span>'}</td>
        <td><span class="badge ${esc(w.min_status)}">${esc(w.min_status)}</span></td>
        <td>${w.enabled ? "yes" : '<span class="muted">no</span>'}</td>
        <td>${w.has_secret ? "set" : '<span class="muted">none</span>'}</td>
        <td>${delivery}</td>
        ${hookForm ? `<td class="actions"><button type="button" data-edit="${w.id}" data-mutating>Edit</button>
          <button type="button" class="danger" data-delete="${w.id}" data-mutating>Delete</button></td>` : ""}
      </tr>`;
    }).join("") || `<tr><td colspan="${columns}" class="muted">No webhook alerts on this group.</td></tr>`;
  }
  drawWebhooks();

  if (hookForm) {
    const fields = {
      url: $("webhook-url"), scope: $("webhook-scope"), min: $("webhook-min-status"),
      secret: $("webhook-secret"), enabled: $("webhook-enabled"),
    };
    function resetForm() {
      editing = null;
      hookForm.reset();
      fields.secret.placeholder = "optional";
      $("webhook-form-title").textContent = "Add a webhook";
      $("webhook-save").textContent = "Add webhook";
      $("webhook-cancel").hidden = true;
    }
    function edit(id) {
      const w = webhooks.find((x) => x.id === id);
      if (!w) return;
      editing = w;
      fields.url.value = w.url;
      fields.scope.value = w.group ? "group" : "all";
      fields.min.value = w.min_status;
      fields.enabled.checked = w.enabled;
      fields.secret.value = "";
      fields.secret.placeholder = w.has_secret ? "unchanged" : "optional";
      $("webhook-form-title").textContent = `Edit webhook ${w.id}`;
      $("webhook-save").textContent = "Save webhook";
      $("webhook-cancel").hidden = false;
      fields.url.focus();
    }
    $("webhook-cancel").addEventListener("click", resetForm);

    hookForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = {
        url: fields.url.value.trim(),
        group: fields.scope.value === "group" ? group : "",
        min_status: fields.min.value,
        enabled: fields.enabled.checked,
      };
      if (fields.secret.value) body.secret = fields.secret.value;
      const was = editing;
      const saved = await Weir.act({
        confirm: was
          ? { title: `Save webhook ${was.id}?`, message: `Alerts go to ${body.url}.`, confirmLabel: "Save" }
          : { title: "Add this webhook?", message: `Status changes of ${body.group || "every group"} at ${body.min_status} or worse are POSTed to ${body.url}.`, confirmLabel: "Add webhook" },
        run: () => (was
          ? Weir.api("PATCH", `/api/webhooks/${was.id}/`, body)
          : Weir.api("POST", "/api/webhooks/", body)),
        done: (w) => (was ? `Webhook ${w.id} saved` : `Webhook ${w.id} added`),
      });
      if (!saved) return;
      const at = webhooks.findIndex((w) => w.id === saved.id);
      if (at >= 0) webhooks[at] = saved; else webhooks.push(saved);
      resetForm();
      drawWebhooks();
    });

    document.querySelector("#webhooks-table tbody").addEventListener("click", async (event) => {
      const editButton = event.target.closest("[data-edit]");
      if (editButton) { edit(Number(editButton.dataset.edit)); return; }
      const deleteButton = event.target.closest("[data-delete]");
      if (!deleteButton) return;
      const id = Number(deleteButton.dataset.delete);
      const w = webhooks.find((x) => x.id === id);
      const done = await Weir.act({
        confirm: { title: `Delete webhook ${id}?`, message: `Alerts stop going to ${w ? w.url : "it"}.`, confirmLabel: "Delete", danger: true },
        run: () => Weir.api("DELETE", `/api/webhooks/${id}/`).then(() => true),
        done: `Webhook ${id} deleted`,
      });
      if (!done) return;
      webhooks.splice(webhooks.findIndex((x) => x.id === id), 1);
      if (editing && editing.id === id) resetForm();
      drawWebhooks();
    });
  }
})();
