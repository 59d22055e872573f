/* Quotas page: entities and usage rows from the page (json_script), then from /ws/ui/quotas/.
 * Search and paging happen here, in the browser. Operators save a quota with
 * PUT /api/quotas/ (the limits filled in become the entity's only ones) and remove an entity
 * with DELETE /api/quotas/; the socket then shows the change, and the call's answer is drawn
 * at once so the table never lags behind what was just done. */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const URL_ = "/api/quotas/";
  const KEYS = Weir.data("quota-keys") || [];
  const PAGE = 100;
  const canOperate = Boolean(document.getElementById("quota-form"));
  const search = document.getElementById("quota-search");
  let state = Weir.data("quotas-data") || { quotas: [], usage: [] };
  const pagers = {
    quotas: Weir.pager("quotas", PAGE, () => render()),
    usage: Weir.pager("usage", PAGE, () => render()),
  };

  function limit(key, value) {
    if (value == null) return '<span class="muted">–</span>';
    return key === "request_percentage" ? `${fmt.num(value)} %` : fmt.rate(value);
  }

  function rate(row) {
    return row.type === "Request" ? `${Number(row.rate).toFixed(1)} %` : fmt.rate(row.rate);
  }

  function throttle(row) {
    return `${fmt.num(Math.round(row.throttle_time_avg_ms))} / ${fmt.num(Math.round(row.throttle_time_max_ms))} ms`;
  }

  function matches(...texts) {
    const needle = search.value.trim().toLowerCase();
    return !needle || texts.some((t) => String(t ?? "").toLowerCase().includes(needle));
  }

  // This page of `list` into #<name>-table (or `empty` when there is none), with its pager.
  function page(name, list, render, empty) {
    const columns = document.querySelectorAll(`#${name}-table thead th`).length;
    document.querySelector(`#${name}-table tbody`).innerHTML =
      pagers[name].rows(list).map(render).join("")
      || `<tr><td colspan="${columns}" class="empty">${esc(empty)}</td></tr>`;
  }

  function usageCell(rows) {
    if (!rows.length) return '<span class="muted">no client seen</span>';
    return rows.map((u) => `<div class="usage" data-broker="${u.broker_id}" data-type="${esc(u.type)}">
      broker ${u.broker_id} · ${esc(u.type)} <strong>${rate(u)}</strong>
      ${u.throttled_requests ? `· <span class="badge warn">throttled ${fmt.num(u.throttled_requests)}×</span> max ${fmt.num(Math.round(u.throttle_time_max_ms))} ms` : ""}
    </div>`).join("");
  }

  function render() {
    const quotas = state.quotas.filter((q) => matches(q.entity));
    page("quotas", quotas, (q, i) => `
      <tr data-entity="${esc(q.entity)}">
        <td class="mono">${esc(q.entity)}</td>
        ${KEYS.map((k) => `<td class="num" data-key="${esc(k)}">${limit(k, q.values[k])}</td>`).join("")}
        <td class="usage-cell">${usageCell(q.usage)}</td>
        ${canOperate ? `<td>
          <button type="button" class="quota-edit" data-entity="${esc(q.entity)}">Edit</button>
          <button type="button" class="danger quota-remove" data-entity="${esc(q.entity)}">Remove</button>
        </td>` : ""}
      </tr>`, state.quotas.length ? "No quota matches the filter." : "No client quotas are set.");
    document.getElementById("quota-count").textContent =
      `${fmt.num(quotas.length)} entit${quotas.length === 1 ? "y" : "ies"}${search.value.trim() ? " match" : ""}`;

    const usage = state.usage.filter((u) => matches(u.user, u.client_id));
    page("usage", usage, (u) => `
      <tr data-broker="${u.broker_id}" data-type="${esc(u.type)}" data-user="${esc(u.user)}" data-client="${esc(u.client_id)}">
        <td class="num">${u.broker_id}</td>
        <td>${esc(u.type)}</td>
        <td class="mono">${esc(u.user) || '<span class="muted">–</span>'}</td>
        <td class="mono">${esc(u.client_id) || '<span class="muted">–</span>'}</td>
        <td class="num">${u.quota == null ? "–" : (u.type === "Request" ? `${fmt.num(u.quota)} %` : fmt.rate(u.quota))}</td>
        <td class="num">${rate(u)}</td>
        <td class="num">${throttle(u)}</td>
        <td class="num">${fmt.num(u.throttled_requests)}</td>
      </tr>`, "No client under a quota has sent anything lately.");
    document.getElementById("usage-count").textContent = `${fmt.num(usage.length)} row${usage.length === 1 ? "" : "s"}`;
  }

  search.addEventListener("input", () => { pagers.quotas.reset(); pagers.usage.reset(); render(); });

  Weir.live("/ws/ui/quotas/", (message) => {
    if (message.type !== "quotas") return;
    state = message;
    render();
  });
  render();

  // -- set / remove (operators) -----------------------------------------------------------
  if (!canOperate) return;
  const form = document.getElementById("quota-form");
  const errorBox = document.getElementById("quota-error");
  const userInput = document.getElementById("quota-user");
  const clientInput = document.getElementById("quota-client");

  const showError = (text) => Weir.showError(errorBox, text);

  function entityQuery(q) {
    const params = new URLSearchParams();
    if (q.user != null) params.set("user", q.user);
    if (q.client_id != null) params.set("client_id", q.client_id);
    return params.toString();
  }

  // Draw what a call just did, before the socket's next message says the same.
  function applied(entity, values, parts) {
    const rest = state.quotas.filter((q) => q.entity !== entity);
    if (values && Object.keys(values).length) {
      const old = state.quotas.find((q) => q.entity === entity);
      rest.push({ entity, ...parts, values, usage: old ? old.usage : [] });
      rest.sort((a, b) => a.entity.localeCompare(b.entity));
    }
    state = { ...state, quotas: rest };
    render();
  }

  function clearForm() {
    form.reset();
    showError("");
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    const body = { values: {} };
    const user = userInput.value.trim();
    const client = clientInput.value.trim();
    if (user) body.user = user;
    if (client) body.client_id = client;
    for (const input of form.querySelectorAll(".quota-value")) {
      if (input.value.trim() !== "") body.values[input.dataset.key] = Number(input.value);
    }
    if (!user && !client) {
      showError("A quota needs a user, a client id, or both.");
      return;
    }
    if (!Object.keys(body.values).length) {
      showError("Fill in at least one limit (remove an entity with its Remove button).");
      return;
    }
    const described = Object.entries(body.values).map(([k, v]) => `${k}=${v}`).join(", ");
    const saved = await Weir.act({
      confirm: { title: "Save this quota?", message: `${[user && `user ${user}`, client && `client id ${client}`].filter(Boolean).join(", ")}: ${described}`, confirmLabel: "Save quota" },
      run: async () => {
        try {
          return await Weir.api("PUT", URL_, body);
        } catch (error) {
          showError(error.message);
          throw error;
        }
      },
      done: (answer) => `Quota for ${answer.entity} saved`,
    });
    if (saved !== null) {
      applied(saved.entity, saved.values, { user: saved.user, client_id: saved.client_id });
      clearForm();
    }
  });

  document.getElementById("quota-cancel").addEventListener("click", clearForm);

  document.querySelector("#quotas-table tbody").addEventListener("click", async (event) => {
    const button = event.target.closest("button.quota-edit, button.quota-remove");
    if (!button) return;
    const q = state.quotas.find((item) => item.entity === button.dataset.entity);
    if (!q) return;
    if (button.classList.contains("quota-edit")) {
      userInput.value = q.user ?? "";
      clientInput.value = q.client_id ?? "";
      for (const input of form.querySelectorAll(".quota-value")) {
        const value = q.values[input.dataset.key];
        input.value = value == null ? "" : value;
      }
      form.scrollIntoView({ block: "nearest" });
      userInput.focus();
      return;
    }
    const removed = await Weir.act({
      confirm: {
        title: `Remove the quotas of ${q.entity}?`,
        message: "Its clients fall back to the next quota that applies to them, or none.",
        confirmLabel: "Remove",
        danger: true,
      },
      run: () => Weir.api("DELETE", `${URL_}?${entityQuery(q)}`),
      done: (answer) => `${answer.removed.join(", ")} removed from ${answer.entity}`,
    });
    if (removed !== null) applied(q.entity, null);
  });
})();
