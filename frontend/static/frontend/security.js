/* Security page (admins): ACLs through /kafka/v3/clusters/{id}/acls and SCRAM users through
 * /api/scram-users/. Every list comes from the API; every change is confirm → call → reload,
 * and an API error is shown next to the form (and as a toast) exactly as the API words it. */
(function () {
  "use strict";
  const { esc } = Weir;
  const cluster = document.body.dataset.cluster;
  const aclUrl = `/kafka/v3/clusters/${encodeURIComponent(cluster)}/acls`;
  const scramUrl = "/api/scram-users/";
  const ACL_FIELDS = ["resource_type", "resource_name", "pattern_type", "principal", "host",
    "operation", "permission"];

  const { showError } = Weir;

  // Failures inside a form go next to it too (Weir.act also toasts them).
  async function reporting(errorId, call) {
    try {
      return await call();
    } catch (error) {
      showError(errorId, error.message);
      throw error;
    }
  }

  function emptyRow(columns, text) {
    return `<tr><td colspan="${columns}" class="empty">${esc(text)}</td></tr>`;
  }

  // -- ACLs -------------------------------------------------------------------------------
  const aclBody = document.querySelector("#acls-table tbody");
  const aclForm = document.getElementById("acl-form");
  let acls = [];

  function aclQuery() {
    const params = new URLSearchParams();
    const principal = document.getElementById("acl-filter-principal").value.trim();
    const type = document.getElementById("acl-filter-type").value;
    const resource = document.getElementById("acl-filter-resource").value.trim();
    if (principal) params.set("principal", principal);
    if (type) params.set("resource_type", type);
    if (resource) {
      params.set("resource_name", resource);
      params.set("pattern_type", "MATCH"); // also the prefixed ACLs that cover the name
    }
    return params.toString();
  }

  function renderAcls() {
    aclBody.innerHTML = acls.map((a, i) => `
      <tr data-principal="${esc(a.principal)}" data-resource="${esc(a.resource_name)}" data-operation="${esc(a.operation)}">
        <td class="mono">${esc(a.principal)}</td>
        <td><span class="badge ${a.permission === "ALLOW" ? "ok" : "bad"}">${esc(a.permission)}</span></td>
        <td>${esc(a.operation)}</td>
        <td>${esc(a.resource_type)}</td>
        <td>${esc(a.pattern_type)}</td>
        <td class="mono">${esc(a.resource_name)}</td>
        <td class="mono">${esc(a.host)}</td>
        <td><button type="button" class="danger acl-remove" data-index="${i}">Remove</button></td>
      </tr>`).join("") || emptyRow(8, aclQuery() ? "No ACL matches the filter." : "No ACLs.");
    document.getElementById("acl-count").textContent =
      `${acls.length} ACL${acls.length === 1 ? "" : "s"}`;
  }

  const sameAcl = (a, b) => ACL_FIELDS.every((field) => a[field] === b[field]);

  // Would the current filter list `acl`? (Resource names: the MATCH rule, as the brokers do.)
  function shownByFilter(acl) {
    const params = new URLSearchParams(aclQuery());
    const name = params.get("resource_name");
    return (!params.get("principal") || params.get("principal") === acl.principal)
      && (!params.get("resource_type") || params.get("resource_type") === acl.resource_type)
      && (!name || acl.resource_name === name || acl.resource_name === "*"
        || (acl.pattern_type === "PREFIXED" && name.startsWith(acl.resource_name)));
  }

  // Brokers apply an ACL change within a second of each other, and the listing may come from
  // one that has not yet: `added`/`removed` (just done here) are reflected in any case.
  async function loadAcls({ added, removed } = {}) {
    try {
      const query = aclQuery();
      const body = await Weir.api("GET", query ? `${aclUrl}?${query}` : aclUrl);
      acls = body.data.filter((a) => !(removed && sameAcl(a, removed)));
      if (added && shownByFilter(added) && !acls.some((a) => sameAcl(a, added))) {
        acls.push(added);
      }
      renderAcls();
    } catch (error) {
      aclBody.innerHTML = emptyRow(8, "Could not list ACLs: " + error.message);
      document.getElementById("acl-count").textContent = "";
    }
  }

  function describeAcl(a) {
    return `${a.permission} ${a.principal} ${a.operation} on ${a.resource_type} `
      + `${a.pattern_type.toLowerCase()} "${a.resource_name}" from host ${a.host}`;
  }

  document.getElementById("acl-filter-apply").addEventListener("click", () => loadAcls());
  for (const id of ["acl-filter-principal", "acl-filter-resource"]) {
    document.getElementById(id).addEventListener("keydown", (event) => {
      if (event.key === "Enter") loadAcls();
    });
  }
  document.getElementById("acl-filter-type").addEventListener("change", () => loadAcls());
  document.getElementById("acl-add-toggle").addEventListener("click", () => {
    aclForm.hidden = !aclForm.hidden;
    if (!aclForm.hidden) document.getElementById("acl-principal").focus();
  });
  document.getElementById("acl-cancel").addEventListener("click", () => {
    aclForm.hidden = true;
    showError("acl-error", "");
  });

  aclForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("acl-error", "");
    const acl = {
      principal: document.getElementById("acl-principal").value.trim(),
      host: document.getElementById("acl-host").value.trim() || "*",
      permission: document.getElementById("acl-permission").value,
      operation: document.getElementById("acl-operation").value,
      resource_type: document.getElementById("acl-resource-type").value,
      pattern_type: document.getElementById("acl-pattern-type").value,
      resource_name: document.getElementById("acl-resource-name").value.trim(),
    };
    if (!acl.principal || !acl.resource_name) {
      showError("acl-error", "An ACL needs a principal and a resource name.");
      return;
    }
    const done = await Weir.act({
      confirm: { title: "Add this ACL?", message: describeAcl(acl), confirmLabel: "Add ACL" },
      // 201 has no body; Weir.act's null means "cancelled or failed", so answer true.
      run: () => reporting("acl-error", async () => (await Weir.api("POST", aclUrl, acl)) ?? true),
      done: "ACL added",
    });
    if (done !== null) {
      document.getElementById("acl-principal").value = "";
      document.getElementById("acl-resource-name").value = "";
      aclForm.hidden = true;
      await loadAcls({ added: acl });
    }
  });

  aclBody.addEventListener("click", async (event) => {
    const button = event.target.closest("button.acl-remove");
    if (!button) return;
    const acl = acls[Number(button.dataset.index)];
    // Every field given exactly: the filter matches this one ACL and nothing else.
    const params = new URLSearchParams();
    for (const field of ACL_FIELDS) params.set(field, acl[field]);
    const removed = await Weir.act({
      confirm: { title: "Remove this ACL?", message: describeAcl(acl), confirmLabel: "Remove", danger: true },
      run: () => Weir.api("DELETE", `${aclUrl}?${params}`),
      done: (body) => `${body.data.length} ACL${body.data.length === 1 ? "" : "s"} removed`,
    });
    if (removed !== null) await loadAcls({ removed: acl });
  });

  // -- SCRAM users ------------------------------------------------------------------------
  const scramBody = document.querySelector("#scram-table tbody");
  const scramForm = document.getElementById("scram-form");
  let credentials = []; // one row per (user, mechanism)

  function renderUsers() {
    scramBody.innerHTML = credentials.map((c, i) => `
      <tr data-user="${esc(c.name)}" data-mechanism="${esc(c.mechanism)}">
        <td class="mono">${esc(c.name)}</td>
        <td>${esc(c.mechanism)}</td>
        <td class="num">${Weir.fmt.num(c.iterations)}</td>
        <td>
          <button type="button" class="scram-change" data-index="${i}">Change password</button>
          <button type="button" class="danger scram-delete" data-index="${i}">Delete</button>
        </td>
      </tr>`).join("") || emptyRow(4, "No SCRAM users.");
    const users = new Set(credentials.map((c) => c.name)).size;
    document.getElementById("scram-count").textContent = `${users} user${users === 1 ? "" : "s"}`;
  }

  async function loadUsers() {
    try {
      const users = await Weir.api("GET", scramUrl);
      credentials = users.flatMap((u) => u.mechanisms.map((m) => ({ name: u.name, ...m })));
      renderUsers();
    } catch (error) {
      scramBody.innerHTML = emptyRow(4, "Could not list SCRAM users: " + error.message);
      document.getElementById("scram-count").textContent = "";
    }
  }

  scramForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("scram-error", "");
    const body = {
      name: document.getElementById("scram-name").value.trim(),
      mechanism: document.getElementById("scram-mechanism").value,
      password: document.getElementById("scram-password").value,
    };
    const iterations = document.getElementById("scram-iterations").value.trim();
    if (iterations) body.iterations = Number(iterations);
    if (!body.name || !body.password) {
      showError("scram-error", "A SCRAM user needs a name and a password.");
      return;
    }
    const exists = credentials.some((c) => c.name === body.name && c.mechanism === body.mechanism);
    const saved = await Weir.act({
      confirm: {
        title: exists ? `Change ${body.name}'s password?` : `Create SCRAM user ${body.name}?`,
        message: `${body.mechanism}, ${body.iterations || "default"} iterations`,
        confirmLabel: exists ? "Change password" : "Create user",
      },
      run: () => reporting("scram-error", () => Weir.api("POST", scramUrl, body)),
      done: exists ? `Password of ${body.name} changed` : `SCRAM user ${body.name} created`,
    });
    if (saved !== null) {
      document.getElementById("scram-password").value = "";
      await loadUsers();
    }
  });

  scramBody.addEventListener("click", async (event) => {
    const change = event.target.closest("button.scram-change");
    if (change) {
      const c = credentials[Number(change.dataset.index)];
      document.getElementById("scram-name").value = c.name;
      document.getElementById("scram-mechanism").value = c.mechanism;
      document.getElementById("scram-iterations").value = c.iterations;
      document.getElementById("scram-password").focus();
      return;
    }
    const remove = event.target.closest("button.scram-delete");
    if (!remove) return;
    const c = credentials[Number(remove.dataset.index)];
    const deleted = await Weir.act({
      confirm: {
        title: `Delete ${c.name}'s ${c.mechanism} credential?`,
        message: "Clients logging in as this user with this mechanism will be refused.",
        typed: c.name,
        confirmLabel: "Delete",
        danger: true,
      },
      run: () => Weir.api("DELETE",
        `${scramUrl}${encodeURIComponent(c.name)}/?mechanism=${encodeURIComponent(c.mechanism)}`),
      done: `${c.mechanism} credential of ${c.name} deleted`,
    });
    if (deleted !== null) await loadUsers();
  });

  loadAcls();
  loadUsers();
})();
