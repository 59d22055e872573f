/* Weir dashboard helpers shared by every page (no build step, no framework).
 *
 * Weir.api      JSON calls to /api/ and /kafka/v3/ with the session cookie and CSRF token.
 * Weir.live     a websocket that reconnects and lights the page's live indicator.
 * Weir.confirm  a modal confirmation (optionally asking to type a name).
 * Weir.act      confirm → call → report, the shape of every mutating control.
 * Weir.chart    Plotly time series that grow from pushed points.
 * Weir.pager    the pager under a paged table (frontend/_pager.html).
 * Weir.showError  an inline error box: shown with a text, hidden without one.
 */
(function () {
  "use strict";

  function cookie(name) {
    const found = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
    return found ? decodeURIComponent(found.split("=")[1]) : "";
  }

  function esc(value) {
    return String(value ?? "").replace(/[&<>"']/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
    })[c]);
  }

  async function api(method, url, body) {
    const options = {
      method,
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": cookie("csrftoken") },
    };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(url, options);
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = { message: text }; }
    if (!response.ok) {
      const message = (data && (data.message || data.detail)) || response.statusText;
      const error = new Error(message);
      error.status = response.status;
      error.data = data;
      throw error;
    }
    return data;
  }

  function toast(text, kind) {
    let box = document.getElementById("toasts");
    const item = document.createElement("div");
    item.className = "toast " + (kind || "");
    item.setAttribute("role", kind === "error" ? "alert" : "status");
    item.textContent = text;
    box.appendChild(item);
    setTimeout(() => item.remove(), kind === "error" ? 12000 : 6000);
  }

  // A modal confirmation. `typed`: the user must type this text to enable the button.
  function confirm({ title, message, typed, confirmLabel, danger }) {
    const dialog = document.getElementById("confirm-dialog");
    dialog.querySelector("h3").textContent = title || "Are you sure?";
    dialog.querySelector(".message").textContent = message || "";
    const typedBox = dialog.querySelector(".typed");
    const input = dialog.querySelector("input");
    const ok = dialog.querySelector("button.confirm");
    ok.textContent = confirmLabel || "Confirm";
    ok.className = "confirm " + (danger ? "danger" : "primary");
    typedBox.hidden = !typed;
    input.value = "";
    dialog.querySelector(".typed-name").textContent = typed || "";
    ok.disabled = Boolean(typed);
    input.oninput = () => { ok.disabled = input.value !== typed; };
    return new Promise((resolve) => {
      const finish = (answer) => { dialog.close(); resolve(answer); };
      ok.onclick = () => finish(true);
      dialog.querySelector("button.cancel").onclick = () => finish(false);
      dialog.oncancel = () => resolve(false);
      dialog.showModal();
      (typed ? input : ok).focus();
    });
  }

  // Every mutating control: ask, call, say what happened. Returns the call's result or null.
  async function act({ confirm: ask, run, done }) {
    if (ask && !(await confirm(ask))) return null;
    try {
      const result = await run();
      const text = typeof done === "function" ? done(result) : done;
      if (text) toast(text, "ok");
      return result;
    } catch (error) {
      toast("Failed: " + error.message, "error");
      return null;
    }
  }

  // A websocket to `path` that reconnects with backoff; `onMessage(json)` per message.
  function live(path, onMessage) {
    const dot = document.querySelector(".live-dot");
    let delay = 500;
    let socket = null;
    let stopped = false;
    function open() {
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      socket = new WebSocket(scheme + location.host + path);
      socket.onopen = () => { delay = 500; if (dot) dot.classList.add("on"); };
      socket.onmessage = (event) => {
        try { onMessage(JSON.parse(event.data)); } catch (e) { console.error(e); }
      };
      socket.onclose = (event) => {
        if (dot) dot.classList.remove("on");
        if (stopped || event.code === 4401 || event.code === 4403) return;
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
    open();
    return { close() { stopped = true; if (socket) socket.close(); } };
  }

  const numbers = new Intl.NumberFormat("en-US"); // one formatter: big tables call num() a lot
  const fmt = {
    num(n) { return n == null ? "–" : numbers.format(n); },
    bytes(n) {
      if (n == null) return "–";
      const units = ["B", "KB", "MB", "GB", "TB"];
      let i = 0; let v = Number(n);
      while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
      return (i ? v.toFixed(1) : String(Math.round(v))) + " " + units[i];
    },
    rate(n) { return fmt.bytes(n) + "/s"; },
    time(ms) { return ms == null || ms < 0 ? "–" : new Date(Number(ms)).toISOString().replace("T", " ").replace("Z", ""); },
    seconds(s) { return s == null ? "–" : (s < 120 ? Number(s).toFixed(1) + " s" : (s / 60).toFixed(1) + " min"); },
  };

  // Plotly time series: chart(div, names, {title, yTitle}) then push(div, at, values).
  const layoutBase = {
    margin: { l: 60, r: 20, t: 30, b: 40 },
    legend: { orientation: "h", y: -0.2 },
    xaxis: { type: "date" },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
  };
  const chart = {
    create(div, names, options) {
      const o = options || {};
      const traces = names.map((name, i) => ({
        x: (o.x && o.x[i]) || [], y: (o.y && o.y[i]) || [], name, mode: "lines", type: "scatter",
        line: { shape: o.shape || "linear" },
      }));
      const layout = Object.assign({}, layoutBase, {
        title: o.title ? { text: o.title, font: { size: 13 } } : undefined,
        yaxis: { title: { text: o.yTitle || "" }, rangemode: "tozero" },
      });
      return Plotly.newPlot(div, traces, layout, { displaylogo: false, responsive: true });
    },
    // Append one point per trace (`values[i]` for trace i), keeping the last `keep` points.
    push(div, at, values, keep) {
      const indices = values.map((_, i) => i);
      return Plotly.extendTraces(div, { x: values.map(() => [at]), y: values.map((v) => [v]) },
        indices, keep || 600);
    },
  };

  function data(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  // Fill the page's stat cards ([data-stat="key"] → text); a card marked
  // data-bad-when-positive turns "bad" while its value is anything but "0".
  function stats(values) {
    for (const [key, value] of Object.entries(values)) {
      const node = document.querySelector(`[data-stat="${key}"]`);
      node.textContent = value;
      const box = node.closest(".stat");
      if (box.hasAttribute("data-bad-when-positive")) box.classList.toggle("bad", value !== "0");
    }
  }

  // An inline error box (an element or its id): `text` shown, or the box hidden when empty.
  function showError(box, text) {
    const node = typeof box === "string" ? document.getElementById(box) : box;
    node.textContent = text || "";
    node.hidden = !text;
  }

  // The pager of a table paged in the browser (ids <name>-pager, -page, -prev, -next, from
  // frontend/_pager.html). rows(list) keeps the first row shown inside the list, says which
  // rows are shown, enables the buttons and returns this page's rows; the buttons move a page
  // and call onChange (the script renders again). reset() goes back to the first page.
  function pager(name, size, onChange) {
    const part = (which) => document.getElementById(`${name}-${which}`);
    const self = {
      first: 0,
      reset() { self.first = 0; },
      rows(list) {
        if (self.first >= list.length) self.first = Math.max(0, Math.floor((list.length - 1) / size) * size);
        const start = self.first;
        part("page").textContent = list.length
          ? `${fmt.num(start + 1)}–${fmt.num(Math.min(start + size, list.length))} of ${fmt.num(list.length)}` : "";
        part("prev").disabled = start === 0;
        part("next").disabled = start + size >= list.length;
        part("pager").hidden = list.length <= size;
        return list.slice(start, start + size);
      },
    };
    part("prev").addEventListener("click", () => { self.first = Math.max(0, self.first - size); onChange(); });
    part("next").addEventListener("click", () => { self.first += size; onChange(); });
    return self;
  }

  // [data-run="<job>"] buttons inside `container` queue that job (POST /api/jobs/) once the
  // user confirms the text `describe(button)` gives.
  function runButtons(container, describe) {
    container.addEventListener("click", (event) => {
      const button = event.target.closest("[data-run]");
      if (!button) return;
      const name = button.dataset.run;
      act({
        confirm: { title: `Run ${name} now`, message: describe(button), confirmLabel: "Run now" },
        run: () => api("POST", "/api/jobs/", { name }),
        done: (job) => `Job ${job.id} (${job.name}) queued`,
      });
    });
  }

  // Leave for `url` and say `text` there: a toast shown just before a navigation would be
  // gone with the page, so it is handed over in sessionStorage and shown by the next page.
  const FLASH = "weir.flash";
  function go(url, text) {
    if (text) sessionStorage.setItem(FLASH, text);
    window.location.href = url;
  }
  const flashed = sessionStorage.getItem(FLASH);
  if (flashed) {
    sessionStorage.removeItem(FLASH);
    toast(flashed, "ok");
  }

  window.Weir = {
    api, act, confirm, toast, live, fmt, esc, chart, data, cookie, stats, runButtons, pager,
    showError, go,
  };
})();
