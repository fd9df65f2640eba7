// CPU map details and Find highlighting (issue 10 pt 2, issue 11 "Find", issue 21 pt 7).
// When nothing is pointed at or pinned, the map shows the answer on the page: the CPUs the
// pods a Find matched hold (#pods-list data-lit), else where the last submission's admitted
// or would-be-admitted pods were placed (.placement data-cpus under the admission form).
// A CPU cell is one element: data-cpu, data-pool, data-owner, data-numa (and data-tag); its
// hover text is made here from those and the legend, not repeated in the markup. Pointing at
// a pod row or a legend entry lights its CPUs (data-cpus) on the map; a click pins it (Escape
// or a second click lets go). A click on a CPU leads to its owner's page. Everything is
// delegated from the document, so maps and tables swapped in by htmx work the same.
(function () {
  "use strict";
  var POOL_TEXT = {
    "reserved": "reserved (kubelet reservedSystemCPUs / system)",
    "node-shared": "node shared pool",
    "pod-shared": "pod shared pool",
    "exclusive": "exclusive"
  };
  var pinned = null;

  function parseCpus(text) {
    var out = new Set();
    (text || "").split(",").forEach(function (part) {
      var bounds = part.trim().split("-");
      if (!bounds[0]) return;
      var lo = parseInt(bounds[0], 10), hi = bounds.length > 1 ? parseInt(bounds[1], 10) : lo;
      for (var c = lo; c <= hi; c++) out.add(String(c));
    });
    return out;
  }

  function legendEntry(map, owner) {
    var items = map.querySelectorAll(".legend-item[data-owner]");
    for (var i = 0; i < items.length; i++) {
      if (items[i].getAttribute("data-owner") === owner) return items[i];
    }
    return null;
  }

  function describe(cell) {
    var map = cell.closest(".cpu-map");
    var d = cell.dataset, parts = ["CPU id " + d.cpu];
    var entry = map && legendEntry(map, d.owner);
    var label = entry && entry.querySelector("a, .legend-label");
    if (d.pool === "exclusive" || d.pool === "pod-shared") {
      parts.push(POOL_TEXT[d.pool] + " · " + (label ? label.textContent : d.owner));
      var iso = entry && entry.getAttribute("data-isolation");
      if (iso) parts.push("isolation " + iso);
    } else {
      parts.push(POOL_TEXT[d.pool] || d.pool);
    }
    var core = cell.closest("[data-core]"), socket = cell.closest("[data-socket]");
    if (core) parts.push("core " + core.getAttribute("data-core"));
    parts.push("NUMA node " + d.numa);
    if (socket) parts.push("socket " + socket.getAttribute("data-socket"));
    if (d.owner.indexOf("/") >= 0 && entry) parts.push("click for its owner");
    return parts.join(" · ");
  }

  function lightCpus(text) {
    var wanted = parseCpus(text);
    document.querySelectorAll(".cpu-map").forEach(function (map) {
      var cells = map.querySelectorAll(".cpu[data-owner]");
      if (!cells.length) return;
      map.classList.add("highlighting");
      cells.forEach(function (cell) {
        cell.classList.toggle("hl", wanted.has(cell.getAttribute("data-cpu")));
      });
    });
  }

  // What the page answers when nothing is pointed at: a Find's pods, or the placements.
  function standing() {
    var found = document.querySelector("#pods-list[data-lit]");
    if (found && found.getAttribute("data-lit")) return found.getAttribute("data-lit");
    var placed = document.querySelectorAll("#admit-result .placement[data-cpus]");
    var parts = [];
    placed.forEach(function (p) { if (p.getAttribute("data-cpus")) parts.push(p.getAttribute("data-cpus")); });
    return parts.join(",");
  }

  function light(source) {
    lightCpus(source.getAttribute("data-cpus"));
    source.classList.add("hl");
  }

  function unlight() {
    document.querySelectorAll(".cpu-map.highlighting").forEach(function (map) {
      map.classList.remove("highlighting");
      map.querySelectorAll(".cpu.hl").forEach(function (c) { c.classList.remove("hl"); });
    });
    document.querySelectorAll("tr.hl, .legend-item.hl").forEach(function (e) {
      e.classList.remove("hl");
    });
    if (pinned && document.contains(pinned)) { light(pinned); return; }
    var answer = standing();
    if (answer) lightCpus(answer);
  }

  function sourceOf(target) {
    return target.closest ? target.closest("tr[data-cpus], .legend-item[data-cpus], .placement[data-cpus]") : null;
  }

  document.addEventListener("mouseover", function (ev) {
    var cell = ev.target.closest && ev.target.closest(".cpu-map .cpu[data-owner]");
    if (cell) {
      if (!cell.title) cell.title = describe(cell);
      return;
    }
    var source = sourceOf(ev.target);
    if (source && source !== pinned) { unlight(); light(source); }
  });
  document.addEventListener("mouseout", function (ev) {
    var source = sourceOf(ev.target);
    if (source && !source.contains(ev.relatedTarget)) unlight();
  });
  document.addEventListener("focusin", function (ev) {
    var source = sourceOf(ev.target);
    if (source) { unlight(); light(source); }
  });

  function pin(source) {
    if (pinned) pinned.classList.remove("pinned");
    pinned = pinned === source ? null : source;
    if (pinned) pinned.classList.add("pinned");
    unlight();
    if (pinned) light(pinned);
  }

  function openOwner(cell) {
    var map = cell.closest(".cpu-map");
    var entry = map && legendEntry(map, cell.getAttribute("data-owner"));
    var link = entry && entry.querySelector("a[href]");
    if (link && cell.getAttribute("data-owner").indexOf("/") >= 0) {
      window.location.assign(link.href);
      return true;
    }
    return false;
  }

  document.addEventListener("click", function (ev) {
    var cell = ev.target.closest && ev.target.closest(".cpu-map .cpu[data-owner]");
    if (cell) { openOwner(cell); return; }
    if (ev.target.closest("a, button, input, select, textarea, summary")) return;
    var source = sourceOf(ev.target);
    if (source) pin(source);
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && pinned) { pin(pinned); return; }
    // cpu-map-keys.js already opens a focused cell's owner (it clicks the cell)
    if (ev.key === "Enter" && !ev.defaultPrevented) {
      var cell = ev.target.closest && ev.target.closest(".cpu-map .cpu[data-owner]");
      if (cell && openOwner(cell)) ev.preventDefault();
    }
  });
  // A swap that removes the pinned row (Find, paging, an admission) lets go of it.
  document.addEventListener("htmx:afterSwap", function () {
    if (pinned && !document.contains(pinned)) pinned = null;
    unlight();
  });
  // Out-of-band swaps (the map after an admission) land by the settle: show the answer again.
  document.addEventListener("htmx:afterSettle", function () {
    if (!pinned) unlight();
  });
  // A page that opens with an answer (a Find in the URL, a submission's placements) shows it.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", unlight);
  } else {
    unlight();
  }
})();
