// Sortable tables (class "sortable"): a column title's button sorts the rows by that column, again
// reverses. Cells carry data-sort: numbers sort as numbers, other text as text, empty last always.
(function () {
  "use strict";
  function missing(v) { return v === null || v === ""; }
  function compare(x, y) {
    var nx = Number(x), ny = Number(y);
    if (!isNaN(nx) && !isNaN(ny)) return nx - ny;
    return x.localeCompare(y);
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      var button = th.querySelector("button.sort");
      if (!button) return;
      button.addEventListener("click", function () {
        var now = th.getAttribute("aria-sort");
        var asc = now ? now !== "ascending" : th.getAttribute("data-first") !== "descending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col] ? a.cells[col].getAttribute("data-sort") : null;
          var y = b.cells[col] ? b.cells[col].getAttribute("data-sort") : null;
          if (missing(x) || missing(y)) return missing(x) === missing(y) ? 0 : (missing(x) ? 1 : -1);
          var c = compare(x, y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
