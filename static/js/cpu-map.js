// CPU map details and Find highlighting (issue 10 pt 2, issue 11 "Find").
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

  function light(source) {
    var wanted = parseCpus(source.getAttribute("data-cpus"));
    document.querySelectorAll(".cpu-map").forEach(function (map) {
      var cells = map.querySelectorAll(".cpu[data-owner]");
      if (!cells.length) return;
      map.classList.add("highlighting");
      cells.forEach(function (cell) {
        cell.classList.toggle("hl", wanted.has(cell.getAttribute("data-cpu")));
      });
    });
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
    if (pinned && document.contains(pinned)) light(pinned);
  }

  function sourceOf(target) {
    return target.closest ? target.closest("tr[data-cpus], .legend-item[data-cpus]") : null;
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
})();
