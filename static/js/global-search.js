// "/" on any page opens the dashboard's search (issue 21 "Beyond", k9s-style; app/services/search.py),
// unless one is typing: in a field, the key is the field's. On the search page it focuses the box.
(function () {
  "use strict";
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
    var t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    ev.preventDefault();
    var box = document.getElementById("global-q");
    if (box) { box.focus(); box.select(); return; }
    var root = document.querySelector("a.brand");
    var base = root ? root.getAttribute("href").replace(/\/$/, "") : "";
    window.location.assign(base + "/search");
  });
})();
