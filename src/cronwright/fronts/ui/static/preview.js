// The schedule form's live preview: as a cron expression, its zone or its calendars are typed, ask the
// server for the next firings (GET, a read) and show them. Without JavaScript the Preview button does it.
(function () {
  "use strict";
  var form = document.querySelector("form[data-preview]");
  if (!form || !window.fetch) return;
  var timer = null;
  function value(name) { var el = form.elements.namedItem(name); return el ? el.value : ""; }
  function ask() {
    var kind = form.querySelector("input[name=kind]:checked");
    if (kind && kind.value !== "cron") return;
    var query = new URLSearchParams({ cron: value("cron"), tz: value("tz"), exclude: value("exclude") });
    fetch(form.getAttribute("data-preview") + "?" + query.toString(), { credentials: "same-origin" })
      .then(function (answer) { return answer.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("preview");
        var here = document.getElementById("preview");
        if (fresh && here) here.replaceWith(fresh);
      })
      .catch(function () {});
  }
  form.querySelectorAll("[data-preview-field]").forEach(function (field) {
    field.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(ask, 300); });
  });
})();
