/* Messages of one topic: browse a partition (user-started API calls), live tail over
 * /ws/ui/topics/<t>/partitions/<p>/tail/, a chunked search with a progress bar, and (for
 * operators) a produce form posting to the REST proxy. */
(function () {
  "use strict";
  const { esc, fmt } = Weir;
  const cluster = document.body.dataset.cluster;
  const page = Weir.data("messages-data");
  const topic = page.topic;
  const apiBase = `/api/topics/${encodeURIComponent(topic)}/partitions`;
  const $ = (id) => document.getElementById(id);
  const MAX_TAIL_ROWS = 500;
  const MAX_MATCHES = 500;

  // -- rendering -----------------------------------------------------------------------------
  const { data, small, key } = Weir.records;

  function row(r, fresh) {
    const headers = r.headers.length
      ? `<ul class="headers">${r.headers.map((h) => `<li><span class="hk">${esc(h.key)}</span>: ${small(h.value)}</li>`).join("")}</ul>`
      : '<span class="muted">–</span>';
    return `<tr data-offset="${r.offset}" class="${fresh ? "fresh" : ""}">
      <td class="num offset">${r.offset}</td>
      <td class="ts">${fmt.time(r.timestamp)}<span class="muted">${esc(r.timestamp_type || "")}</span></td>
      <td class="key">${key(r.key)}</td>
      <td class="value">${data(r.value)}</td>
      <td class="hdrs">${headers}</td>
    </tr>`;
  }

  function emptyRow(text) { return `<tr><td colspan="5" class="empty">${esc(text)}</td></tr>`; }

  const { showError } = Weir;

  // -- partitions ----------------------------------------------------------------------------
  const partitionSelect = $("browse-partition");
  partitionSelect.innerHTML = page.partitions.map((p) => `<option value="${p.partition}">${p.partition}</option>`).join("");
  partitionSelect.value = String(page.partition);
  if (!partitionSelect.value) partitionSelect.value = "0";
  const producePartition = $("produce-partition");
  if (producePartition) {
    producePartition.innerHTML += page.partitions.map((p) => `<option value="${p.partition}">${p.partition}</option>`).join("");
  }
  const partition = () => Number(partitionSelect.value);

  // -- browse --------------------------------------------------------------------------------
  const fromSelect = $("browse-from");
  const recordsBody = document.querySelector("#records-table tbody");
  let last = null; // the last page loaded: {start, end, log_start_offset, high_watermark, order}

  function syncFromFields() {
    document.querySelectorAll("#browse-form [data-when]").forEach((node) => {
      node.hidden = node.dataset.when !== fromSelect.value;
    });
  }
  fromSelect.addEventListener("change", syncFromFields);

  function query() {
    const params = new URLSearchParams({ order: $("browse-order").value, limit: $("browse-limit").value });
    const from = fromSelect.value;
    if (from === "offset") {
      const offset = $("browse-offset").value.trim();
      if (offset === "") throw new Error("enter the offset to start from");
      params.set("offset", offset);
    } else if (from === "timestamp") {
      const local = $("browse-timestamp").value;
      if (!local) throw new Error("choose the date and time to start from");
      const moment = new Date(local);
      if (Number.isNaN(moment.getTime())) throw new Error(`${local} is not a valid date and time`);
      params.set("timestamp", moment.toISOString());
    } else {
      params.set("from", from);
    }
    return params;
  }

  function describe(result) {
    const { log_start_offset: lo, high_watermark: hi } = result;
    const holds = hi > lo ? `offsets ${fmt.num(lo)}–${fmt.num(hi - 1)} (${fmt.num(hi - lo)} records)` : "empty";
    const shown = result.records.length
      ? `showing ${result.records.length} (${fmt.num(result.start)}–${fmt.num(result.end - 1)}), ${result.order} first`
      : "no records in this range";
    return `Partition ${result.partition}: ${holds} · ${shown}`;
  }

  async function load(params) {
    showError("browse-error", "");
    let search = params;
    try {
      search = search || query();
    } catch (error) {
      showError("browse-error", error.message);
      return;
    }
    $("browse-load").disabled = true;
    try {
      const result = await Weir.api("GET", `${apiBase}/${partition()}/messages/?${search}`);
      last = result;
      recordsBody.innerHTML = result.records.map((r) => row(r, false)).join("")
        || emptyRow("No records here yet. Produce one, or turn on the live tail.");
      $("browse-range").textContent = describe(result);
      updatePager();
      if (!$("search-end").value) $("search-end").placeholder = String(result.high_watermark);
      if (!$("search-start").value) {
        $("search-start").placeholder = String(Math.max(result.log_start_offset, result.high_watermark - page.max_search_range));
      }
    } catch (error) {
      showError("browse-error", error.message);
    } finally {
      $("browse-load").disabled = false;
    }
  }

  function updatePager() {
    const older = $("page-older");
    const newer = $("page-newer");
    older.disabled = !last || last.start <= last.log_start_offset;
    newer.disabled = !last || last.end >= last.high_watermark;
  }

  function goTo(offset) {
    fromSelect.value = "offset";
    $("browse-offset").value = String(offset);
    syncFromFields();
    load();
  }

  $("page-older").addEventListener("click", () => {
    const limit = Number($("browse-limit").value) || page.default_limit;
    if (last.order === "newest") goTo(last.start - 1);
    else goTo(Math.max(last.log_start_offset, last.start - limit));
  });
  $("page-newer").addEventListener("click", () => {
    const limit = Number($("browse-limit").value) || page.default_limit;
    if (last.order === "newest") goTo(Math.min(last.high_watermark, last.end - 1 + limit));
    else goTo(last.end);
  });

  $("browse-form").addEventListener("submit", (event) => { event.preventDefault(); load(); });
  partitionSelect.addEventListener("change", () => {
    const url = new URL(window.location.href);
    url.searchParams.set("partition", partitionSelect.value);
    history.replaceState(null, "", url);
    resetSearchRange();
    fromSelect.value = "end"; // another partition's offsets mean nothing here
    syncFromFields();
    load();
    if (tail) { stopTail(); startTail(); }
  });

  // -- live tail -----------------------------------------------------------------------------
  let tail = null;
  const tailStatus = $("tail-status");

  function startTail() {
    const p = partition();
    tailStatus.hidden = false;
    tailStatus.textContent = "Connecting…";
    tail = Weir.live(`/ws/ui/topics/${encodeURIComponent(topic)}/partitions/${p}/tail/`, (message) => {
      if (message.type === "error") {
        tailStatus.textContent = "";
        tailStatus.hidden = true;
        showError("browse-error", `Live tail: ${message.message}`);
        return;
      }
      if (message.type !== "tail" || message.partition !== partition()) return;
      tailStatus.textContent = `Live: partition ${message.partition}, next offset ${fmt.num(message.position)}`;
      if (!message.records.length) return;
      const empty = recordsBody.querySelector("td.empty");
      if (empty) empty.parentElement.remove();
      const newestFirst = $("browse-order").value === "newest";
      const fresh = message.records.filter((r) => !recordsBody.querySelector(`tr[data-offset="${r.offset}"]`));
      const html = (newestFirst ? [...fresh].reverse() : fresh).map((r) => row(r, true)).join("");
      recordsBody.insertAdjacentHTML(newestFirst ? "afterbegin" : "beforeend", html);
      while (recordsBody.rows.length > MAX_TAIL_ROWS) {
        recordsBody.deleteRow(newestFirst ? recordsBody.rows.length - 1 : 0);
      }
      if (last) {
        last.high_watermark = Math.max(last.high_watermark, message.position);
        const lo = last.log_start_offset;
        $("browse-range").textContent = `Partition ${message.partition}: offsets ${fmt.num(lo)}–`
          + `${fmt.num(message.position - 1)} (${fmt.num(message.position - lo)} records) · `
          + `showing ${recordsBody.rows.length}, ${newestFirst ? "newest" : "oldest"} first, with live records`;
        updatePager();
      }
    });
  }

  function stopTail() {
    if (tail) tail.close();
    tail = null;
    tailStatus.hidden = true;
  }

  $("tail-toggle").addEventListener("change", (event) => {
    if (event.target.checked) startTail();
    else stopTail();
  });

  // -- search --------------------------------------------------------------------------------
  let searching = null; // {stopped} of the search under way
  const bar = document.querySelector("#search-progress .progress");

  function resetSearchRange() {
    $("search-start").value = "";
    $("search-end").value = "";
  }

  function progress(scanned, total, text) {
    const percent = total > 0 ? Math.min(100, Math.round((scanned / total) * 100)) : 100;
    bar.firstElementChild.style.width = `${percent}%`;
    bar.setAttribute("aria-valuenow", String(percent));
    $("search-status").textContent = text || `${percent}% · scanned ${fmt.num(scanned)} / ${fmt.num(total)}`;
  }

  async function runSearch() {
    showError("search-error", "");
    const q = $("search-q").value;
    if (!q.trim()) { showError("search-error", "enter the text to search for"); return; }
    const field = $("search-field").value;
    const startText = $("search-start").value.trim();
    const endText = $("search-end").value.trim();
    const token = { stopped: false };
    searching = token;
    $("search-run").disabled = true;
    $("search-stop").disabled = false;
    $("search-progress").hidden = false;
    const matchesBody = document.querySelector("#matches-table tbody");
    matchesBody.innerHTML = "";
    $("matches-table").hidden = false;
    progress(0, 1, "Starting…");
    let next = startText === "" ? null : Number(startText);
    let end = endText === "" ? null : Number(endText);
    let first = null;
    let found = 0;
    let outcome = "";
    try {
      for (;;) {
        const params = new URLSearchParams({ q, field, chunk: String(page.search_chunk) });
        if (next != null) params.set("start", String(next));
        if (end != null) params.set("end", String(end));
        const chunk = await Weir.api("GET", `${apiBase}/${partition()}/messages/search/?${params}`);
        if (first == null) { first = chunk.start; end = chunk.end; }
        found += chunk.matches.length;
        matchesBody.insertAdjacentHTML("beforeend", chunk.matches.map((r) => row(r, false)).join(""));
        const scanned = (chunk.done ? end : chunk.next) - first;
        progress(scanned, end - first);
        if (chunk.done) { outcome = `Done: ${fmt.num(found)} match${found === 1 ? "" : "es"} in ${fmt.num(end - first)} offsets (${fmt.num(first)}–${fmt.num(end)})`; break; }
        if (token.stopped) { outcome = `Stopped at offset ${fmt.num(chunk.next)}: ${fmt.num(found)} matches so far`; break; }
        if (found >= MAX_MATCHES) { outcome = `Stopped after ${MAX_MATCHES} matches at offset ${fmt.num(chunk.next)}; narrow the range`; break; }
        next = chunk.next;
      }
      $("search-status").textContent += ` · ${outcome}`;
      if (!found) matchesBody.innerHTML = emptyRow("No matches.");
    } catch (error) {
      showError("search-error", error.message);
      if (!found) $("matches-table").hidden = true;
      if (first == null) $("search-progress").hidden = true;
    } finally {
      searching = null;
      $("search-run").disabled = false;
      $("search-stop").disabled = true;
    }
  }

  $("search-form").addEventListener("submit", (event) => { event.preventDefault(); runSearch(); });
  $("search-stop").addEventListener("click", () => { if (searching) searching.stopped = true; });

  // -- produce (operators) ------------------------------------------------------------------
  const produceForm = $("produce-form");
  if (produceForm) {
    const base64 = (text) => {
      let binary = "";
      new TextEncoder().encode(text).forEach((b) => { binary += String.fromCharCode(b); });
      return btoa(binary);
    };

    function record() {
      const body = {};
      const chosen = producePartition.value;
      if (chosen !== "") body.partition_id = Number(chosen);
      const key = $("produce-key").value;
      if (key !== "") body.key = { type: "STRING", data: key };
      const format = $("produce-format").value;
      const text = $("produce-value").value;
      if (text.trim() !== "") {
        if (format === "JSON") {
          try {
            body.value = { type: "JSON", data: JSON.parse(text) };
          } catch (error) {
            throw new Error(`the value is not valid JSON: ${error.message}`);
          }
        } else if (format === "BINARY") {
          body.value = { type: "BINARY", data: text.replace(/\s+/g, "") };
        } else {
          body.value = { type: "STRING", data: text };
        }
      }
      const headers = [];
      $("produce-headers").value.split("\n").map((l) => l.trim()).filter(Boolean).forEach((line, i) => {
        const at = line.indexOf("=");
        if (at <= 0) throw new Error(`header line ${i + 1} ("${line}") is not name=value`);
        headers.push({ name: line.slice(0, at).trim(), value: base64(line.slice(at + 1).trim()) });
      });
      if (headers.length) body.headers = headers;
      return body;
    }

    produceForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      showError("produce-error", "");
      $("produce-result").textContent = "";
      let body;
      try {
        body = record();
      } catch (error) {
        showError("produce-error", error.message);
        return;
      }
      const where = body.partition_id == null ? "a partition chosen by key" : `partition ${body.partition_id}`;
      const result = await Weir.act({
        confirm: { title: `Produce to ${topic}?`, message: `One ${$("produce-format").selectedOptions[0].text} record to ${where}.`, confirmLabel: "Produce" },
        run: async () => {
          try {
            return await Weir.api("POST", `/kafka/v3/clusters/${cluster}/topics/${encodeURIComponent(topic)}/records`, body);
          } catch (error) {
            showError("produce-error", error.message);
            throw error;
          }
        },
        done: (r) => `Written to partition ${r.partition_id} at offset ${r.offset}`,
      });
      if (!result) return;
      $("produce-result").textContent = `Written to partition ${result.partition_id} at offset ${result.offset}`;
      // Show it at once when the browser is on the end of that partition and not tailing.
      if (!tail && fromSelect.value === "end" && result.partition_id === partition()) load();
    });
  }

  syncFromFields();
  load();
})();
