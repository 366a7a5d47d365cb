/* irscope report: panes with lazy rendering, line links from the source map, pass diffs, layout pictures,
   the diff's side-by-side stages and the sweep table's sorting. Plain JS, no network, no libraries.
   Everything in DATA came from a dump folder, which is data from anyone: it reaches the DOM only as text
   (textContent, text nodes), attribute values (setAttribute, dataset) or CSSOM numbers, never as markup.
   There is no innerHTML in this file, and no string is parsed as HTML, CSS or a selector. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("irscope-data").textContent);
  var LH = 18;
  function str(x) { return x === null || x === undefined ? "" : String(x); }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  /* o[k] only when o has k itself: a stage named "constructor" or "__proto__" finds nothing inherited */
  function own(o, k) { return o && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined; }
  /* an element of a fixed tag and class (classes are this file's constants), holding `text` as text */
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svgEl(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, str(attrs[k]));
    return e;
  }
  var SVGNS = "http://www.w3.org/2000/svg";

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
  /* a line as tokens [class or "", text]; the classes are CLS's letters, the texts the line's own */
  function colour(line, lang) {
    var rx = RX[lang], cls = CLS[lang];
    if (!rx) return [["", line]];
    rx.lastIndex = 0;
    var out = [], last = 0, m;
    while ((m = rx.exec(line)) !== null) {
      if (m[0].length === 0) { rx.lastIndex++; continue; }
      out.push(["", line.slice(last, m.index)]);
      var g = 1; while (g < m.length && m[g] === undefined) g++;
      if (lang === "ptx" && g === 5) {           // a predicate then the opcode: two tokens
        out.push(["a", m[5]], ["o", m[6]]);
      } else if (lang === "sass" && g === 5) {
        out.push(["o", m[5]], ["t", m[6] || ""]);
      } else {
        out.push([cls[g - 1] || "d", m[0]]);
      }
      last = m.index + m[0].length;
    }
    out.push(["", line.slice(last)]);
    return out;
  }
  function codeSpan(tokens) {
    var code = el("span", "code");
    tokens.forEach(function (t) {
      if (!t[1]) return;
      code.appendChild(t[0] ? el("span", "t-" + t[0], t[1]) : document.createTextNode(t[1]));
    });
    return code;
  }

  /* ---------- a pane: only the visible lines are in the DOM */
  var WRAP_MAX_LINES = 5000;   // a Python pane this long or shorter wraps its lines (all in the DOM)
  function Pane(root, onClick, gutter, wrap) {
    this.root = root; this.scroller = root.querySelector(".scroller");
    this.spacer = root.querySelector(".spacer"); this.rowsEl = root.querySelector(".rows");
    this.info = root.querySelector(".info"); this.onClick = onClick; this.gutter = gutter;
    this.lines = []; this.tokens = []; this.hl = {}; this.marks = {}; this.first = 0; this.stage = ""; this.lang = ""; this.offset = 0;
    this.wrapAllowed = !!wrap; this.wrap = false;
    var self = this, queued = false;
    this.scroller.addEventListener("scroll", function () {
      if (!queued) { queued = true; requestAnimationFrame(function () { queued = false; self.render(); }); }
    });
    this.rowsEl.addEventListener("click", function (e) {
      var ln = e.target.closest(".ln"); if (ln) self.onClick(self, +ln.dataset.n);
    });
  }
  Pane.prototype.setText = function (stage, text, lang) {
    this.stage = str(stage); this.lang = lang; this.root.dataset.stage = this.stage;
    this.lines = str(text).split("\n"); if (this.lines.length && this.lines[this.lines.length - 1] === "") this.lines.pop();
    this.tokens = new Array(this.lines.length); this.hl = {}; this.firstHl = 0;
    this.wrap = this.wrapAllowed && this.lines.length <= WRAP_MAX_LINES;
    this.root.classList.toggle("wrap", this.wrap);
    this.spacer.style.height = this.wrap ? "" : (this.lines.length * LH) + "px"; this.scroller.scrollTop = 0;
    this.setInfo(plural(this.lines.length, "line")); this.render();
  };
  Pane.prototype.setInfo = function (s) { this.info.textContent = s; };
  Pane.prototype.render = function () {
    var h = this.scroller.clientHeight || 600;
    var first = this.wrap ? 0 : Math.max(0, Math.floor(this.scroller.scrollTop / LH) - 30);
    var last = this.wrap ? this.lines.length : Math.min(this.lines.length, first + Math.ceil(h / LH) + 60);
    if (this.wrap && this.rendered === this.hlKey()) return;   // every line is drawn: redraw on a new highlight only
    this.rendered = this.wrap ? this.hlKey() : null;
    var out = document.createDocumentFragment();
    for (var i = first; i < last; i++) {
      if (this.tokens[i] === undefined) this.tokens[i] = colour(this.lines[i], this.lang);
      var n = i + 1, row = el("div", "ln" + (this.hl[n] ? " hl" : "") + (n === this.firstHl ? " first" : ""));
      row.dataset.n = n;
      var mark = own(this.marks, n);   // a finding on this line: flagged, its kinds in the title
      if (mark) { row.classList.add("flag"); row.setAttribute("title", mark); }
      row.appendChild(el("span", "no", n + this.offset));
      if (this.gutter) { var gut = el("span", "gut"), bar = this.gutter(n); if (bar) gut.appendChild(bar); row.appendChild(gut); }
      row.appendChild(codeSpan(this.tokens[i]));
      out.appendChild(row);
    }
    this.rowsEl.style.transform = this.wrap ? "" : "translateY(" + (first * LH) + "px)";
    this.rowsEl.replaceChildren(out);
  };
  Pane.prototype.hlKey = function () { return this.stage + "|" + this.lines.length + "|" + Object.keys(this.hl).join(",") + "|" + this.firstHl; };
  /* the widest line's width in pixels, as this pane draws it (number column and gutter included) */
  Pane.prototype.fitWidth = function () {
    var longest = 0; this.lines.forEach(function (l) { longest = Math.max(longest, l.replace(/\t/g, "    ").length); });
    var probe = el("div", "ln"); probe.appendChild(el("span", "no", "0000"));
    if (this.gutter) probe.appendChild(el("span", "gut"));
    var code = el("span", "code", "0".repeat(100)); probe.appendChild(code);
    probe.classList.add("probe"); this.rowsEl.appendChild(probe);
    var w = probe.scrollWidth - code.offsetWidth + code.offsetWidth * (longest + 2) / 100;
    probe.remove();
    return Math.ceil(w + 24);   // the scroller's scroll bar
  };
  Pane.prototype.highlight = function (lines, why) {
    this.hl = {}; var sorted = lines.slice().sort(function (a, b) { return a - b; });
    for (var i = 0; i < sorted.length; i++) this.hl[sorted[i]] = 1;
    this.firstHl = sorted.length ? sorted[0] : 0;
    this.root.dataset.hlCount = sorted.length; this.root.dataset.hlLines = sorted.join(",");
    if (sorted.length) {
      if (this.wrap) { this.render(); var row = this.rowsEl.children[sorted[0] - 1]; this.scroller.scrollTop = Math.max(0, (row ? row.offsetTop : 0) - this.scroller.clientHeight / 3); }
      else this.scroller.scrollTop = Math.max(0, (sorted[0] - 1) * LH - this.scroller.clientHeight / 3);
      this.setInfo(plural(sorted.length, "line") + " (" + why + "), first at " + sorted[0]);
    } else { this.setInfo(why ? "nothing from " + why : plural(this.lines.length, "line")); }
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
    var stages = Object.create(null); d.stages.forEach(function (s) { stages[str(s.name)] = s; });
    var map = d.map, rows = map.available ? map.rows : {}, rev = map.available ? map.reverse : {};
    var paneEls = section.querySelectorAll(".pane"), panes = [];
    function gutter(n) {
      var r = own(rows, n); if (!r || !r.n) return null;
      var w = Math.max(2, Math.round(40 * r.n / (map.max_n || 1)));
      var t = r.n + " " + str(map.machine) + " instructions" + Object.keys(r.classes || {}).map(function (k) { return ", " + k + " " + str(r.classes[k]); }).join("");
      var bar = el("i", r.spills ? "spill" : "");
      bar.style.width = (isFinite(w) ? w : 2) + "px";   // CSSOM: a number, never a style string
      bar.setAttribute("title", t);
      return bar;
    }
    function fromSource(line) {
      var r = own(rows, line);
      panes[0].highlight(r ? [line] : [], "line " + (line + d.source_first_line - 1));
      for (var i = 1; i < panes.length; i++) panes[i].highlight(lineList(r && own(r.at, panes[i].stage)), "Python line " + (line + d.source_first_line - 1));
    }
    function fromStage(pane, line) {
      var srcs = lineList(own(own(rev, pane.stage), line));
      panes[0].highlight(srcs, pane.stage + " line " + line);
      pane.highlight([line], "");
      for (var i = 1; i < panes.length; i++) {
        if (panes[i] === pane) continue;
        var at = [];
        srcs.forEach(function (s) { var r = own(rows, s); at = at.concat(lineList(r && own(r.at, panes[i].stage))); });
        panes[i].highlight(at, pane.stage + " line " + line);
      }
    }
    function lineList(x) { return Array.isArray(x) ? x.filter(function (n) { return typeof n === "number"; }) : []; }
    function click(pane, line) {
      if (!map.available) return;
      if (pane === panes[0]) fromSource(line); else fromStage(pane, line);
    }
    /* measured heat (profile.json): a line's share of the warp-stall samples, its top reasons in the title */
    var prof = d.profile, heatRows = prof ? prof.rows : {};
    function heat(n) {
      var r = own(heatRows, n); if (!r || !(r.share > 0)) return null;
      var w = Math.max(2, Math.round(40 * r.share / (prof.max_share || 1)));
      var bar = el("i", r.share >= 0.1 ? "heat" : "heat cool");
      bar.style.width = (isFinite(w) ? Math.min(40, w) : 2) + "px";   // CSSOM: a number, never a style string
      bar.setAttribute("title", str(r.tip));
      bar.dataset.share = str(r.share);
      return bar;
    }
    paneEls.forEach(function (el, i) { panes.push(new Pane(el, click, i === 0 ? (prof ? heat : map.available ? gutter : null) : null, i === 0)); });
    var src = stages.source;
    panes[0].offset = d.source_first_line - 1;   // numbered as the kernel's file is
    panes[0].setText("source", src ? src.text : "(no source in this dump)", "python");
    var prefer = [["ttgir", "ptx", "llir"], ["sass", "amdgcn", "ptx", "llir"]];
    [1, 2].forEach(function (i) {
      var pick = paneEls[i].querySelector(".stage-pick");
      var choice = prefer[i - 1].filter(function (s) { return stages[s]; })[0] || (d.stages[1] || d.stages[0]).name;
      if (i === 1 && stages.ptx && stages.sass) choice = "ptx";
      pick.value = choice;
      var show = function () { var s = stages[pick.value]; if (!s) return; panes[i].setText(s.name, s.text + (s.cut ? "\n(cut: the stage is " + s.bytes + " bytes)" : ""), s.lang); };
      pick.addEventListener("change", show); show();
    });
    setupTabs(section);
    setupSplitter(section, panes[0]);
    section.querySelectorAll(".fill i[data-fill]").forEach(function (i) {   // the cards' bars: a percentage
      var f = parseFloat(i.dataset.fill); i.style.width = (isFinite(f) ? Math.max(0, Math.min(100, f)) : 0) + "%";
    });
    section.addEventListener("tab", function (e) {
      if (e.detail === "code") { fitSource(section, panes[0]); panes.forEach(function (p) { p.rendered = null; p.render(); }); }
      if (e.detail === "layouts") drawLayouts(d, section);
    });
    /* findings (irscope explain): each with its links to the Python line and the stage lines it names */
    function toCode() { section.querySelector('nav.tabs button[data-tab="code"]').click(); }
    function toSource(src) {
      toCode();
      if (map.available) fromSource(src);
      if (!panes[0].hl[src]) panes[0].highlight([src], "finding at line " + (src + d.source_first_line - 1));
    }
    function toStage(stage, line) {
      var i = stage === "ttgir" ? 1 : 2, pick = paneEls[i].querySelector(".stage-pick");
      if (!stages[stage] || !pick) return;
      toCode();
      if (pick.value !== stage) { pick.value = stage; pick.dispatchEvent(new Event("change")); }
      if (map.available) fromStage(panes[i], line); else panes[i].highlight([line], "");
    }
    drawFindings(d, section, stages, toSource, toStage);
    (d.findings || []).forEach(function (f) {
      if (f.src > 0) panes[0].marks[f.src] = (panes[0].marks[f.src] ? panes[0].marks[f.src] + "; " : "finding: ") + str(f.kind) + " (" + str(f.cause) + ")";
    });
    panes[0].rendered = null; panes[0].render();
    section.querySelectorAll("table.hot tr[data-src]").forEach(function (tr) {
      tr.addEventListener("click", function () { section.querySelector('nav.tabs button[data-tab="code"]').click(); fromSource(+tr.dataset.src); });
    });
    setupPasses(d, section);
  }

  /* ---------- findings: what, where (links), why with its evidence, the fix; all of it text from the data */
  function linkButton(cls, label, onClick) {
    var b = el("button", "f-link " + cls, label); b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }
  function drawFindings(d, section, stages, toSource, toStage) {
    var box = section.querySelector(".findings"); if (!box) return;
    var list = d.findings || [], out = document.createDocumentFragment();
    if (d.findings_error) out.appendChild(el("div", "warn", "The findings could not be computed: " + str(d.findings_error)));
    else if (!list.length) out.appendChild(el("div", "note pad", "No findings: nothing here that irscope explain knows to be a missed optimisation."));
    list.forEach(function (f, k) {
      var card = el("div", "finding"); card.dataset.kind = str(f.kind); card.dataset.line = str(f.line);
      var head = el("div", "f-head");
      head.appendChild(el("span", "f-n", String(k + 1) + "."));
      head.appendChild(el("b", "f-kind", str(f.kind)));
      head.appendChild(el("span", "f-cause", "(" + str(f.cause) + ")"));
      // the kernel file's own line number, as irscope explain prints it (the source pane numbers lines so too)
      if (f.src > 0) head.appendChild(linkButton("f-src", "line " + str(f.line), function () { toSource(f.src); }));
      else if (f.line) head.appendChild(el("span", "f-noline", "line " + str(f.line)));
      if (f.text) head.appendChild(el("code", "f-text", str(f.text)));
      card.appendChild(head);
      if (str(f.title) !== str(f.kind)) card.appendChild(el("div", "f-title note", str(f.title)));
      function row(label, cls, text) {
        var r = el("div", "f-row " + cls); r.appendChild(el("span", "f-l", label)); r.appendChild(el("span", "f-v", text)); card.appendChild(r); return r;
      }
      row("what", "f-what", str(f.what));
      row("why", "f-why", str(f.why));
      if ((f.evidence || []).length) {
        var ul = el("ul", "f-evidence");
        f.evidence.forEach(function (e) { ul.appendChild(el("li", "", str(e))); });
        var ev = row("evidence", "f-ev", ""); ev.replaceChild(ul, ev.lastChild);
      }
      [["ttgir", f.ttgir], ["code", f.machine]].forEach(function (g) {
        if (!(g[1] || []).length) return;
        var r = el("div", "f-row f-at"); r.appendChild(el("span", "f-l", g[0]));
        var v = el("span", "f-v");
        g[1].forEach(function (x) {
          var stage = str(x[0]), n = x[1], item = el("div", "f-op");
          if (typeof n === "number" && n > 0 && stages[stage]) item.appendChild(linkButton("f-stage", stage + " " + n, function () { toStage(stage, n); }));
          else if (n > 0) item.appendChild(el("span", "f-noline", stage + " " + n));
          item.appendChild(el("code", "", str(x[2])));
          v.appendChild(item);
        });
        r.appendChild(v); card.appendChild(r);
      });
      var fix = row("fix", "f-fix", str(f.fix));
      if (f.tryable) fix.lastChild.appendChild(el("span", "f-try", "irscope explain --try recompiles with it and says whether the finding went away"));
      out.appendChild(card);
    });
    box.replaceChildren(out);
  }

  /* ---------- the Python pane's width: fitted to its longest line (up to half the panes), then the
     user's: drag the bar between it and the next pane (or focus it and press the arrow keys) */
  function srcWidth(section, px) {
    var box = section.querySelector(".panes"), total = box.clientWidth || 1200;
    var w = Math.max(220, Math.min(total - 420, px));
    box.querySelector(".pane").style.width = Math.round(isFinite(w) ? w : 480) + "px";   // CSSOM: a number
    box.dataset.srcW = String(Math.round(w));
  }
  function fitSource(section, pane) {
    var box = section.querySelector(".panes");
    if (box.dataset.userSized || !box.clientWidth) return;
    srcWidth(section, Math.min(pane.fitWidth(), Math.max(480, box.clientWidth * 0.45)));
  }
  function setupSplitter(section, pane) {
    var bar = section.querySelector(".splitter"), box = section.querySelector(".panes");
    if (!bar) return;
    fitSource(section, pane);
    bar.tabIndex = 0;
    bar.addEventListener("pointerdown", function (e) {
      e.preventDefault(); bar.setPointerCapture(e.pointerId); bar.classList.add("drag");
      var left = box.getBoundingClientRect().left;
      function move(ev) { box.dataset.userSized = "1"; srcWidth(section, ev.clientX - left - 3); pane.rendered = null; pane.render(); }
      function up() { bar.classList.remove("drag"); bar.removeEventListener("pointermove", move); bar.removeEventListener("pointerup", up); }
      bar.addEventListener("pointermove", move); bar.addEventListener("pointerup", up);
    });
    bar.addEventListener("keydown", function (e) {
      var step = e.key === "ArrowLeft" ? -40 : e.key === "ArrowRight" ? 40 : 0;
      if (!step) return;
      e.preventDefault(); box.dataset.userSized = "1";
      srcWidth(section, (+box.dataset.srcW || 480) + step); pane.rendered = null; pane.render();
    });
    bar.addEventListener("dblclick", function () { delete box.dataset.userSized; fitSource(section, pane); });
    window.addEventListener("resize", function () {   // a narrower window: fitted again, or the user's width kept within it
      if (!box.clientWidth) return;
      if (box.dataset.userSized) srcWidth(section, +box.dataset.srcW || 480); else fitSource(section, pane);
      pane.rendered = null; pane.render();
    });
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
        var p = d.passes[+tr.dataset.i], out = document.createDocumentFragment();
        out.appendChild(el("div", "dl hunk", str(p.name) + " (" + str(p.arg) + ") in " + str(p.stage) + ": +" + str(p.added) + " −" + str(p.removed)));
        if (!p.diff) out.appendChild(el("div", "note pad", p.left_out ? "This diff was left out to keep the page small; irscope passes DIR shows it." : "This pass did not change the IR (or its IR was not dumped)."));
        else p.diff.forEach(function (l) {
          l = str(l);
          var c = l[0] === "+" ? "add" : l[0] === "-" ? "del" : l.slice(0, 2) === "@@" ? "hunk" : "";
          out.appendChild(el("div", c ? "dl " + c : "dl", l));
        });
        if (p.cut) out.appendChild(el("div", "note pad", "(cut: long lines or a long diff)"));
        view.replaceChildren(out);
      });
    });
    var first = section.querySelector(".pass-table tr[data-i]:not([hidden])");
    if (first) first.click();
  }

  /* ---------- layouts: SVG drawn when the tab is first opened */
  function warpColour(w, warps, ln, lanes) {   // hue: the warp; lightness: the lane (darker: lane 0)
    return w < 0 ? "#ddd" : "hsl(" + Math.round(w * 360 / warps) + ",65%," + (36 + Math.round(40 * ln / lanes) + (ln % 2) * 8) + "%)";
  }
  /* what the colours and numbers mean: a swatch per warp, the lane shades, the register */
  function legend(lay, c, size) {
    var box = el("div", "legend-box");
    if (lay.shared) {
      box.appendChild(el("span", "note", "number and hue: the " + str(c.chunk) + "-element column of shared memory an element lands in (0 to " + (c.columns - 1) + ")"));
      return box;
    }
    var n = Math.min(c.warps, 16), sw = 16, W = 60 + n * (sw + 40);
    var svg = svgEl("svg", {width: Math.max(W, 420), height: 54, "class": "legend", role: "img", "aria-label": "legend"});
    var t = svgEl("text", {x: 0, y: 12}); t.textContent = "warp:"; svg.appendChild(t);
    for (var w = 0; w < n; w++) {
      svg.appendChild(svgEl("rect", {x: 44 + w * (sw + 40), y: 2, width: sw, height: sw, fill: warpColour(w, c.warps, 0, c.lanes), "class": "swatch", "data-w": w}));
      var tw = svgEl("text", {x: 44 + w * (sw + 40) + sw + 4, y: 14}); tw.textContent = "w" + w; svg.appendChild(tw);
    }
    var tl = svgEl("text", {x: 0, y: 42}); tl.textContent = "lane:"; svg.appendChild(tl);
    [0, Math.floor(c.lanes / 2), c.lanes - 1].forEach(function (ln, j) {
      svg.appendChild(svgEl("rect", {x: 44 + j * 56, y: 30, width: sw, height: sw, fill: warpColour(0, c.warps, ln, c.lanes)}));
      var x = svgEl("text", {x: 44 + j * 56 + sw + 4, y: 42}); x.textContent = String(ln); svg.appendChild(x);
    });
    box.appendChild(svg);
    box.appendChild(el("div", "note", "In a cell: the big number is the lane (the thread within its warp; thread = warp × " + c.lanes +
      " + lane), the small r-number the register of that thread" + (size >= 24 ? "" : " (shown when the cells are large enough; hover a cell)") + "."));
    return box;
  }
  function drawLayouts(d, section) {
    section.querySelectorAll(".layout[data-ok='1']").forEach(function (el) {
      if (el.dataset.drawn) return;
      el.dataset.drawn = "1";
      var lay = d.layouts[+el.dataset.i], c = lay.cells, shape = lay.tile;
      var rows = shape.length === 2 ? shape[0] : 1, cols = shape.length === 2 ? shape[1] : shape[0];
      // cells large enough to read (a wide tile scrolls inside its box), the tile's axes on top and left
      var size = cols <= 64 ? Math.max(26, Math.min(32, Math.floor(1400 / cols))) : 18, L = 44, T = 30;
      var svg = svgEl("svg", {width: L + cols * size + 1, height: T + rows * size + 1, "class": "layout-svg", role: "img"});
      var parts = document.createDocumentFragment();
      var tick = Math.max(1, Math.ceil(28 / size)); tick = Math.pow(2, Math.ceil(Math.log(tick) / Math.LN2));
      for (var q0 = 0; q0 < cols; q0 += tick) {
        var tx = svgEl("text", {x: L + q0 * size + size / 2, y: T - 6, "text-anchor": "middle", "class": "axis"}); tx.textContent = String(q0); parts.appendChild(tx);
      }
      for (var r0 = 0; r0 < rows; r0 += tick) {
        var ty = svgEl("text", {x: L - 5, y: T + r0 * size + size * 0.68, "text-anchor": "end", "class": "axis"}); ty.textContent = String(r0); parts.appendChild(ty);
      }
      var cap = svgEl("text", {x: L, y: 10, "class": "axis-name"});
      cap.textContent = shape.length === 2 ? "dim 1 (columns) →   dim 0 (rows) ↓" : "dim 0 →"; parts.appendChild(cap);
      for (var i = 0; i < rows * cols; i++) {
        var r = Math.floor(i / cols), q = i % cols, fill, label = "", sub = "", attrs;
        if (lay.shared) {
          var col = +c.column[i];
          fill = col < 0 ? "#ddd" : "hsl(" + Math.round(col * 360 / c.columns) + ",70%,72%)";
          attrs = {"data-col": col, "data-off": c.offset[i]};
          if (q % c.chunk === 0) label = String(col);
        } else {
          var w = +c.warp[i], ln = +c.lane[i];
          fill = warpColour(w, c.warps, ln, c.lanes);
          attrs = {"data-w": w, "data-l": ln, "data-r": c.reg[i], "data-k": c.copies[i]};
          label = String(ln); if (size >= 24 && c.regs > 1) sub = String(c.reg[i]);
        }
        var rect = svgEl("rect", {"class": "cell", x: L + q * size, y: T + r * size, width: size, height: size, fill: fill,
                                  stroke: "#fff", "stroke-width": ".5", "data-i": i});
        for (var k in attrs) rect.setAttribute(k, str(attrs[k]));
        parts.appendChild(rect);
        if (label) {
          var text = svgEl("text", {x: L + q * size + size / 2, y: T + r * size + (sub ? size * 0.5 : size * 0.68), "text-anchor": "middle"});
          text.textContent = label; parts.appendChild(text);
        }
        if (sub) {
          var st = svgEl("text", {x: L + q * size + size / 2, y: T + r * size + size * 0.88, "text-anchor": "middle", "class": "reg"});
          st.textContent = "r" + sub; parts.appendChild(st);
        }
      }
      el.querySelector(".legend-slot").appendChild(legend(lay, c, size));
      svg.appendChild(parts);
      var hover = el.querySelector(".hover");
      svg.addEventListener("mousemove", function (e) {
        var t = e.target; if (!t.classList || !t.classList.contains("cell")) return;
        var i = +t.dataset.i, r = Math.floor(i / cols), q = i % cols, where = shape.length === 2 ? "(" + r + ", " + q + ")" : "[" + q + "]";
        hover.textContent = lay.shared ? "element " + where + ": offset " + t.dataset.off + ", column " + t.dataset.col
          : "element " + where + ": warp " + t.dataset.w + ", lane " + t.dataset.l + " (thread " + (+t.dataset.w * c.lanes + +t.dataset.l) + "), register " + t.dataset.r + (+t.dataset.k > 1 ? " (held by " + t.dataset.k + " threads)" : "");
      });
      if (!lay.shared) svg.addEventListener("click", function (e) {   // a thread: every element it holds
        var t = e.target; if (!t.classList || !t.classList.contains("cell")) return;
        svg.querySelectorAll("rect.mine").forEach(function (x) { x.classList.remove("mine"); });
        var mine = Array.prototype.filter.call(svg.querySelectorAll("rect.cell"), function (x) {   // no selector built from data
          return x.dataset.w === t.dataset.w && x.dataset.l === t.dataset.l;
        });
        mine.forEach(function (x) { x.classList.add("mine"); });
        hover.textContent = "warp " + t.dataset.w + ", lane " + t.dataset.l + " holds " + mine.length + " of the drawn elements (outlined)";
      });
      el.querySelector(".pic").appendChild(svg);
    });
  }

  /* ---------- the diff page */
  var SBS_TAGS = {equal: "equal", replace: "replace", insert: "insert", "delete": "delete", sep: "sep"};
  /* the findings that went away (-) or appeared (+) from a to b, then those on both sides (=) */
  function drawFindingsDiff(m) {
    var box = document.querySelector(".findings-diff"), fd = m.findings; if (!box || !fd) return;
    var out = document.createDocumentFragment();
    if (fd.error) { box.replaceChildren(el("div", "note", "Findings: could not be computed (" + str(fd.error) + ").")); return; }
    var rows = [["went_away", "− went away", fd.went_away], ["appeared", "+ appeared", fd.appeared], ["both", "= on both", fd.both]];
    var n = function (x) { return (x || []).length; };
    out.appendChild(el("h3", "", "Findings: " + n(fd.went_away) + " went away, " + n(fd.appeared) + " appeared, " + n(fd.both) + " on both sides"));
    if (!n(fd.went_away) && !n(fd.appeared) && !n(fd.both)) out.appendChild(el("div", "note", "irscope explain finds nothing on either side."));
    rows.forEach(function (r) {
      (r[2] || []).forEach(function (f) {
        var div = el("div", "fd " + r[0]); div.dataset.kind = str(f.kind); div.dataset.line = str(f.line);
        div.appendChild(el("span", "fd-mark", r[1]));
        div.appendChild(el("span", "fd-at", f.line ? "line " + f.line : "no line"));
        div.appendChild(el("b", "", str(f.kind)));
        div.appendChild(el("span", "fd-cause", "(" + str(f.cause) + ")"));
        div.appendChild(el("span", "fd-what", str(f.what)));
        out.appendChild(div);
      });
    });
    box.replaceChildren(out);
  }
  function Diff(m) {
    drawFindingsDiff(m);
    setupTabs(document.body);
    var wrap = document.querySelector(".sbs-wrap");
    document.querySelectorAll("tr.stage-row").forEach(function (tr) {
      tr.addEventListener("click", function () {
        document.querySelectorAll("tr.stage-row.sel").forEach(function (x) { x.classList.remove("sel"); });
        tr.classList.add("sel");
        var s = m.stages[+tr.dataset.i];
        if (s.status === "equal") { wrap.replaceChildren(el("p", "note", str(s.stage) + " is the same on both sides (after normalisation).")); return; }
        if (s.aligned && window.IrscopeAligned) { window.IrscopeAligned(wrap, s); return; }  /* diff.js */
        var table = el("table", "sbs"), cols = el("colgroup"), body = el("tbody");
        table.dataset.stage = str(s.stage);
        ["no", "", "no", ""].forEach(function (c) { cols.appendChild(el("col", c)); });
        table.appendChild(cols); table.appendChild(body);
        (s.rows || []).forEach(function (r) {
          var tr = el("tr", SBS_TAGS[r[0]] || "");
          if (r[0] === "sep") { var td = el("td"); td.colSpan = 4; tr.appendChild(td); body.appendChild(tr); return; }
          tr.appendChild(el("td", "no", str(r[1]))); tr.appendChild(el("td", "a", str(r[2])));
          tr.appendChild(el("td", "no", str(r[3]))); tr.appendChild(el("td", "b", str(r[4])));
          body.appendChild(tr);
        });
        var out = [table];
        if (s.cut) out.push(el("p", "note", "(cut: irscope diff --stage " + str(s.stage) + " shows all of it)"));
        wrap.replaceChildren.apply(wrap, out);
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
