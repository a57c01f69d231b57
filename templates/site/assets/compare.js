/* A case page compares two systems side by side when its address asks for it (?compare, or ?a=SYS&b=SYS): the
   picker shows, the two systems picked (defaults, or a and b) stand side by side and the others are hidden.
   Names are only compared with the panels' data-panel values; nothing is written into the page. */
(function () {
  var form = document.getElementById("picker"), panels = document.getElementById("panels");
  if (!form || !panels) return;
  var params = new URLSearchParams(window.location.search);
  if (!(params.has("compare") || params.has("a") || params.has("b"))) return;
  var a = document.getElementById("pick-a"), b = document.getElementById("pick-b");
  var names = Array.prototype.map.call(a.options, function (o) { return o.value; });
  if (names.indexOf(params.get("a")) >= 0) a.value = params.get("a");
  if (names.indexOf(params.get("b")) >= 0) b.value = params.get("b");
  function show() {
    panels.querySelectorAll("[data-panel]").forEach(function (el) {
      var n = el.getAttribute("data-panel");
      el.hidden = !(n === a.value || n === b.value);
      el.style.order = n === a.value ? "0" : "1";
    });
  }
  a.addEventListener("change", show);
  b.addEventListener("change", show);
  panels.className = "side-by-side";
  form.hidden = false;
  show();
  if (!window.location.hash) document.getElementById("systems").scrollIntoView();
})();
