/*
 * Lists drawn as one block of HTML (lodviz/app/html_block.py: what changed
 * tier, what the agent receives) have no Dash components for their rows, so
 * their buttons have no callbacks of their own: a click on one opens its
 * memory in the panel and the scene, as a click on the memory in the scene does.
 */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest(".html-block [data-memory]");
    if (!button || !window.dash_clientside || !window.dash_clientside.set_props) return;
    const id = Number(button.getAttribute("data-memory"));
    if (Number.isInteger(id)) window.dash_clientside.set_props("selected-id", {data: id});
  });
})();
