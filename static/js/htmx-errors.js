// A refused htmx request replaces its result area with the error (issue 21 point 1).
// htmx swaps only 2xx answers by default, so a 413 upload or a 503 fleet fit left the previous
// answer on screen. Every non-2xx answer to an htmx request is swapped here instead: the server
// answers htmx requests with the error fragment (templates/errors/_error.html, from
// app/web/errors.py: status, reason, message, field), and it goes *inside* the request's target
// so the target (and its id) stays for the next try. When the answer is not HTML (a proxy's
// page, an empty body) or the request never got an answer, the same box is built here.
(function () {
  "use strict";

  function box(status, reason, message) {
    var section = document.createElement("section");
    section.className = "error-box";
    section.id = "error";
    section.setAttribute("role", "alert");
    section.dataset.status = String(status);
    section.dataset.reason = reason;
    var h = document.createElement("h1");
    h.textContent = status ? status + " · " + reason : reason;
    var p = document.createElement("p");
    p.className = "error-message";
    p.textContent = message;
    section.appendChild(h);
    section.appendChild(p);
    return section;
  }

  function isErrorFragment(text) {
    return /class="error-box/.test(text || "");
  }

  document.addEventListener("htmx:beforeSwap", function (ev) {
    var d = ev.detail, xhr = d.xhr;
    if (!xhr || xhr.status < 400) return;
    var text = xhr.responseText || "";
    if (isErrorFragment(text) && !/^\s*<!doctype/i.test(text)) {
      d.serverResponse = text;
    } else {
      var reason = xhr.statusText || "Error";
      d.serverResponse = box(xhr.status, reason,
        "the server refused the request (HTTP " + xhr.status + ")").outerHTML;
    }
    // A target holding its form and its result (data-error-slot) keeps the form.
    var slot = d.target && d.target.querySelector("[data-error-slot]");
    if (slot) d.target = slot;
    d.shouldSwap = true;
    d.isError = false; // shown, so not also logged as an htmx error
    d.swapOverride = "innerHTML";
    d.selectOverride = null;
  });

  // No answer at all (connection reset while uploading, server away): say so in the target.
  function unanswered(ev, text) {
    var target = ev.detail.target;
    if (!target || !target.isConnected) return;
    target.replaceChildren(box(0, "NoAnswer", text));
  }
  document.addEventListener("htmx:sendError", function (ev) {
    unanswered(ev, "the server did not answer (the connection was closed or refused); " +
      "nothing on this page was changed by it");
  });
  document.addEventListener("htmx:timeout", function (ev) {
    unanswered(ev, "no answer in time; nothing on this page was changed by it");
  });
})();
