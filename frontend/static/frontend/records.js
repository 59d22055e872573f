/* How a record's key, value and header values are drawn, on every page that lists records
 * (messages.js, dlq.js). Weir.records.data(d) draws a rendered key or value (the shape
 * /api/topics/<t>/partitions/<p>/messages/ answers: format, text or hex/base64, size,
 * truncated, schema) in a frame with its format, schema badge and an expand button;
 * Weir.records.small(d) draws it inline, without the frame (keys, header values). */
(function () {
  "use strict";
  const { esc, fmt } = Weir;

  function data(d) {
    if (d == null) return '<span class="null">null</span>';
    const shown = d.format === "binary" ? d.hex : d.text;
    const long = shown.length > 600 || shown.split("\n").length > 8;
    // A Confluent-framed record decoded through the schema registry names its schema.
    const schema = d.schema
      ? `<span class="badge schema" title="schema id ${d.schema.id}">${esc(d.schema.type)} · ${esc(d.schema.subjects.join(", ") || "id " + d.schema.id)} (id ${d.schema.id})</span>`
      : "";
    const meta = `<div class="data-meta"><span class="badge fmt ${d.format}">${d.format}</span>${schema}
      <span>${fmt.bytes(d.size)}</span>${d.truncated ? "<span>(truncated)</span>" : ""}
      ${long ? '<button type="button" class="link expand">expand</button>' : ""}</div>`;
    if (d.format === "binary") {
      return `${meta}<div class="data"><pre class="hex">${esc(d.hex)}</pre>
        <details><summary>base64</summary><pre class="b64">${esc(d.base64)}</pre></details></div>`;
    }
    return `${meta}<div class="data"><pre class="${d.format}">${esc(d.text)}</pre></div>`;
  }

  function small(d) {
    // Keys and header values: text inline, binary as hex, without the frame.
    if (d == null) return '<span class="null">null</span>';
    if (d.format === "binary") return `<span class="mono" title="binary, ${d.size} bytes">0x${esc(d.hex.replaceAll(" ", ""))}</span>`;
    const title = d.schema ? ` title="${esc(d.schema.type)} schema id ${d.schema.id}"` : "";
    return `<span class="mono"${title}>${esc(d.text)}</span>`;
  }

  // A key: inline when it is short text, framed otherwise.
  function key(d) {
    return d && d.format !== "binary" && d.size < 200 ? small(d) : data(d);
  }

  // "expand" / "collapse" on long keys and values (any records table).
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.expand");
    if (!button) return;
    const box = button.closest(".data-meta").nextElementSibling;
    box.classList.toggle("expanded");
    button.textContent = box.classList.contains("expanded") ? "collapse" : "expand";
  });

  Weir.records = { data, small, key };
})();
