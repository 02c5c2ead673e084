#include "report/html_assets.hpp"

namespace attnconv {

const char* const html_style = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 2em;color:#222;background:#fff}
h1{font-size:1.5em;margin:.6em 0 .2em}h2{font-size:1.2em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}
nav a{margin-right:1em}
.counts span{display:inline-block;padding:.15em .6em;margin:.15em .3em .15em 0;border-radius:3px;background:#eee}
.counts .pass{background:#d9f2d9}.counts .fail{background:#f8d0d0}.counts .error{background:#f6e0b0}
.banner{background:#f6e0b0;padding:.5em;border-radius:3px}
table{border-collapse:collapse}th,td{text-align:left;padding:.2em .5em;vertical-align:top}
table.kv{margin:.3em 1.5em .3em 0;font-size:.92em}table.kv caption{text-align:left;font-weight:600}
table.kv th{font-weight:500;color:#555}table.kv td{word-break:break-all}
pre.kv{columns:22em 4;column-gap:2em;margin:.3em 0;font-size:.88em;white-space:pre-wrap;word-break:break-all}
pre.kv b{font:600 1.05em system-ui,sans-serif;break-after:avoid}
.grid th,.grid td{border-bottom:1px solid #eee}
#cases{width:100%;table-layout:fixed}#cases tr.row>td{overflow-wrap:anywhere}#cases thead th{position:sticky;top:0;background:#f4f4f4;border-bottom:2px solid #ccc}
#cases th button{font:inherit;font-weight:600;border:0;background:none;cursor:pointer;padding:0}
#cases th[aria-sort=ascending] button::after{content:" \25B2"}#cases th[aria-sort=descending] button::after{content:" \25BC"}
#cases tr.row{border-top:1px solid #ddd}#cases tr.row:hover,#cases tr.row:focus{background:#eef4ff;outline:none}
#cases tr.row:focus{box-shadow:inset 3px 0 #1f77b4}
.js #cases tr.row{cursor:pointer}.js #cases>tbody:not(.open)>tr+tr{display:none}
#cases tr.row>td:nth-child(n+5){text-align:right;font-variant-numeric:tabular-nums}
#cases>tbody[data-status=pass]>tr.row>td:nth-child(3){color:#1a7f1a}
#cases>tbody[data-status=fail]>tr.row>td:nth-child(3){color:#c00;font-weight:600}
#cases>tbody[data-status=error]>tr.row>td:nth-child(3){color:#a60;font-weight:600}
#cases>tbody>tr+tr>td{padding:0 .5em .2em 1.5em}#cases>tbody>tr+tr summary{color:#666;font-size:.9em;cursor:pointer}
.js #cases>tbody>tr+tr summary{display:none}
.msg{white-space:pre-wrap;max-width:70em}.tables{display:flex;flex-wrap:wrap}
.figs svg,.sweeps svg{margin:.3em .6em .3em 0;border:1px solid #ddd;max-width:100%;height:auto}
svg text{font:11px sans-serif}svg .t{font-weight:600}svg .g{stroke:#e3e3e3}
#loaded{margin:.3em 0}#loaded summary{font-weight:600;cursor:pointer}
#controls{margin:.5em 0}#controls input{width:20em}
.findings li{margin:.3em 0}
code{font-size:.92em}
)css";

const char* const html_script = R"js(
(function () {
  "use strict";
  var table = document.getElementById("cases");
  if (!table) return;
  var bodies = Array.prototype.slice.call(table.tBodies);
  var controls = document.getElementById("controls");
  var text = document.getElementById("filter-text"), status = document.getElementById("filter-status");
  var shown = document.getElementById("shown");
  controls.hidden = false;
  bodies.forEach(function (body) {  // the rows open from the keyboard too
    body.rows[0].tabIndex = 0;
    body.rows[0].setAttribute("aria-expanded", "false");
  });

  function setOpen(body, open) {
    body.classList.toggle("open", open);
    body.rows[0].setAttribute("aria-expanded", open ? "true" : "false");
    body.querySelector("details").open = open;
  }
  table.addEventListener("click", function (e) {
    var row = e.target.closest("tr.row");
    if (row && !e.target.closest("a")) setOpen(row.parentNode, !row.parentNode.classList.contains("open"));
  });
  table.addEventListener("keydown", function (e) {
    if ((e.key === "Enter" || e.key === " ") && e.target.matches("tr.row")) {
      e.preventDefault();
      setOpen(e.target.parentNode, !e.target.parentNode.classList.contains("open"));
    }
  });
  function openTarget() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.parentNode === table) { setOpen(target, true); target.hidden = false; target.rows[0].focus(); }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  var headers = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(headers, function (th, column) {
    th.querySelector("button").addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending", numeric = th.hasAttribute("data-num");
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var keyed = bodies.map(function (body, index) {
        var cell = body.rows[0].cells[column];
        var key = numeric ? (cell.getAttribute("data-v") === "" ? NaN : parseFloat(cell.getAttribute("data-v")))
                          : cell.textContent.toLowerCase();
        return {body: body, key: key, index: index};
      });
      keyed.sort(function (a, b) {
        var an = numeric && isNaN(a.key), bn = numeric && isNaN(b.key);  // no value: last either way
        if (an || bn) return an === bn ? a.index - b.index : an ? 1 : -1;
        var order = a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
        return (ascending ? order : -order) || a.index - b.index;
      });
      var fragment = document.createDocumentFragment();
      bodies = keyed.map(function (k) { fragment.appendChild(k.body); return k.body; });
      table.appendChild(fragment);
    });
  });

  var haystacks = null;
  function filter() {
    if (!haystacks)
      haystacks = new Map(bodies.map(function (body) {
        return [body, (body.rows[0].textContent + " " + body.querySelector(".msg").textContent).toLowerCase()];
      }));
    var words = text.value.toLowerCase().split(/\s+/).filter(Boolean), wanted = status.value, count = 0;
    bodies.forEach(function (body) {
      var hay = haystacks.get(body);
      var keep = (!wanted || body.getAttribute("data-status") === wanted) &&
                 words.every(function (w) { return hay.indexOf(w) >= 0; });
      body.hidden = !keep;
      if (keep) ++count;
    });
    shown.textContent = count + " of " + bodies.length + " cases shown";
  }
  text.addEventListener("input", filter);
  status.addEventListener("change", filter);
  shown.textContent = bodies.length + " of " + bodies.length + " cases shown";
})();
)js";

}  // namespace attnconv
