// Keyboard navigation and screen-reader names for the CPU maps (node, pod, history, topology).
// A roving tabindex: the whole map is one Tab stop; inside it the arrow keys move between
// hardware threads (left/right in P# order as drawn, up/down to the nearest cell of the row
// above or below), Home/End to the first/last CPU of the NUMA node, Ctrl+Home/End of the map,
// Page Up/Down to the previous/next NUMA node, Enter or Space opens the CPU's owner. Each cell
// gets an accessible name from its tooltip (or, where it has none, from its data attributes),
// so a screen reader says what the eye sees. The map's markup is left as the server drew it:
// this script only sets tabindex and aria-label, and runs again when a map is swapped in
// (an admission's out-of-band swap, a live refresh).
(function () {
  "use strict";
  var POOLS = {
    reserved: "reserved",
    "node-shared": "node shared pool",
    "pod-shared": "pod shared pool",
    exclusive: "exclusive",
  };
  var HELP =
    " Keyboard: Tab into the map, arrow keys move between CPUs, Home/End go to the first/last " +
    "CPU of the NUMA node, Page Up/Down to the previous/next NUMA node, Enter opens the owner.";
  var remembered = {}; // map id -> CPU id of the cell that holds the Tab stop

  function cellsOf(map) {
    return Array.prototype.slice.call(map.querySelectorAll("li.cpu[data-cpu]"));
  }

  function nameOf(cell) {
    var title = cell.getAttribute("title");
    if (title) return title;
    var d = cell.dataset;
    var parts = ["CPU " + d.cpu];
    if (d.numa) parts.push("NUMA node " + d.numa);
    if (POOLS[d.pool]) parts.push(POOLS[d.pool]);
    if (d.owner) parts.push(d.owner);
    return parts.join(" · ");
  }

  function setStop(map, cell) {
    var old = map.querySelector('li.cpu[tabindex="0"]');
    if (old && old !== cell) old.tabIndex = -1;
    cell.tabIndex = 0;
    remembered[map.id] = cell.dataset.cpu;
  }

  function move(map, from, to) {
    if (!to || to === from) return;
    setStop(map, to);
    to.focus();
  }

  // The cell of the next row below (dir 1) or above (-1) whose centre is nearest horizontally.
  function vertical(cells, from, dir) {
    var r = from.getBoundingClientRect();
    var cx = r.left + r.width / 2;
    var best = null;
    var bestRow = null;
    var bestDx = Infinity;
    cells.forEach(function (c) {
      var b = c.getBoundingClientRect();
      var below = dir > 0 ? b.top >= r.bottom - 1 : b.bottom <= r.top + 1;
      if (!below) return;
      var row = dir > 0 ? b.top : -b.bottom;
      var dx = Math.abs(b.left + b.width / 2 - cx);
      if (bestRow === null || row < bestRow - 1 || (Math.abs(row - bestRow) <= 1 && dx < bestDx)) {
        best = c;
        bestRow = row;
        bestDx = dx;
      }
    });
    return best;
  }

  function numaCells(cell) {
    var numa = cell.closest("[data-numa]:not(li)");
    return numa ? cellsOf(numa) : [];
  }

  function neighbourNuma(map, cell, dir) {
    var groups = Array.prototype.slice.call(map.querySelectorAll("section.numa"));
    var here = cell.closest("section.numa");
    var i = groups.indexOf(here) + dir;
    while (i >= 0 && i < groups.length) {
      var first = groups[i].querySelector("li.cpu[data-cpu]");
      if (first) return first;
      i += dir;
    }
    return null;
  }

  function onKey(map, e) {
    var cell = e.target.closest("li.cpu[data-cpu]");
    if (!cell || !map.contains(cell)) return;
    var cells = cellsOf(map);
    var i = cells.indexOf(cell);
    var target = null;
    switch (e.key) {
      case "ArrowRight": target = cells[i + 1]; break;
      case "ArrowLeft": target = cells[i - 1]; break;
      case "ArrowDown": target = vertical(cells, cell, 1); break;
      case "ArrowUp": target = vertical(cells, cell, -1); break;
      case "Home": target = e.ctrlKey ? cells[0] : numaCells(cell)[0]; break;
      case "End": {
        var group = e.ctrlKey ? cells : numaCells(cell);
        target = group[group.length - 1];
        break;
      }
      case "PageDown": target = neighbourNuma(map, cell, 1); break;
      case "PageUp": target = neighbourNuma(map, cell, -1); break;
      case "Enter":
      case " ": {
        var link = cell.querySelector("a[href]");
        e.preventDefault();
        if (link) link.click();
        else cell.click();
        return;
      }
      default: return;
    }
    e.preventDefault();
    move(map, cell, target);
  }

  function setup(map) {
    var cells = cellsOf(map);
    if (!cells.length) return;
    if (!map.id) map.id = "cpu-map-" + Math.random().toString(36).slice(2);
    var stop = null;
    var keep = remembered[map.id];
    cells.forEach(function (c) {
      c.tabIndex = -1;
      if (!c.hasAttribute("aria-label")) c.setAttribute("aria-label", nameOf(c));
      var link = c.querySelector("a[href]");
      if (link) link.tabIndex = -1; // one Tab stop per map, not one per CPU
      if (keep !== undefined && c.dataset.cpu === keep) stop = c;
    });
    // A pod's page starts on its own CPUs (the ones not dimmed).
    stop = stop || map.querySelector("li.cpu[data-cpu]:not(.dim)") || cells[0];
    stop.tabIndex = 0;
    if (!map.dataset.keys) {
      map.dataset.keys = "on";
      map.addEventListener("keydown", function (e) { onKey(map, e); });
      map.addEventListener("focusin", function (e) {
        var cell = e.target.closest && e.target.closest("li.cpu[data-cpu]");
        if (cell) setStop(map, cell);
      });
      var help = map.querySelector(".map-help");
      if (help && !help.querySelector(".keys-help")) {
        var span = document.createElement("span");
        span.className = "keys-help";
        span.textContent = HELP;
        help.appendChild(span);
      }
    }
  }

  function setupAll() {
    document.querySelectorAll(".cpu-map, .topology-map").forEach(setup);
  }

  setupAll();
  document.addEventListener("numascope:refreshed", setupAll);
  document.addEventListener("htmx:afterSettle", setupAll);
})();
