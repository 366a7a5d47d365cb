/* irscope report, the diff page: one stage aligned by structure (compare/align.py), side by side, row by
   row. Changed tokens are marked inside a line, lines equal up to a renaming of their values are faded,
   instructions the scheduler moved are faded and marked ~, runs of equal lines are folded (a click opens
   them), and each row names the Python line it came from (map.json) on both sides. The stage's summary
   in words comes first. Like report.js: everything from DATA reaches the DOM as text only (textContent,
   text nodes), never as markup; no innerHTML. Runs before report.js, which calls IrscopeAligned. */
(function () {
  "use strict";
  function str(x) { return x === null || x === undefined ? "" : String(x); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  var KINDS = {equal: "eq", renamed: "ren", changed: "chg", removed: "del", added: "add", moved: "mov"};
  var MARKS = {equal: "", renamed: "~", changed: "|", removed: "<", added: ">", moved: "~"};

  /* a line's text with its changed ranges (sorted [start, end] pairs) in <mark>, as text nodes */
  function marked(td, text, ranges) {
    var pos = 0;
    (ranges || []).forEach(function (r) {
      var s = +r[0], e = +r[1];
      if (!(s >= pos && e > s && e <= text.length)) return;
      if (s > pos) td.appendChild(document.createTextNode(text.slice(pos, s)));
      td.appendChild(el("mark", "tok", text.slice(s, e)));
      pos = e;
    });
    if (pos < text.length) td.appendChild(document.createTextNode(text.slice(pos)));
  }
  function py(p) {
    var td = el("td", "py");
    if (p) { td.textContent = "py " + str(p[0]); td.title = str(p[0]) + ": " + str(p[1]); td.dataset.line = str(p[0]); }
    return td;
  }
  function row(r) {
    var tr = el("tr", "al " + (KINDS[r[0]] || ""));
    tr.dataset.kind = str(r[0]);
    tr.appendChild(py(r[7]));
    tr.appendChild(el("td", "no", str(r[1])));
    var a = el("td", "a"); marked(a, str(r[2]), r[5]); tr.appendChild(a);
    tr.appendChild(el("td", "mk", MARKS[r[0]] || ""));
    tr.appendChild(el("td", "no", str(r[3])));
    var b = el("td", "b"); marked(b, str(r[4]), r[6]); tr.appendChild(b);
    tr.appendChild(py(r[8]));
    return tr;
  }
  function fold(r) {
    var hidden = r[1] || [];
    var tr = el("tr", "al fold");
    var td = el("td", "", "⋯ " + hidden.length + " equal lines (click to show)");
    td.colSpan = 7;
    tr.appendChild(td);
    tr.addEventListener("click", function () {
      var parent = tr.parentNode;
      hidden.forEach(function (h) { parent.insertBefore(row(h), tr); });
      parent.removeChild(tr);
    });
    return tr;
  }
  window.IrscopeAligned = function (wrap, s) {
    var out = [];
    var words = s.words || [];
    if (words.length) {
      var ul = el("ul", "al-words");
      words.forEach(function (w) { ul.appendChild(el("li", "", w)); });
      out.push(ul);
    }
    out.push(el("p", "note", "+" + str(s.added) + " −" + str(s.removed) + " lines; " + str(s.renamed) +
      " renamed (faded)" + (s.moved ? "; " + str(s.moved) + " moved (faded, ~)" : "") + ", as said above" +
      ". Marked: the tokens that changed."));
    var table = el("table", "sbs aligned"), cols = el("colgroup"), body = el("tbody");
    table.dataset.stage = str(s.stage);
    ["py", "no", "", "mk", "no", "", "py"].forEach(function (c) { cols.appendChild(el("col", c)); });
    table.appendChild(cols); table.appendChild(body);
    (s.rows || []).forEach(function (r) { body.appendChild(r[0] === "fold" ? fold(r) : row(r)); });
    out.push(table);
    if (s.cut) out.push(el("p", "note", "(cut: irscope diff --stage " + str(s.stage) + " shows all of it)"));
    wrap.replaceChildren.apply(wrap, out);
  };
})();
