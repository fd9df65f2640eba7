// Live refresh of a node page (templates/fragments/_watch.html, app/services/watch.py).
// Every data-watch-interval seconds the node's change token is asked for with If-None-Match:
// a 304 means the page is still current ("updated N s ago" restarts); a new token means the
// page is fetched again and the regions named in data-watch-regions are swapped in place, so
// the scroll position, the admission form and anything typed stay as they are. Polling waits
// while the tab is hidden or the user paused it, and backs off while the server is away.
// Plain fetch rather than hx-trigger="every": htmx would swap a 304's empty body, and one
// check must be able to replace several regions of a page htmx fragments do not cover.
(function () {
  "use strict";
  var box = document.getElementById("watch");
  if (!box || !window.fetch || !window.DOMParser) return;

  var url = box.dataset.watchUrl;
  var token = box.dataset.watchToken || "";
  var interval = Math.max(200, parseFloat(box.dataset.watchInterval || "5") * 1000);
  var regions = (box.dataset.watchRegions || "").split(/\s+/).filter(Boolean);
  var stateEl = box.querySelector(".watch-state");
  var ageEl = box.querySelector(".watch-age");
  var toggle = box.querySelector(".watch-toggle");
  var announce = box.querySelector("[data-watch-announce]");
  var confirmedAt = Date.now(); // when the page was last known to show the node as it is
  var paused = false;
  var stopped = false;
  var failures = 0;
  var timer = null;
  var running = false;
  var quiet = false; // the next change is this page's own (an htmx form it sent)

  function ago(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 2) return "just now";
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    return Math.floor(s / 3600) + " h ago";
  }

  function tick() {
    ageEl.textContent = "updated " + ago(Date.now() - confirmedAt);
  }

  function setState(state, text) {
    box.dataset.state = state;
    stateEl.textContent = text;
  }

  // An observed node's "Observed at": each answered check observed the node (the server
  // re-observes when its last observation is older than 2 s), so the time moves on with it.
  function observedNow() {
    var t = document.getElementById("observed-at");
    if (!t) return;
    var iso = new Date().toISOString().slice(0, 19) + "Z";
    t.dateTime = iso;
    t.textContent = iso.replace("T", " ").replace("Z", " UTC");
  }

  function liveText() {
    var changed = box.dataset.changedAt;
    return changed ? "Live · changed at " + changed : "Live";
  }

  function schedule(delay) {
    clearTimeout(timer);
    timer = null;
    if (!stopped && !paused && !document.hidden) timer = setTimeout(check, delay);
  }

  function clock(date) {
    return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  }

  // The element to focus again after a swap: the same CPU cell, or the same id.
  function focusKey(region) {
    var el = document.activeElement;
    if (!el || !region.contains(el)) return null;
    var cell = el.closest("[data-cpu]");
    if (cell) return '[data-cpu="' + cell.dataset.cpu + '"]';
    return el.id ? "#" + CSS.escape(el.id) : null;
  }

  // What the user typed or chose in a region's fields (a filter, a search box) is kept across
  // a swap and applied again (an "input" event, which is what such fields listen to).
  function typedFields(region) {
    var out = [];
    region.querySelectorAll("input[id], input[name], select[id], select[name], textarea[id], textarea[name]").forEach(function (f) {
      var changed = f.type === "checkbox" || f.type === "radio" ? f.checked !== f.defaultChecked : f.value !== f.defaultValue;
      if (f.tagName === "SELECT") changed = Array.prototype.some.call(f.options, function (o) { return o.selected !== o.defaultSelected; });
      if (f.type === "radio" && !f.id) return; // a group's member is known by its id only
      if (changed) out.push({ key: f.id ? "#" + CSS.escape(f.id) : '[name="' + CSS.escape(f.name) + '"]', value: f.value, checked: f.checked });
    });
    return out;
  }

  function restoreFields(region, typed) {
    typed.forEach(function (t) {
      var f = region.querySelector(t.key);
      if (!f) return;
      if (f.type === "checkbox" || f.type === "radio") f.checked = t.checked;
      else f.value = t.value;
      f.dispatchEvent(new Event("input", { bubbles: true }));
    });
  }

  var refocus = []; // [region, selector] pairs to focus again once the swap is announced

  function swap(doc, flash) {
    var swapped = [];
    refocus = [];
    regions.forEach(function (id) {
      var old = document.getElementById(id);
      var fresh = doc.getElementById(id);
      if (!old || !fresh) return;
      var key = focusKey(old);
      // Disclosures the user opened stay open.
      old.querySelectorAll("details[open][id]").forEach(function (d) {
        var twin = fresh.querySelector("#" + CSS.escape(d.id));
        if (twin) twin.open = true;
      });
      var typed = typedFields(old);
      var node = document.importNode(fresh, true);
      old.replaceWith(node);
      restoreFields(node, typed);
      if (window.htmx) window.htmx.process(node);
      if (key) refocus.push([node, key]);
      if (flash) {
        node.classList.add("watch-changed");
        setTimeout(function () { node.classList.remove("watch-changed"); }, 2000);
      }
      swapped.push(id);
    });
    return swapped;
  }

  function reload() {
    return fetch(location.pathname + location.search, {
      headers: { Accept: "text/html" },
      cache: "no-store",
      credentials: "same-origin",
    }).then(function (r) {
      // A pod's page after the pod left the node: 404, or a redirect to its rejection.
      if (r.status === 404 || r.redirected) { stopped = true; throw new Error("page gone"); }
      if (!r.ok) throw new Error(r.status === 503 ? "unavailable" : "HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.getElementById("watch");
      var own = quiet;
      // The reload that shows the own change ends the quiet spell, even when the check that
      // asked for it had started before the page's own request (so it was not "its turn").
      if (own) quiet = false;
      var swapped = swap(doc, !own);
      // The fetched page's own token was read before its view: never newer than what it shows.
      if (fresh && fresh.dataset.watchToken) token = fresh.dataset.watchToken;
      box.dataset.watchToken = token;
      if (!own) {
        var at = clock(new Date());
        box.dataset.changedAt = at;
        announce.textContent = "The node changed; the page was updated at " + at + ".";
      }
      // Other scripts (the map's keyboard support) set the new regions up first, then the
      // focus goes back where it was.
      document.dispatchEvent(new CustomEvent("numascope:refreshed", { detail: { regions: swapped } }));
      refocus.forEach(function (pair) {
        var target = pair[0].matches(pair[1]) ? pair[0] : pair[0].querySelector(pair[1]);
        if (target) target.focus({ preventScroll: true });
      });
    });
  }

  function check() {
    if (running) return;
    running = true;
    var ownTurn = quiet; // the check after an own change ends the quiet spell, change or not
    fetch(url, {
      headers: { "If-None-Match": '"' + token + '"', Accept: "application/json" },
      cache: "no-store",
      credentials: "same-origin",
    }).then(function (r) {
      if (r.status === 304) return null;
      if (r.status === 404) { stopped = true; throw new Error("gone"); }
      if (!r.ok) throw new Error(r.status === 503 ? "unavailable" : "HTTP " + r.status);
      return r.json();
    }).then(function (body) {
      if (body && body.token !== token) return reload();
      return null;
    }).then(function () {
      failures = 0;
      confirmedAt = Date.now();
      observedNow();
      if (!paused) setState("live", liveText());
    }).catch(function (err) {
      failures += 1;
      if (paused) setState("paused", "Paused");
      else if (err.message === "page gone") setState("gone", "This pod is no longer on the node; updates stopped");
      else if (err.message === "gone") setState("gone", "This node no longer exists; updates stopped");
      else if (err.message === "unavailable") setState("error", "The node cannot be read now; retrying");
      else setState("error", "Not updating: the server does not answer; retrying");
    }).then(function () {
      running = false;
      if (ownTurn) quiet = false;
      tick();
      schedule(failures ? Math.min(60000, interval * Math.pow(2, Math.min(failures, 8))) : interval);
    });
  }

  toggle.addEventListener("click", function () {
    paused = !paused;
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
    toggle.textContent = paused ? "Resume updates" : "Pause updates";
    if (paused) {
      clearTimeout(timer);
      setState("paused", "Paused");
    } else {
      setState("live", liveText());
      check();
    }
  });

  // The page's own admissions and removals (htmx) already show their result: the change they
  // cause is picked up at once and swapped in without the "changed" flash and announcement.
  document.addEventListener("htmx:afterRequest", function (e) {
    var verb = e.detail && e.detail.requestConfig && e.detail.requestConfig.verb;
    if (verb && verb.toLowerCase() !== "get" && e.detail.successful) {
      quiet = true;
      schedule(50);
    }
  });

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) clearTimeout(timer);
    else if (!paused && !stopped) check();
  });

  box.hidden = false;
  setState("live", "Live");
  tick();
  setInterval(tick, 1000);
  schedule(interval);
})();
