/* Jobs page.
 *
 * The jobs table and the schedules follow /ws/ui/jobs/?kind=&status= (the server reads the job
 * records once a second and pushes them when something moved; the browser never polls).
 * Changing a filter reopens the socket with the new query and keeps it in the page's URL.
 * Operators run a job now (POST /api/jobs/) and edit a schedule's interval or switch it
 * (PATCH /api/schedules/<id>/); both confirm first and report the result.
 */
(function () {
  "use strict";
  const { esc, fmt } = Weir;

  const canOperate = Boolean(document.getElementById("run-now"));
  const kindFilter = document.getElementById("kind-filter");
  const statusFilter = document.getElementById("status-filter");
  let live = Weir.data("live-data");
  let socket = null;

  // helpers ----------------------------------------------------------------------------------

  function clock(iso) {
    if (!iso) return '<span class="muted">–</span>';
    const when = new Date(iso);
    return `<time datetime="${esc(iso)}" title="${esc(when.toISOString())}">${
      when.toLocaleString("en-GB", { dateStyle: "short", timeStyle: "medium" })}</time>`;
  }

  function duration(startIso, endIso) {
    if (!startIso || !endIso) return "";
    const seconds = (new Date(endIso) - new Date(startIso)) / 1000;
    return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : fmt.seconds(seconds);
  }

  function every(seconds) {
    if (seconds == null) return "–";
    const units = [[86400, "d"], [3600, "h"], [60, "min"]];
    for (const [size, unit] of units) {
      if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}`;
    }
    return `${seconds} s`;
  }

  function who(scheduledBy) {
    const [source, ...rest] = String(scheduledBy || "").split(":");
    const name = rest.join(":");
    const label = { beat: "schedule", user: "user", cli: "command line" }[source] || source;
    return name ? `<span class="muted">${esc(label)}</span> ${esc(name)}` : esc(label);
  }

  // jobs -------------------------------------------------------------------------------------

  function progressCell(job) {
    const percent = Math.round((job.progress || 0) * 1000) / 10;
    const text = job.status === "queued" ? "waiting for a worker" : (job.message || "");
    return `<div class="progress ${esc(job.status)}" role="progressbar" aria-valuenow="${percent}"
        data-progress><div style="width:${job.status === "queued" ? 0 : percent}%"></div></div>
      <div class="progress-text" data-message>${job.status === "running" ? `${percent} % · ` : ""}${esc(text)}</div>`;
  }

  function jobRow(job) {
    const error = job.error || "";
    return `<tr data-job="${job.id}" data-name="${esc(job.name)}" data-status="${esc(job.status)}">
      <td class="num muted">${job.id}</td>
      <td><span class="job-name">${esc(job.name)}</span><div class="muted small">${esc(job.kind)}</div></td>
      <td><span class="badge job-${esc(job.status)}" data-col="status">${esc(job.status)}</span></td>
      <td>${who(job.scheduled_by)}</td>
      <td>${clock(job.started_at)}</td>
      <td>${clock(job.finished_at)}<div class="muted small">${duration(job.started_at, job.finished_at)}</div></td>
      <td class="progress-col">${progressCell(job)}</td>
      <td class="num" data-col="bytes">${job.kind === "analytics" ? "–" : fmt.bytes(job.bytes_reclaimed)}</td>
      <td class="num" data-col="rows">${fmt.num(job.rows_produced)}</td>
      <td class="error-text job-error" title="${esc(error)}">${esc(error.split("\n")[0])}</td>
    </tr>`;
  }

  let drawnJobs = "";
  function renderJobs() {
    const jobs = live.jobs || [];
    const filtered = live.filters && (live.filters.kind || live.filters.status);
    const html = jobs.map(jobRow).join("") || `<tr><td colspan="10" class="muted">${
      filtered ? "No job matches these filters." : "No job has run yet."}</td></tr>`;
    if (html !== drawnJobs) {
      document.querySelector("#jobs-table tbody").innerHTML = html;
      drawnJobs = html;
    }
    const counts = { running: 0, queued: 0, succeeded: 0, failed: 0 };
    for (const job of jobs) counts[job.status] = (counts[job.status] || 0) + 1;
    for (const [key, value] of Object.entries(counts)) {
      document.querySelector(`[data-stat="${key}"]`).textContent = fmt.num(value);
    }
  }

  // schedules --------------------------------------------------------------------------------
  // Rows are built once per schedule and then updated in place, so a push never overwrites
  // an interval an operator is typing.

  function scheduleRow(s) {
    const controls = canOperate
      ? `<td><input type="number" min="1" step="1" value="${s.interval_s ?? ""}" data-interval
            aria-label="interval of ${esc(s.job)} in seconds"> <span class="muted">s</span>
          <span class="muted small" data-col="every"></span></td>
         <td><label class="check"><input type="checkbox" data-enabled ${s.enabled ? "checked" : ""}
            aria-label="${esc(s.job)} enabled"> on</label></td>`
      : `<td data-col="every"></td><td data-col="enabled"></td>`;
    return `<tr data-schedule="${s.id}" data-job="${esc(s.job)}">
      <td><span class="job-name">${esc(s.job)}</span><div class="muted small">${esc(s.name)}</div></td>
      ${controls}
      <td data-col="last-run"></td>
      <td class="num" data-col="runs"></td>
      ${canOperate ? '<td><button type="button" class="small primary" data-save disabled>Save</button></td>' : ""}
    </tr>`;
  }

  function renderSchedules() {
    const body = document.querySelector("#schedules-table tbody");
    const schedules = live.schedules || [];
    if (!schedules.length) {
      body.innerHTML = `<tr><td colspan="6" class="muted">No schedules (they are created by <span class="mono">manage.py migrate</span>).</td></tr>`;
      return;
    }
    const ids = schedules.map((s) => String(s.id)).join(",");
    if (body.dataset.ids !== ids) {
      body.innerHTML = schedules.map(scheduleRow).join("");
      body.dataset.ids = ids;
    }
    for (const s of schedules) {
      const row = body.querySelector(`tr[data-schedule="${s.id}"]`);
      row.dataset.intervalS = s.interval_s ?? "";
      row.dataset.enabledNow = s.enabled ? "1" : "";
      row.querySelector('[data-col="every"]').textContent = canOperate
        ? `(now every ${every(s.interval_s)})` : every(s.interval_s);
      row.querySelector('[data-col="last-run"]').innerHTML = clock(s.last_run_at);
      row.querySelector('[data-col="runs"]').textContent = fmt.num(s.total_run_count);
      if (canOperate) {
        const interval = row.querySelector("[data-interval]");
        const enabled = row.querySelector("[data-enabled]");
        if (!row.dataset.dirty) {
          interval.value = s.interval_s ?? "";
          enabled.checked = s.enabled;
        }
      } else {
        row.querySelector('[data-col="enabled"]').innerHTML = s.enabled
          ? '<span class="badge job-succeeded">on</span>' : '<span class="badge">off</span>';
      }
    }
  }

  function render() {
    renderJobs();
    renderSchedules();
  }

  // the live part ----------------------------------------------------------------------------

  function query() {
    const params = new URLSearchParams();
    if (kindFilter.value) params.set("kind", kindFilter.value);
    if (statusFilter.value) params.set("status", statusFilter.value);
    const text = params.toString();
    return text ? "?" + text : "";
  }

  function connect() {
    if (socket) socket.close();
    socket = Weir.live("/ws/ui/jobs/" + query(), (message) => {
      if (message.type === "error") { Weir.toast(message.message, "error"); return; }
      if (message.type !== "jobs") return;
      live = message;
      render();
    });
  }

  for (const select of [kindFilter, statusFilter]) {
    select.addEventListener("change", () => {
      history.replaceState(null, "", location.pathname + query());
      connect();
    });
  }

  render();
  connect();

  if (!canOperate) return;

  // operators --------------------------------------------------------------------------------

  Weir.runButtons(document.getElementById("run-now"), (button) =>
    `${button.title} It runs now, besides its schedule.`);

  const schedules = document.querySelector("#schedules-table tbody");

  function changed(row) {
    const interval = row.querySelector("[data-interval]").value;
    const enabled = row.querySelector("[data-enabled]").checked;
    return interval !== row.dataset.intervalS || enabled !== Boolean(row.dataset.enabledNow);
  }

  schedules.addEventListener("input", (event) => {
    const row = event.target.closest("tr[data-schedule]");
    if (!row) return;
    const dirty = changed(row);
    if (dirty) row.dataset.dirty = "1"; else delete row.dataset.dirty;
    row.querySelector("[data-save]").disabled = !dirty;
  });

  schedules.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-save]");
    if (!button) return;
    const row = button.closest("tr[data-schedule]");
    const job = row.dataset.job;
    const intervalText = row.querySelector("[data-interval]").value.trim();
    const interval = Number(intervalText);
    if (!Number.isInteger(interval) || interval < 1) {
      Weir.toast("The interval must be a whole number of seconds, at least 1.", "error");
      return;
    }
    const enabled = row.querySelector("[data-enabled]").checked;
    const body = {};
    if (String(interval) !== row.dataset.intervalS) body.interval_s = interval;
    if (enabled !== Boolean(row.dataset.enabledNow)) body.enabled = enabled;
    const parts = [];
    if ("interval_s" in body) parts.push(`run every ${every(interval)} (now every ${every(Number(row.dataset.intervalS))})`);
    if ("enabled" in body) parts.push(enabled ? "switch it on" : "switch it off: beat will not run it");
    const saved = await Weir.act({
      confirm: { title: `Change the ${job} schedule`, message: `${job}: ${parts.join("; ")}.`, confirmLabel: "Save" },
      run: () => Weir.api("PATCH", `/api/schedules/${row.dataset.schedule}/`, body),
      done: (s) => `${s.job} now runs every ${every(s.interval_s)}${s.enabled ? "" : " (switched off)"}`,
    });
    if (saved) {
      delete row.dataset.dirty;
      button.disabled = true;
      live.schedules = live.schedules.map((s) => (s.id === saved.id ? saved : s));
      renderSchedules();
    }
  });
})();
