// Injected by tests/report_browser.rs into a copy of the report page (the
// page itself runs no script). It records what the console would show as
// an error (console.error, uncaught errors, rejected promises, resources
// that failed to load) and, once the page has loaded, every element that
// reaches past the viewport's right (or left) edge and is not inside a box
// that scrolls on its own. The verdict is posted as JSON to the parent
// page (the test's harness, which shows the page in an iframe of the width
// under test), and the harness writes it into its own DOM for
// `chromium --dump-dom` to print.
(function () {
  var errors = [];
  var original = console.error;
  console.error = function () {
    errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) {
      errors.push("failed to load: " + (t.src || t.href));
    } else {
      errors.push("uncaught: " + e.message);
    }
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    errors.push("unhandled rejection: " + e.reason);
  });
  function scrollsOnItsOwn(el) {
    var x = getComputedStyle(el).overflowX;
    return x === "auto" || x === "scroll";
  }
  // An element inside a box that scrolls on its own spills nothing onto
  // the page (the box is checked instead), nor does a shape inside a
  // drawing (the <svg> is). A box that clips (overflow hidden) is no
  // excuse: what it cuts off cannot be read.
  function insideScroller(el) {
    if (el.ownerSVGElement) return true;
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (scrollsOnItsOwn(p)) return true;
    }
    return false;
  }
  function describe(el) {
    var d = el.tagName.toLowerCase();
    if (el.id) d += "#" + el.id;
    if (typeof el.className === "string" && el.className) d += "." + el.className.split(/\s+/).join(".");
    var text = (el.textContent || "").replace(/\s+/g, " ").trim().slice(0, 40);
    return d + " \"" + text.replace(/[<>&"]/g, "_") + "\"";
  }
  window.addEventListener("load", function () {
    var root = document.documentElement;
    var width = root.clientWidth;
    var wide = [];
    var scrolling = [];
    var outside = new Set();
    var all = document.body.getElementsByTagName("*");
    for (var i = 0; i < all.length; i++) {
      var el = all[i];
      if (insideScroller(el)) continue;
      if (scrollsOnItsOwn(el) && el.scrollWidth > el.clientWidth) {
        scrolling.push(describe(el));
      }
      var r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.right > width + 0.5 || r.left < -0.5) {
        outside.add(el);
        // Only the outermost: its rows and cells go past the edge with it.
        if (!outside.has(el.parentElement)) {
          wide.push(describe(el) + " spans " + Math.round(r.left) + ".." + Math.round(r.right) + " px");
        }
      }
    }
    var verdict = {
      viewport: width,
      scroll_width: Math.max(root.scrollWidth, document.body.scrollWidth),
      scroll_height: Math.max(root.scrollHeight, document.body.scrollHeight),
      wide: wide,
      scrolling: scrolling,
      errors: errors
    };
    parent.postMessage(JSON.stringify(verdict), "*");
  });
})();
