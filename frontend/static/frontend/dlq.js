/* One dead letter queue (/dlq/<topic>/): its records a page at a time from
 * GET /api/dlq/<t>/records/ (partition, filters, "Load more" from the answer's `next`), each
 * with its error context. Operators pick records (a checkbox per row) and replay them, an
 * offset range or everything matching the filters (POST /api/dlq/<t>/replay/: "Dry run" shows
 * the plan, "Replay" confirms, queues the job and follows it on the jobs socket until it
 * ends), or purge a partition before an offset (POST /api/dlq/<t>/purge/) after a typed
 * confirmation. The page asks only when the user does something; it never polls. */
(function () {
  "use strict";
  const { esc, fmt, showError } = Weir;
  const { data, key } = Weir.records;
  const page = Weir.data("dlq-data");
  const topic = page.topic;
  const base = `/api/dlq/${encodeURIComponent(topic)}`;
  const $ = (id) => document.getElementById(id);
  const canOperate = Boolean($("replay-panel"));
  const scope = $("replay-scope"); // operators only

  // -- rendering -----------------------------------------------------------------------------
  const dash = '<span class="muted">–</span>';

  function original(e) {
    if (e.original_topic == null) return dash;
    const link = `/topics/${encodeURIComponent(e.original_topic)}/messages/`
      + (e.original_partition == null ? "" : `?partition=${e.original_partition}`);
    const where = [
      e.original_partition == null ? "" : `partition <span data-col="original-partition">${e.original_partition}</span>`,
      e.original_offset == null ? "" : `offset <span data-col="original-offset">${e.original_offset}</span>`,
    ].filter(Boolean).join(" · ");
    return `<a href="${link}" class="mono" data-col="original-topic">${esc(e.original_topic)}</a>
      <span class="where">${where}</span>`;
  }

  function failure(e) {
    const parts = [];
    if (e.exception_class) {
      const short = e.exception_class.split(".").pop();
      parts.push(`<span class="exception-class" data-col="exception-class" title="${esc(e.exception_class)}">${esc(short)}</span>`);
    }
    if (e.exception_message) {
      parts.push(`<span class="exception-message" data-col="exception-message">${esc(e.exception_message)}</span>`);
    }
    const context = [
      e.convention ? `${e.convention === "connect" ? "Kafka Connect" : "Spring"}` : "",
      e.connector ? `connector ${esc(e.connector)}` : "",
      e.task != null ? `task ${esc(e.task)}` : "",
      e.stage ? `stage ${esc(e.stage)}` : "",
      e.consumer_group ? `group ${esc(e.consumer_group)}` : "",
    ].filter(Boolean).join(" · ");
    if (context) parts.push(`<span class="context">${context}</span>`);
    if (e.stacktrace) {
      parts.push(`<details><summary>stack trace</summary><pre class="stacktrace">${esc(e.stacktrace)}</pre></details>`);
    }
    return parts.join("") || '<span class="muted">no error headers</span>';
  }

  function row(r) {
    const id = `${current.partition}:${r.offset}`;
    const picked = selected.has(id);
    const pick = canOperate
      ? `<td class="pick"><input type="checkbox" data-pick="${id}" ${picked ? "checked" : ""}
          aria-label="select offset ${r.offset}"></td>`
      : "";
    return `<tr data-offset="${r.offset}" class="${picked ? "picked" : ""}">${pick}
      <td class="num offset">${r.offset}</td>
      <td class="ts">${fmt.time(r.timestamp)}<span class="muted">${esc(r.timestamp_type || "")}</span></td>
      <td class="original">${original(r.error)}</td>
      <td class="error">${failure(r.error)}</td>
      <td class="num attempts">${r.error.attempts == null ? dash : r.error.attempts}</td>
      <td class="key">${key(r.key)}</td>
      <td class="value">${data(r.value)}</td>
    </tr>`;
  }

  function emptyRow(text) {
    return `<tr><td colspan="${canOperate ? 8 : 7}" class="empty">${esc(text)}</td></tr>`;
  }

  // -- browsing ------------------------------------------------------------------------------
  const body = document.querySelector("#dlq-records tbody");
  const selected = new Set(); // "partition:offset" of the records picked for a replay
  let current = null; // the query shown: {partition, filters, next, shown, scanned, answer}

  function filters() {
    return {
      original_topic: $("dlq-original-topic").value.trim(),
      exception: $("dlq-exception").value.trim(),
      q: $("dlq-q").value.trim(),
    };
  }

  function describe() {
    const a = current.answer;
    const lo = a.log_start_offset;
    const hi = a.high_watermark;
    const holds = hi > lo ? `offsets ${fmt.num(lo)}${"\u2013"}${fmt.num(hi - 1)} (${fmt.num(hi - lo)} records)` : "empty";
    const filtered = Object.values(current.filters).some(Boolean);
    $("dlq-range").textContent = `Partition ${a.partition}: ${holds} · showing ${fmt.num(current.shown)}`
      + (filtered ? " matching the filters" : "");
    $("dlq-scanned").textContent = current.next == null
      ? `Scanned ${fmt.num(current.scanned)} records, up to the high watermark.`
      : `Scanned ${fmt.num(current.scanned)} records; more from offset ${fmt.num(current.next)}.`;
    $("dlq-more").hidden = current.next == null;
  }

  async function fetchPage(start) {
    const params = new URLSearchParams({ partition: String(current.partition), limit: $("dlq-limit").value || String(page.default_limit) });
    if (start != null) params.set("start", String(start));
    for (const [name, value] of Object.entries(current.filters)) if (value) params.set(name, value);
    return Weir.api("GET", `${base}/records/?${params}`);
  }

  async function load() {
    showError("dlq-error", "");
    current = { partition: Number($("dlq-partition").value), filters: filters(), next: null, shown: 0, scanned: 0, answer: null };
    selected.clear();
    updateSelection();
    $("dlq-load").disabled = true;
    try {
      const answer = await fetchPage(null);
      current.answer = answer;
      current.next = answer.next;
      current.shown = answer.records.length;
      current.scanned = answer.scanned;
      body.innerHTML = answer.records.map(row).join("")
        || emptyRow(answer.next == null ? "No dead letters here." : "No match in the records scanned; load more to scan on.");
      describe();
    } catch (error) {
      body.innerHTML = "";
      $("dlq-range").textContent = "";
      $("dlq-scanned").textContent = "";
      $("dlq-more").hidden = true;
      showError("dlq-error", error.message);
    } finally {
      $("dlq-load").disabled = false;
    }
  }

  async function more() {
    showError("dlq-error", "");
    $("dlq-more").disabled = true;
    try {
      const answer = await fetchPage(current.next);
      const empty = body.querySelector("td.empty");
      if (empty && answer.records.length) empty.parentElement.remove();
      body.insertAdjacentHTML("beforeend", answer.records.map(row).join(""));
      current.answer = answer;
      current.next = answer.next;
      current.shown += answer.records.length;
      current.scanned += answer.scanned;
      describe();
    } catch (error) {
      showError("dlq-error", error.message);
    } finally {
      $("dlq-more").disabled = false;
    }
  }

  $("dlq-filter").addEventListener("submit", (event) => { event.preventDefault(); load(); });
  $("dlq-more").addEventListener("click", more);
  $("dlq-partition").addEventListener("change", () => {
    const url = new URL(window.location.href);
    url.searchParams.set("partition", $("dlq-partition").value);
    history.replaceState(null, "", url);
    load();
  });

  // -- selection (operators) -----------------------------------------------------------------
  function updateSelection() {
    if (!canOperate) return;
    $("selected-count").textContent = fmt.num(selected.size);
    $("replay-selected").disabled = selected.size === 0;
    const boxes = body.querySelectorAll("input[data-pick]");
    const all = $("select-page");
    all.checked = boxes.length > 0 && [...boxes].every((b) => b.checked);
    if (scope.value === "selected") scopeNote();
  }

  function pick(box) {
    if (box.checked) selected.add(box.dataset.pick); else selected.delete(box.dataset.pick);
    box.closest("tr").classList.toggle("picked", box.checked);
  }

  if (canOperate) {
    body.addEventListener("change", (event) => {
      if (!event.target.matches("input[data-pick]")) return;
      pick(event.target);
      updateSelection();
    });
    $("select-page").addEventListener("change", (event) => {
      body.querySelectorAll("input[data-pick]").forEach((box) => { box.checked = event.target.checked; pick(box); });
      updateSelection();
    });
  }

  load();
  if (!canOperate) return;

  // -- replay (operators) --------------------------------------------------------------------
  const panel = $("replay-panel");

  function scopeNote() {
    const f = filters();
    const narrowed = [
      f.original_topic ? `original topic ${f.original_topic}` : "",
      f.exception ? `exception containing "${f.exception}"` : "",
      f.q ? `key or value containing "${f.q}"` : "",
    ].filter(Boolean).join(" and ");
    let text;
    if (scope.value === "selected") {
      text = `${fmt.num(selected.size)} record${selected.size === 1 ? "" : "s"} picked in the table.`;
    } else {
      text = scope.value === "all"
        ? "Every record the DLQ holds now, in every partition"
        : "The offsets of the range";
      text += narrowed ? `, whose ${narrowed} (the filters above).` : " (no filter set above).";
    }
    $("replay-scope-note").textContent = text;
  }

  function syncScope() {
    panel.querySelectorAll("[data-scope]").forEach((node) => { node.hidden = node.dataset.scope !== scope.value; });
    scopeNote();
  }

  function openReplay(which) {
    scope.value = which;
    if (which === "range" && current && current.answer) {
      $("replay-partition").value = String(current.partition);
      if (!$("replay-start").value) $("replay-start").value = String(current.answer.log_start_offset);
      if (!$("replay-end").value) $("replay-end").value = String(current.answer.high_watermark);
    }
    syncScope();
    $("purge-panel").hidden = true;
    panel.hidden = false;
    $("replay-plan").hidden = true;
    showError("replay-error", "");
    panel.scrollIntoView({ block: "nearest" });
  }

  function offsetField(id, label) {
    const text = $(id).value.trim();
    if (!/^\d+$/.test(text)) throw new Error(`enter the ${label} (an offset)`);
    return Number(text);
  }

  // The replay request the form describes (dry_run added by the caller).
  function request() {
    const f = filters();
    const body = { target_topic: $("replay-target").value.trim() || null, purge: $("replay-purge").checked };
    if (scope.value === "selected") {
      if (!selected.size) throw new Error("select the records to replay in the table first");
      if (selected.size > page.max_selected) throw new Error(`select at most ${fmt.num(page.max_selected)} records`);
      body.records = [...selected].map((id) => {
        const [partition, offset] = id.split(":").map(Number);
        return { partition, offset };
      }).sort((a, b) => a.partition - b.partition || a.offset - b.offset);
      return body;
    }
    if (scope.value === "range") {
      const start = offsetField("replay-start", "first offset");
      const end = offsetField("replay-end", "end offset");
      if (end <= start) throw new Error("the end offset (exclusive) must be above the first offset");
      body.ranges = [{ partition: Number($("replay-partition").value), start_offset: start, end_offset: end }];
    } else {
      body.all = true;
    }
    if (f.original_topic) body.original_topic = f.original_topic;
    if (f.exception) body.exception = f.exception;
    if (f.q) body.q = f.q;
    return body;
  }

  function describeRequest(asked) {
    const what = asked.records
      ? `${fmt.num(asked.records.length)} selected record${asked.records.length === 1 ? "" : "s"}`
      : asked.ranges
        ? `offsets ${asked.ranges[0].start_offset}${"\u2013"}${asked.ranges[0].end_offset - 1} of partition ${asked.ranges[0].partition}`
        : "every record the DLQ holds now";
    const where = asked.target_topic ? `to ${asked.target_topic}` : "to their original topics";
    return `Replay ${what} of ${topic} ${where}${asked.purge ? ", then purge them from the DLQ" : ""}.`;
  }

  function renderPlan(plan) {
    const problems = plan.problems || [];
    $("plan-summary").innerHTML = `Would replay <strong data-plan="matched">${fmt.num(plan.matched)}</strong> of
      ${fmt.num(plan.scanned)} records read (${fmt.num(plan.skipped)} skipped).`
      + (problems.length ? ' <strong class="error-text">The replay is refused until these problems are solved:</strong>' : "");
    $("plan-problems").innerHTML = problems.map((p) => `<li>${esc(p)}</li>`).join("");
    $("plan-problems").hidden = !problems.length;
    document.querySelector("#plan-targets tbody").innerHTML = (plan.targets || []).map((t) => `
      <tr data-target="${esc(t.topic)}" data-partition="${t.partition ?? ""}">
        <td class="mono">${esc(t.topic)}</td>
        <td class="num">${t.partition == null ? '<span class="muted">by key</span>' : t.partition}</td>
        <td class="num" data-col="records">${fmt.num(t.records)}</td></tr>`).join("")
      || '<tr><td colspan="3" class="empty">Nothing to replay.</td></tr>';
    $("plan-purge").textContent = plan.purge
      ? `Then purge: ${plan.purge.map((p) => `partition ${p.partition} before offset ${fmt.num(p.before_offset)}`).join(", ")}.`
      : "No purge.";
    document.querySelector("#plan-sample tbody").innerHTML = (plan.sample || []).map((s) => `
      <tr><td class="num">${s.partition}</td><td class="num">${s.offset}</td><td class="mono">${esc(s.target_topic)}</td>
        <td class="num">${s.target_partition == null ? '<span class="muted">by key</span>' : s.target_partition}</td></tr>`).join("");
    $("plan-sample-box").hidden = !(plan.sample || []).length;
    $("replay-plan").hidden = false;
  }

  // What the form asks for, or null with the reason shown under the form.
  function checked(box, read) {
    showError(box, "");
    try {
      return read();
    } catch (error) {
      showError(box, error.message);
      return null;
    }
  }

  // `call` for Weir.act: its failure also shown in `box`, under the form that made it.
  function reporting(box, call) {
    return async () => {
      try {
        return await call();
      } catch (error) {
        showError(box, error.message);
        throw error;
      }
    };
  }

  async function dryRun() {
    const asked = checked("replay-error", request);
    if (!asked) return;
    $("replay-dry-run").disabled = true;
    try {
      renderPlan(await Weir.api("POST", `${base}/replay/`, { ...asked, dry_run: true }));
    } catch (error) {
      $("replay-plan").hidden = true;
      showError("replay-error", error.message);
    } finally {
      $("replay-dry-run").disabled = false;
    }
  }

  // -- the replay job ------------------------------------------------------------------------
  function showJob(job) {
    const percent = Math.round((job.progress || 0) * 1000) / 10;
    const bar = $("replay-progress");
    bar.className = `progress ${job.status}`;
    bar.firstElementChild.style.width = `${job.status === "queued" ? 0 : percent}%`;
    bar.setAttribute("aria-valuenow", String(percent));
    const status = $("replay-job-status");
    status.textContent = job.status;
    status.className = `badge job-${job.status}`;
    $("replay-job-message").textContent = job.status === "queued"
      ? "waiting for a worker"
      : `${job.status === "running" ? `${percent} % · ` : ""}${job.message || ""}`;
    showError("replay-job-error", job.error || "");
  }

  // The job's progress as /ws/ui/jobs/?kind=dlq-replay pushes it (the jobs page's socket: the
  // server reads the job records once a second and sends them when one moved), until it ends.
  function follow(job) {
    $("replay-job").hidden = false;
    $("replay-job-link").textContent = `#${job.id}`;
    $("replay-job-link").href = "/jobs/?kind=dlq-replay";
    showJob(job);
    return new Promise((resolve) => {
      const socket = Weir.live("/ws/ui/jobs/?kind=dlq-replay", (message) => {
        if (message.type === "error") { showError("replay-job-error", message.message); return; }
        if (message.type !== "jobs") return;
        const now = message.jobs.find((j) => j.id === job.id);
        if (!now) return;
        showJob(now);
        if (now.status === "queued" || now.status === "running") return;
        socket.close();
        if (now.status === "succeeded") Weir.toast(now.message || `Replay job ${job.id} succeeded`, "ok");
        else Weir.toast(`Replay job ${job.id} failed: ${now.error || now.message}`, "error");
        load(); // a purge moved the log start; a replay of this DLQ into itself added records
        resolve(now);
      });
    });
  }

  $("replay-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const asked = checked("replay-error", request);
    if (!asked) return;
    const answer = await Weir.act({
      confirm: { title: `Replay from ${topic}?`, message: describeRequest(asked), confirmLabel: "Replay" },
      run: reporting("replay-error", () => Weir.api("POST", `${base}/replay/`, { ...asked, dry_run: false })),
      done: (r) => `Replay job ${r.job.id} queued`,
    });
    if (!answer) return;
    $("replay-submit").disabled = true;
    $("replay-dry-run").disabled = true;
    try {
      await follow(answer.job);
    } finally {
      $("replay-submit").disabled = false;
      $("replay-dry-run").disabled = false;
    }
  });

  $("replay-dry-run").addEventListener("click", dryRun);
  $("replay-cancel").addEventListener("click", () => { panel.hidden = true; });
  $("replay-selected").addEventListener("click", () => openReplay("selected"));
  $("replay-matching").addEventListener("click", () => openReplay("range"));
  scope.addEventListener("change", () => { syncScope(); $("replay-plan").hidden = true; });
  $("dlq-filter").addEventListener("input", () => { if (!panel.hidden) scopeNote(); });

  // -- purge (operators) ---------------------------------------------------------------------
  const purgePanel = $("purge-panel");

  $("purge-open").addEventListener("click", () => {
    panel.hidden = true;
    $("purge-partition").value = String(current ? current.partition : page.partition);
    purgePanel.hidden = false;
    showError("purge-error", "");
    $("purge-before").focus();
  });
  $("purge-cancel").addEventListener("click", () => { purgePanel.hidden = true; });

  $("purge-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const before = checked("purge-error", () => offsetField("purge-before", "offset to purge before"));
    if (before == null) return;
    const partition = Number($("purge-partition").value);
    const result = await Weir.act({
      confirm: {
        title: `Purge ${topic}?`,
        message: `Delete every record of partition ${partition} before offset ${fmt.num(before)}. They are not replayed and cannot be brought back.`,
        typed: topic,
        confirmLabel: "Purge",
        danger: true,
      },
      run: reporting("purge-error", () => Weir.api("POST", `${base}/purge/`, { partitions: [{ partition, before_offset: before }] })),
      done: (r) => `Partition ${r.partitions[0].partition} now starts at offset ${fmt.num(r.partitions[0].low_watermark)}`,
    });
    if (!result) return;
    purgePanel.hidden = true;
    if (partition === current.partition) load();
  });
})();
