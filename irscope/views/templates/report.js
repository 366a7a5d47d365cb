/* irscope report: panes with lazy rendering, line links from the source map, pass diffs, layout pictures,
   the diff's side-by-side stages and the sweep table's sorting. Plain JS, no network, no libraries. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("irscope-data").textContent);
  var LH = 18;
  function esc(s) { return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }

  /* ---------- syntax colouring: one regex per language, a group per token class */
  var RX = {
    python: /(#.*$)|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|\b(def|return|for|in|range|if|else|elif|while|and|or|not|import|from|as|with|None|True|False|lambda|pass)\b|(@[\w.]+)|\b(\d+(?:\.\d+)?)\b|\b(tl|gl|triton)\b/g,
    mlir: /(\/\/.*$)|("(?:[^"\\]|\\.)*")|(%[\w.#]+|\^bb\d+)|(#[\w.]+)|\b([a-z_]+\.[\w.]+)\b|\b(tensor|memdesc|ptr|[if]\d+|bf16|index)\b|\b(-?\d+(?:\.\d+)?)\b|(loc\([^)]*\))/g,
    llvm: /(;.*$)|("(?:[^"\\]|\\.)*")|(%[\w.]+|@[\w.]+)|(![\w.]+)|\b(define|declare|ret|br|call|load|store|getelementptr|phi|icmp|fcmp|select|add|sub|mul|fadd|fmul|and|or|xor|shl|lshr|ashr|zext|sext|trunc|bitcast|addrspacecast|inttoptr|ptrtoint|extractvalue|insertvalue|extractelement|insertelement|shufflevector|label|tail|asm|sideeffect)\b|\b(ptr|void|i\d+|half|float|double|bfloat|addrspace|x)\b|\b(-?\d+)\b/g,
    ptx: /(\/\/.*$)|("(?:[^"\\]|\\.)*")|(%\w+)|(\$[\w]+)|^\s*(@!?%\w+\s+)?([a-z][\w.:]*)|(\.[a-z][\w]*)|\b(-?0[xXfF][0-9a-fA-F]+|-?\d+)\b/g,
    sass: /(\/\*[0-9a-f]+\*\/)|(\/\/.*$|\/\*.*?\*\/)|\b(U?R\d+|RZ|URZ|U?P\d+|PT|UPT|SR_\w+|B\d+)\b|(@!?U?P\w+)|\b([A-Z][A-Z0-9_]+)((?:\.[A-Z0-9_]+)*)|(c\[[^\]]*\]\[[^\]]*\])|\b(-?0x[0-9a-f]+|-?\d+)\b/g,
    amdgcn: /(;.*$|\/\/.*$)|("(?:[^"\\]|\\.)*")|\b([vsa]\[\d+:\d+\]|[vsa]\d+|vcc\w*|exec\w*|m0|scc)\b|^\s*(\.[\w.]+)|^\s*([a-z][a-z0-9_]*)\b|\b(-?0x[0-9a-f]+|-?\d+)\b/g
  };
  var CLS = {
    python: ["c", "s", "k", "a", "n", "v"], mlir: ["c", "s", "v", "a", "o", "t", "n", "d"],
    llvm: ["c", "s", "v", "d", "k", "t", "n"], ptx: ["c", "s", "v", "a", "d", "o", "t", "n"],
    sass: ["d", "c", "v", "a", "o", "t", "s", "n"], amdgcn: ["c", "s", "v", "t", "o", "n"]
  };
  function colour(line, lang) {
    var rx = RX[lang], cls = CLS[lang];
    if (!rx) return esc(line);
    rx.lastIndex = 0;
    var out = "", last = 0, m;
    while ((m = rx.exec(line)) !== null) {
      if (m[0].length === 0) { rx.lastIndex++; continue; }
      out += esc(line.slice(last, m.index));
      var g = 1; while (g < m.length && m[g] === undefined) g++;
      if (lang === "ptx" && g === 5) {           // a predicate then the opcode: two tokens
        out += '<span class="t-a">' + esc(m[5]) + '</span><span class="t-o">' + esc(m[6]) + "</span>";
      } else if (lang === "sass" && g === 5) {
        out += '<span class="t-o">' + esc(m[5]) + '</span><span class="t-t">' + esc(m[6] || "") + "</span>";
      } else {
        out += '<span class="t-' + (cls[g - 1] || "d") + '">' + esc(m[0]) + "</span>";
      }
      last = m.index + m[0].length;
    }
    return out + esc(line.slice(last));
  }

  /* ---------- a pane: only the visible lines are in the DOM */
  function Pane(root, onClick, gutter) {
    this.root = root; this.scroller = root.querySelector(".scroller");
    this.spacer = root.querySelector(".spacer"); this.rowsEl = root.querySelector(".rows");
    this.info = root.querySelector(".info"); this.onClick = onClick; this.gutter = gutter;
    this.lines = []; this.html = []; this.hl = {}; this.first = 0; this.stage = ""; this.lang = ""; this.offset = 0;
    var self = this, queued = false;
    this.scroller.addEventListener("scroll", function () {
      if (!queued) { queued = true; requestAnimationFrame(function () { queued = false; self.render(); }); }
    });
    this.rowsEl.addEventListener("click", function (e) {
      var ln = e.target.closest(".ln"); if (ln) self.onClick(self, +ln.dataset.n);
    });
  }
  Pane.prototype.setText = function (stage, text, lang) {
    this.stage = stage; this.lang = lang; this.root.dataset.stage = stage;
    this.lines = text.split("\n"); if (this.lines.length && this.lines[this.lines.length - 1] === "") this.lines.pop();
    this.html = new Array(this.lines.length); this.hl = {}; this.firstHl = 0;
    this.spacer.style.height = (this.lines.length * LH) + "px"; this.scroller.scrollTop = 0;
    this.setInfo(this.lines.length + " lines"); this.render();
  };
  Pane.prototype.setInfo = function (s) { this.info.textContent = s; };
  Pane.prototype.render = function () {
    var h = this.scroller.clientHeight || 600;
    var first = Math.max(0, Math.floor(this.scroller.scrollTop / LH) - 30);
    var last = Math.min(this.lines.length, first + Math.ceil(h / LH) + 60);
    var out = [];
    for (var i = first; i < last; i++) {
      if (this.html[i] === undefined) this.html[i] = colour(this.lines[i], this.lang);
      var n = i + 1, cls = "ln" + (this.hl[n] ? " hl" : "") + (n === this.firstHl ? " first" : "");
      out.push('<div class="' + cls + '" data-n="' + n + '"><span class="no">' + (n + this.offset) + '</span>' +
               (this.gutter ? '<span class="gut">' + this.gutter(n) + "</span>" : "") +
               '<span class="code">' + this.html[i] + "</span></div>");
    }
    this.rowsEl.style.transform = "translateY(" + (first * LH) + "px)";
    this.rowsEl.innerHTML = out.join("");
  };
  Pane.prototype.highlight = function (lines, why) {
    this.hl = {}; var sorted = lines.slice().sort(function (a, b) { return a - b; });
    for (var i = 0; i < sorted.length; i++) this.hl[sorted[i]] = 1;
    this.firstHl = sorted.length ? sorted[0] : 0;
    this.root.dataset.hlCount = sorted.length; this.root.dataset.hlLines = sorted.join(",");
    if (sorted.length) {
      this.scroller.scrollTop = Math.max(0, (sorted[0] - 1) * LH - this.scroller.clientHeight / 3);
      this.setInfo(sorted.length + " line" + (sorted.length > 1 ? "s" : "") + " (" + why + "), first at " + sorted[0]);
    } else { this.setInfo(why ? "nothing from " + why : this.lines.length + " lines"); }
    this.render();
  };

  /* ---------- a dump's section */
  function setupTabs(scope) {
    var buttons = scope.querySelectorAll(":scope > nav.tabs button, :scope > main > nav.tabs button");
    buttons.forEach(function (b) {
      b.addEventListener("click", function () {
        buttons.forEach(function (x) { x.classList.toggle("on", x === b); });
        scope.querySelectorAll(".tab").forEach(function (t) { t.classList.toggle("on", t.dataset.tab === b.dataset.tab); });
        scope.dispatchEvent(new CustomEvent("tab", { detail: b.dataset.tab }));
      });
    });
  }

  function Dump(d, section) {
    var stages = {}; d.stages.forEach(function (s) { stages[s.name] = s; });
    var map = d.map, rows = map.available ? map.rows : {}, rev = map.available ? map.reverse : {};
    var paneEls = section.querySelectorAll(".pane"), panes = [];
    function gutter(n) {
      var r = rows[n]; if (!r || !r.n) return "";
      var w = Math.max(2, Math.round(40 * r.n / (map.max_n || 1)));
      var t = r.n + " " + (map.machine || "") + " instructions" + Object.keys(r.classes).map(function (k) { return ", " + k + " " + r.classes[k]; }).join("");
      return '<i class="' + (r.spills ? "spill" : "") + '" style="width:' + w + 'px" title="' + esc(t) + '"></i>';
    }
    function fromSource(line) {
      var r = rows[line];
      panes[0].highlight(r ? [line] : [], "line " + (line + d.source_first_line - 1));
      for (var i = 1; i < panes.length; i++) panes[i].highlight(r && r.at[panes[i].stage] ? r.at[panes[i].stage] : [], "Python line " + (line + d.source_first_line - 1));
    }
    function fromStage(pane, line) {
      var srcs = (rev[pane.stage] || {})[line] || [];
      panes[0].highlight(srcs, pane.stage + " line " + line);
      pane.highlight([line], "");
      for (var i = 1; i < panes.length; i++) {
        if (panes[i] === pane) continue;
        var at = [];
        srcs.forEach(function (s) { var r = rows[s]; if (r && r.at[panes[i].stage]) at = at.concat(r.at[panes[i].stage]); });
        panes[i].highlight(at, pane.stage + " line " + line);
      }
    }
    function click(pane, line) {
      if (!map.available) return;
      if (pane === panes[0]) fromSource(line); else fromStage(pane, line);
    }
    paneEls.forEach(function (el, i) { panes.push(new Pane(el, click, i === 0 && map.available ? gutter : null)); });
    var src = stages.source;
    panes[0].offset = d.source_first_line - 1;   // numbered as the kernel's file is
    panes[0].setText("source", src ? src.text : "(no source in this dump)", "python");
    var prefer = [["ttgir", "ptx", "llir"], ["sass", "amdgcn", "ptx", "llir"]];
    [1, 2].forEach(function (i) {
      var pick = paneEls[i].querySelector(".stage-pick");
      var choice = prefer[i - 1].filter(function (s) { return stages[s]; })[0] || (d.stages[1] || d.stages[0]).name;
      if (i === 1 && stages.ptx && stages.sass) choice = "ptx";
      pick.value = choice;
      var show = function () { var s = stages[pick.value]; panes[i].setText(s.name, s.text + (s.cut ? "\n(cut: the stage is " + s.bytes + " bytes)" : ""), s.lang); };
      pick.addEventListener("change", show); show();
    });
    setupTabs(section);
    section.addEventListener("tab", function (e) {
      if (e.detail === "code") panes.forEach(function (p) { p.render(); });
      if (e.detail === "layouts") drawLayouts(d, section);
    });
    section.querySelectorAll("table.hot tr[data-src]").forEach(function (tr) {
      tr.addEventListener("click", function () { section.querySelector('nav.tabs button[data-tab="code"]').click(); fromSource(+tr.dataset.src); });
    });
    setupPasses(d, section);
  }

  function setupPasses(d, section) {
    if (!d.passes) return;
    var view = section.querySelector(".diffview"), only = section.querySelector(".changed-only");
    only.addEventListener("change", function () {
      section.querySelectorAll("tr.unchanged").forEach(function (tr) { tr.hidden = only.checked; });
    });
    section.querySelectorAll(".pass-table tr[data-i]").forEach(function (tr) {
      tr.addEventListener("click", function () {
        section.querySelectorAll(".pass-table tr.sel").forEach(function (x) { x.classList.remove("sel"); });
        tr.classList.add("sel");
        var p = d.passes[+tr.dataset.i], out = ['<div class="dl hunk">' + esc(p.name + " (" + p.arg + ") in " + p.stage + ": +" + p.added + " −" + p.removed) + "</div>"];
        if (p.diff === null) out.push('<div class="note" style="padding:8px">' + (p.left_out ? "This diff was left out to keep the page small; irscope passes DIR shows it." : "This pass did not change the IR (or its IR was not dumped).") + "</div>");
        else p.diff.forEach(function (l) {
          var c = l[0] === "+" ? "add" : l[0] === "-" ? "del" : l.slice(0, 2) === "@@" ? "hunk" : "";
          out.push('<div class="dl ' + c + '">' + esc(l) + "</div>");
        });
        if (p.cut) out.push('<div class="note" style="padding:8px">(cut: long lines or a long diff)</div>');
        view.innerHTML = out.join("");
      });
    });
    var first = section.querySelector(".pass-table tr[data-i]:not([hidden])");
    if (first) first.click();
  }

  /* ---------- layouts: SVG drawn when the tab is first opened */
  var SVGNS = "http://www.w3.org/2000/svg";
  function drawLayouts(d, section) {
    section.querySelectorAll(".layout[data-ok='1']").forEach(function (el) {
      if (el.dataset.drawn) return;
      el.dataset.drawn = "1";
      var lay = d.layouts[+el.dataset.i], c = lay.cells, shape = lay.tile;
      var rows = shape.length === 2 ? shape[0] : 1, cols = shape.length === 2 ? shape[1] : shape[0];
      var size = Math.max(5, Math.min(22, Math.floor(1100 / cols)));
      var svg = document.createElementNS(SVGNS, "svg");
      svg.setAttribute("width", cols * size + 1); svg.setAttribute("height", rows * size + 1);
      svg.setAttribute("class", "layout-svg"); svg.setAttribute("role", "img");
      var parts = [];
      for (var i = 0; i < rows * cols; i++) {
        var r = Math.floor(i / cols), q = i % cols, fill, label = "", attrs;
        if (lay.shared) {
          var col = c.column[i];
          fill = col < 0 ? "#ddd" : "hsl(" + Math.round(col * 360 / c.columns) + ",70%,72%)";
          attrs = ' data-col="' + col + '" data-off="' + c.offset[i] + '"';
          if (size >= 12 && (q % c.chunk === 0)) label = String(col);
        } else {
          var w = c.warp[i], ln = c.lane[i];
          fill = w < 0 ? "#ddd" : "hsl(" + Math.round(w * 360 / c.warps) + ",65%," + (36 + Math.round(40 * ln / c.lanes) + (ln % 2) * 8) + "%)";
          attrs = ' data-w="' + w + '" data-l="' + ln + '" data-r="' + c.reg[i] + '" data-k="' + c.copies[i] + '"';
          if (size >= 18) label = String(ln);
        }
        parts.push('<rect class="cell" x="' + (q * size) + '" y="' + (r * size) + '" width="' + size + '" height="' + size +
                   '" fill="' + fill + '" stroke="#fff" stroke-width=".5" data-i="' + i + '"' + attrs + "/>");
        if (label) parts.push('<text x="' + (q * size + size / 2) + '" y="' + (r * size + size * 0.68) + '" text-anchor="middle">' + label + "</text>");
      }
      svg.innerHTML = parts.join("");
      var hover = el.querySelector(".hover");
      svg.addEventListener("mousemove", function (e) {
        var t = e.target; if (!t.classList || !t.classList.contains("cell")) return;
        var i = +t.dataset.i, r = Math.floor(i / cols), q = i % cols, where = shape.length === 2 ? "(" + r + ", " + q + ")" : "[" + q + "]";
        hover.textContent = lay.shared ? "element " + where + ": offset " + t.dataset.off + ", column " + t.dataset.col
          : "element " + where + ": warp " + t.dataset.w + ", lane " + t.dataset.l + ", register " + t.dataset.r + (+t.dataset.k > 1 ? " (held by " + t.dataset.k + " threads)" : "");
      });
      if (!lay.shared) svg.addEventListener("click", function (e) {   // a thread: every element it holds
        var t = e.target; if (!t.classList || !t.classList.contains("cell")) return;
        svg.querySelectorAll("rect.mine").forEach(function (x) { x.classList.remove("mine"); });
        var mine = svg.querySelectorAll('rect[data-w="' + t.dataset.w + '"][data-l="' + t.dataset.l + '"]');
        mine.forEach(function (x) { x.classList.add("mine"); });
        hover.textContent = "warp " + t.dataset.w + ", lane " + t.dataset.l + " holds " + mine.length + " of the drawn elements (outlined)";
      });
      el.querySelector(".pic").appendChild(svg);
    });
  }

  /* ---------- the diff page */
  function Diff(m) {
    setupTabs(document.body);
    var wrap = document.querySelector(".sbs-wrap");
    document.querySelectorAll("tr.stage-row").forEach(function (tr) {
      tr.addEventListener("click", function () {
        document.querySelectorAll("tr.stage-row.sel").forEach(function (x) { x.classList.remove("sel"); });
        tr.classList.add("sel");
        var s = m.stages[+tr.dataset.i];
        if (s.status === "equal") { wrap.innerHTML = '<p class="note">' + esc(s.stage) + " is the same on both sides (after normalisation).</p>"; return; }
        var out = ['<table class="sbs" data-stage="' + esc(s.stage) + '"><colgroup><col style="width:4.5em"><col><col style="width:4.5em"><col></colgroup>'];
        s.rows.forEach(function (r) {
          if (r[0] === "sep") { out.push('<tr class="sep"><td colspan="4"></td></tr>'); return; }
          out.push('<tr class="' + r[0] + '"><td class="no">' + (r[1] === null ? "" : r[1]) + '</td><td class="a">' + esc(r[2]) +
                   '</td><td class="no">' + (r[3] === null ? "" : r[3]) + '</td><td class="b">' + esc(r[4]) + "</td></tr>");
        });
        out.push("</table>");
        if (s.cut) out.push('<p class="note">(cut: irscope diff --stage ' + esc(s.stage) + " shows all of it)</p>");
        wrap.innerHTML = out.join("");
      });
    });
    var firstChanged = document.querySelector("tr.stage-row");
    for (var i = 0; i < m.stages.length; i++) if (m.stages[i].status !== "equal") { firstChanged = document.querySelector('tr.stage-row[data-i="' + i + '"]'); break; }
    if (firstChanged) firstChanged.click();
  }

  /* ---------- the sweep page: sort by any column */
  function Sweep() {
    var table = document.querySelector("table.sortable"); if (!table) return;
    var body = table.tBodies[0], dir = {};
    table.querySelectorAll("th").forEach(function (th) {
      th.addEventListener("click", function () {
        var col = +th.dataset.col; dir[col] = -(dir[col] || -1);
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
          if (x === "" && y !== "") return 1; if (y === "" && x !== "") return -1;
          var num = /^-?\d+(\.\d+)?$/;
          var c = (num.test(x) && num.test(y)) ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return c * dir[col];
        });
        rows.forEach(function (r) { body.appendChild(r); });
        table.dataset.sorted = col + (dir[col] > 0 ? " asc" : " desc");
      });
    });
  }

  if (DATA.kind === "dumps") {
    var sections = {};
    DATA.dumps.forEach(function (d) { var s = document.getElementById(d.id); sections[d.id] = s; new Dump(d, s); });
    var pick = document.getElementById("dump-pick");
    if (pick) pick.addEventListener("change", function () {
      Object.keys(sections).forEach(function (k) { sections[k].hidden = k !== pick.value; });
      sections[pick.value].querySelector("nav.tabs button.on").click();
    });
  } else if (DATA.kind === "diff") { Diff(DATA); }
  else { Sweep(); }
  document.body.dataset.ready = "1";
})();
