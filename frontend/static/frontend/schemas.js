/* Schemas pages. The server renders everything; this script only
 * - filters the subject list by name and type (/schemas/), and
 * - runs the subject page's "Test compatibility" box (operators): the test calls
 *   POST /schema-registry/compatibility/subjects/<s>/versions/latest?verbose=true and shows
 *   the verdict and messages; Register (POST /schema-registry/subjects/<s>/versions) is
 *   enabled only while the text and type are those that tested compatible. */
(function () {
  "use strict";

  // -- the subject list -----------------------------------------------------------------
  const table = document.getElementById("subjects-table");
  if (table) {
    const search = document.getElementById("subject-search");
    const type = document.getElementById("subject-type");
    const rows = [...table.querySelectorAll("tbody tr[data-subject]")];
    const noMatch = table.querySelector("tr.no-match");
    const filter = () => {
      const needle = search.value.trim().toLowerCase();
      let shown = 0;
      for (const row of rows) {
        const visible = (!needle || row.dataset.subject.toLowerCase().includes(needle))
          && (!type.value || row.dataset.type === type.value);
        row.hidden = !visible;
        if (visible) shown += 1;
      }
      if (rows.length) noMatch.hidden = shown > 0;
      document.getElementById("subject-count").textContent =
        `${Weir.fmt.num(shown)} subject${shown === 1 ? "" : "s"}${needle || type.value ? " match" : ""}`;
    };
    search.addEventListener("input", filter);
    type.addEventListener("change", filter);
    filter();
  }

  // -- test compatibility, then register (operators) ------------------------------------
  const form = document.getElementById("compat-form");
  if (!form) return;
  const subject = encodeURIComponent(form.dataset.subject);
  const text = document.getElementById("compat-schema");
  const schemaType = document.getElementById("compat-type");
  const register = document.getElementById("compat-register");
  const result = document.getElementById("compat-result");
  const verdict = document.getElementById("compat-verdict");
  const messages = document.getElementById("compat-messages");
  let tested = null; // the body that last tested compatible

  const body = () => ({ schema: text.value, schemaType: schemaType.value });
  const same = (a, b) => a && b && a.schema === b.schema && a.schemaType === b.schemaType;

  function show(ok, headline, lines) {
    result.hidden = false;
    verdict.textContent = headline;
    verdict.className = ok ? "ok" : "bad";
    messages.innerHTML = (lines || []).map((m) => `<li>${Weir.esc(m)}</li>`).join("");
  }

  // Any edit after a test makes the verdict stale: Register waits for a new test.
  const stale = () => { register.disabled = !same(tested, body()); };
  text.addEventListener("input", stale);
  schemaType.addEventListener("change", stale);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const sent = body();
    tested = null;
    register.disabled = true;
    try {
      const answer = await Weir.api(
        "POST", `/schema-registry/compatibility/subjects/${subject}/versions/latest?verbose=true`, sent);
      if (answer.is_compatible) {
        tested = sent;
        show(true, "Compatible: this schema can be registered.", answer.messages);
      } else {
        show(false, "Incompatible with the latest version.", answer.messages);
      }
    } catch (error) { // 422: the schema itself is invalid
      show(false, "Invalid schema.", [error.message]);
    }
    stale();
  });

  register.addEventListener("click", async () => {
    const sent = body();
    if (!same(tested, sent)) return;
    register.disabled = true;
    const answer = await Weir.act({
      run: () => Weir.api("POST", `/schema-registry/subjects/${subject}/versions`, sent),
      done: (r) => `Registered as schema id ${r.id}`,
    });
    if (answer) location.assign(location.pathname); // the new version, selected and diffed
    else stale();
  });
})();
