// Loaded after require.js and before the ipywidgets HTML manager (nb_ipywidgets_js in
// _config.yml); it adapts the manager to the book's own files.
(function () {
  // The manager's modules are named "@jupyter-widgets/html-manager/dist/..."; require.js
  // would place them beside the page, and the manager loads its icon fonts from there. Map
  // that name to the book's copy in _static/vendor/html-manager/.
  var here = document.currentScript.src;
  var vendor = here.slice(0, here.lastIndexOf("/") + 1) + "vendor/html-manager";
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": vendor } });

  // The manager typesets widget labels with MathJax 2's MathJax.Hub.Queue; the book loads
  // MathJax 3 (deferred, so it is there by DOMContentLoaded, before the widgets render).
  // Give the manager that one call, done with MathJax 3.
  document.addEventListener("DOMContentLoaded", function () {
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
  });
})();
