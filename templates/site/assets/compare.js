/* Compare page: show the two systems picked (defaults, or ?a=SYS&b=SYS) side by side.
   Names are only compared with the panels' data-panel values; nothing is written into the page. */
(function () {
  var form = document.getElementById("picker");
  if (!form) return;
  var a = document.getElementById("pick-a"), b = document.getElementById("pick-b");
  var names = Array.prototype.map.call(a.options, function (o) { return o.value; });
  var params = new URLSearchParams(window.location.search);
  if (names.indexOf(params.get("a")) >= 0) a.value = params.get("a");
  if (names.indexOf(params.get("b")) >= 0) b.value = params.get("b");
  function show() {
    document.querySelectorAll("[data-panel]").forEach(function (el) {
      var n = el.getAttribute("data-panel");
      el.hidden = !(n === a.value || n === b.value);
      el.style.order = n === a.value ? "0" : "1";
    });
  }
  a.addEventListener("change", show);
  b.addEventListener("change", show);
  form.hidden = false;
  show();
})();
