// Live updates for the dashboard: when the server says something changed, the page reads itself again
// and swaps in its live region. Without JavaScript the page is whole; reloading it shows the same.
(function () {
  "use strict";
  var url = document.body.getAttribute("data-events");
  if (!url || !window.EventSource || !window.fetch) return;
  var status = document.getElementById("live-status");
  var busy = false, again = false;

  function editing() {
    var el = document.activeElement;
    return el && el.closest && el.closest("form") && el.closest("[data-live]");
  }

  function refresh() {
    if (busy) { again = true; return; }
    if (editing()) return; // never pull a form from under the keyboard
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (answer) { return answer.ok ? answer.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-live]");
        var here = document.querySelector("[data-live]");
        if (fresh && here) {
          here.replaceWith(fresh);
          if (status) status.textContent = "Updated " + new Date().toLocaleTimeString();
        }
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }

  var source = new EventSource(url);
  source.addEventListener("changed", refresh);
  document.body.setAttribute("data-live-ready", "1");
  source.addEventListener("ready", function () { document.body.setAttribute("data-live-state", "open"); });
})();
