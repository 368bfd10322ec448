// The catalog browser's only script: zoom, pan and path highlighting on the upgrade graph.
// Everything else works without it.
"use strict";
(function () {
  function ready(fn) {
    if (document.readyState !== "loading") fn(); else document.addEventListener("DOMContentLoaded", fn);
  }
  ready(function () {
    var view = document.getElementById("graph-view");
    if (!view) return;
    var svg = view.querySelector("svg");
    if (!svg) return;
    var tools = document.querySelector(".graph-tools");
    if (tools) tools.hidden = false;
    view.classList.add("interactive");
    var w = svg.viewBox.baseVal.width, h = svg.viewBox.baseVal.height;
    var box = { x: 0, y: 0, w: w, h: h };
    svg.setAttribute("width", "100%");
    svg.setAttribute("height", Math.min(h, window.innerHeight * 0.75));
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    function apply() { svg.setAttribute("viewBox", box.x + " " + box.y + " " + box.w + " " + box.h); }
    function zoom(f, cx, cy) {
      cx = cx === undefined ? box.x + box.w / 2 : cx;
      cy = cy === undefined ? box.y + box.h / 2 : cy;
      box.x = cx - (cx - box.x) * f; box.y = cy - (cy - box.y) * f;
      box.w *= f; box.h *= f; apply();
    }
    // Start readable: the graph opens at its top-left corner at natural size (one SVG unit per
    // pixel); "Fit" shows all of it, "Reset" comes back.
    function natural() {
      var r = svg.getBoundingClientRect();
      box = { x: 0, y: 0, w: r.width || view.clientWidth, h: r.height || Math.min(h, window.innerHeight * 0.75) };
      apply();
    }
    natural();
    document.querySelectorAll("[data-zoom]").forEach(function (b) {
      b.addEventListener("click", function () {
        var z = b.getAttribute("data-zoom");
        if (z === "in") zoom(0.8); else if (z === "out") zoom(1.25);
        else if (z === "fit") { box = { x: 0, y: 0, w: w, h: h }; apply(); }
        else natural();
      });
    });
    view.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect();
      var cx = box.x + (e.clientX - r.left) / r.width * box.w;
      var cy = box.y + (e.clientY - r.top) / r.height * box.h;
      zoom(e.deltaY < 0 ? 0.85 : 1.18, cx, cy);
    }, { passive: false });
    var drag = null;
    view.addEventListener("pointerdown", function (e) {
      if (e.target.closest && e.target.closest(".node")) return;
      drag = { x: e.clientX, y: e.clientY, bx: box.x, by: box.y };
      view.setPointerCapture(e.pointerId);
    });
    view.addEventListener("pointermove", function (e) {
      if (!drag) return;
      var r = svg.getBoundingClientRect();
      box.x = drag.bx - (e.clientX - drag.x) / r.width * box.w;
      box.y = drag.by - (e.clientY - drag.y) / r.height * box.h;
      apply();
    });
    view.addEventListener("pointerup", function () { drag = null; });
    // Highlight every upgrade path through a bundle: what leads to it and where it leads.
    var edges = Array.prototype.slice.call(svg.querySelectorAll(".edge"));
    function walk(start, from, to, seen) {
      var todo = [start];
      while (todo.length) {
        var n = todo.pop();
        edges.forEach(function (e) {
          if (e.getAttribute(from) === n) {
            e.classList.add("hl");
            var next = e.getAttribute(to);
            if (!seen[next]) { seen[next] = true; todo.push(next); }
          }
        });
      }
    }
    function highlight(node) {
      clear();
      var name = node.getAttribute("data-name");
      var seen = {}; seen[name] = true;
      walk(name, "data-from", "data-to", seen);
      walk(name, "data-to", "data-from", seen);
      svg.querySelectorAll(".node").forEach(function (n) {
        if (seen[n.getAttribute("data-name")]) n.classList.add("hl");
      });
      svg.classList.add("highlighting");
    }
    function clear() {
      svg.classList.remove("highlighting");
      svg.querySelectorAll(".hl").forEach(function (x) { x.classList.remove("hl"); });
    }
    svg.querySelectorAll(".node").forEach(function (n) {
      n.addEventListener("mouseenter", function () { highlight(n); });
      n.addEventListener("focus", function () { highlight(n); });
      n.addEventListener("mouseleave", clear);
      n.addEventListener("blur", clear);
    });
  });
})();
