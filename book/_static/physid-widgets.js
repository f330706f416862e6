// Loaded on every built page (html_js_files in _config.yml) and, on a page with widgets, once
// more after require.js and before the ipywidgets HTML manager (nb_ipywidgets_js); each part
// below runs once. It adapts the manager to the book's own files, freezes and labels the
// explorers (no kernel runs behind a static page) and keeps the numbers of tables in one piece.
// Jupyter never loads it, so a notebook with a live kernel keeps its controls enabled.
(function () {
  // The manager's bundle defines AMD modules named "@jupyter-widgets/..." (the manager's
  // "html-manager/dist/libembed-amd", "base", "controls", "output" and their version-7 twins).
  // Each module finds its icon fonts in the folder require.js gives its name, which would be
  // beside the page (book/@jupyter-widgets/, where nothing is). Map every one of those names
  // into the book's copy, _static/vendor/html-manager/, where the fonts are.
  if (window.require && window.require.config && !window.physidRequireConfigured) {
    var here = document.currentScript.src;
    var vendor = here.slice(0, here.lastIndexOf("/") + 1) + "vendor/html-manager";
    var paths = { "@jupyter-widgets/html-manager/dist": vendor };
    ["base", "base7", "controls", "controls7", "output", "html-manager"].forEach(function (name) {
      paths["@jupyter-widgets/" + name] = vendor + "/" + name;
    });
    require.config({ paths: paths });
    window.physidRequireConfigured = true;
  }
  if (window.physidPageReady) {
    return;
  }
  window.physidPageReady = true;

  // What a static page says about an explorer's controls (the figure is the one the executed
  // notebook drew: no kernel redraws it here).
  var STATIC_NOTE =
    "Static page: this figure was drawn when the book was built, and no kernel runs " +
    "here to redraw it, so the controls are fixed. Run the notebook to move them.";
  var STATIC_TOOLTIP = "Run the notebook to move this control (static page: no kernel).";

  function modelId(reference) {
    return typeof reference === "string" ? reference.replace(/^IPY_MODEL_/, "") : null;
  }

  // An explorer (physid.book.display.explorer) is a VBox of controls over an Output widget.
  // Before the manager reads the saved widget state (it renders on the window's load event),
  // mark every control of every explorer disabled, with a tooltip saying why; return the
  // explorers' model ids.
  function freezeExplorers() {
    var explorers = {};
    var scripts = document.querySelectorAll(
      'script[type="application/vnd.jupyter.widget-state+json"]'
    );
    Array.prototype.forEach.call(scripts, function (script) {
      var saved;
      try {
        saved = JSON.parse(script.textContent);
      } catch (error) {
        return;
      }
      var models = (saved && saved.state) || {};
      var changed = false;
      Object.keys(models).forEach(function (id) {
        var box = models[id];
        if (!box || box.model_name !== "VBoxModel" || !box.state) {
          return;
        }
        var children = (box.state.children || []).map(modelId);
        var last = models[children[children.length - 1]];
        if (!last || last.model_name !== "OutputModel") {
          return;
        }
        explorers[id] = true;
        children.slice(0, -1).forEach(function (child) {
          var control = models[child];
          if (control && control.state && "disabled" in control.state) {
            control.state.disabled = true;
            control.state.tooltip = STATIC_TOOLTIP;
            changed = true;
          }
        });
      });
      if (changed) {
        script.textContent = JSON.stringify(saved);
      }
    });
    return explorers;
  }

  // The tooltip on every control row of an explorer, set as the manager draws them (the
  // widgets' own tooltip reaches the labels of some kinds of control only).
  function titleControls(box) {
    Array.prototype.forEach.call(box.querySelectorAll(".widget-inline-hbox"), function (row) {
      var label = row.querySelector(".widget-label");
      [row, label].forEach(function (el) {
        if (el && el.title !== STATIC_TOOLTIP) {
          el.title = STATIC_TOOLTIP;
        }
      });
      var controls = row.querySelectorAll("select, input, textarea, button, .noUi-handle");
      Array.prototype.forEach.call(controls, function (control) {
        control.setAttribute("aria-disabled", "true");
      });
    });
  }

  // A visible note above each explorer: the manager draws the view just before its script.
  function labelExplorers(explorers) {
    var views = document.querySelectorAll(
      'script[type="application/vnd.jupyter.widget-view+json"]'
    );
    Array.prototype.forEach.call(views, function (view) {
      var id;
      try {
        id = JSON.parse(view.textContent).model_id;
      } catch (error) {
        return;
      }
      if (!explorers[id] || !view.parentElement) {
        return;
      }
      var note = document.createElement("p");
      note.className = "physid-static-note";
      note.setAttribute("role", "note");
      note.textContent = STATIC_NOTE;
      var box = view.parentElement;
      box.insertBefore(note, view);
      box.classList.add("physid-static-explorer");
      new MutationObserver(function () {
        titleControls(box);
      }).observe(box, { childList: true, subtree: true });
    });
  }

  // A line break inside a number ("8.64e-" / "16") misreads it, and one inside a short
  // hyphenated name ("BP5-" / "e") hides it: in every table, each number (digits with their
  // sign, decimals and exponent, not part of a word) and each hyphenated word of at most
  // SHORT_WORD characters goes in a span.physid-nowrap that physid.css keeps on one line.
  // Math is left to MathJax.
  var TOKEN =
    /(^|[^\w.\u2212-])([-+\u2212]?\d+(?:[.,]\d+)*(?:[eE][-+\u2212]?\d+)?%?|[\w()'\u2019]+(?:-[\w()'\u2019]+)+)/g;
  var SHORT_WORD = 12;

  function keepTokensWhole() {
    var tables = document.querySelectorAll("table");
    Array.prototype.forEach.call(tables, function (table) {
      var walker = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
      var nodes = [];
      for (var node = walker.nextNode(); node; node = walker.nextNode()) {
        nodes.push(node);
      }
      nodes.forEach(function (node) {
        if (node.parentElement.closest(".math, .physid-nowrap, mjx-container, script, style")) {
          return;
        }
        var text = node.nodeValue;
        var pieces = null;
        var last = 0;
        var match;
        TOKEN.lastIndex = 0;
        while ((match = TOKEN.exec(text)) !== null) {
          var start = match.index + match[1].length;
          var token = match[2];
          var isNumber = /^[-+\u2212]?\d/.test(token) && !/[a-df-zA-DF-Z_()']/.test(token);
          if (token.length < 2 || (!isNumber && token.length > SHORT_WORD)) {
            continue;
          }
          pieces = pieces || document.createDocumentFragment();
          pieces.appendChild(document.createTextNode(text.slice(last, start)));
          var span = document.createElement("span");
          span.className = "physid-nowrap";
          span.textContent = token;
          pieces.appendChild(span);
          last = start + token.length;
        }
        if (pieces) {
          pieces.appendChild(document.createTextNode(text.slice(last)));
          node.parentNode.replaceChild(pieces, node);
        }
      });
    });
  }

  // The manager typesets widget labels with MathJax 2's MathJax.Hub.Queue; the book loads
  // MathJax 3 (deferred, so it is there by DOMContentLoaded, before the widgets render).
  // Give the manager that one call, done with MathJax 3.
  function shimMathJax() {
    var mathjax = window.MathJax;
    if (!mathjax || mathjax.Hub || !mathjax.startup) {
      return;
    }
    mathjax.Hub = {
      Queue: function (job) {
        var element = job[2];
        mathjax.startup.promise.then(function () {
          return mathjax.typesetPromise([element]);
        });
      },
    };
  }

  document.addEventListener("DOMContentLoaded", function () {
    labelExplorers(freezeExplorers());
    keepTokensWhole();
    shimMathJax();
  });
})();
