/* Draw every chart of the page: <div class="chart" data-figure="ID"> + <script type="application/json" id="ID">.
   The JSON is data only (escaped by the renderer); plotly.min.js is the one copy under assets/. */
(function () {
  if (typeof Plotly === "undefined") return;
  var config = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  document.querySelectorAll(".chart[data-figure]").forEach(function (el) {
    var src = document.getElementById(el.getAttribute("data-figure"));
    if (!src) return;
    var fig = JSON.parse(src.textContent);
    Plotly.newPlot(el, fig.data, fig.layout, config);
  });
})();
