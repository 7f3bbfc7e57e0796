/*
 * The "What changed" lists (lodviz/app/change_list.py) arrive as one block of
 * HTML, not as Dash components, so their buttons have no callbacks of their
 * own: a click on one opens its memory in the panel and the scene, as a click
 * on the memory in the scene does.
 */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest(".change-lists [data-memory]");
    if (!button || !window.dash_clientside || !window.dash_clientside.set_props) return;
    const id = Number(button.getAttribute("data-memory"));
    if (Number.isInteger(id)) window.dash_clientside.set_props("selected-id", {data: id});
  });
})();
