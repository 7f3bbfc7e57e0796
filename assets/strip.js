/*
 * The panel's strip of heat along a long memory (lodviz/app/passage_strip.py).
 *
 * A click on a segment brings its passage into view in the list further down
 * the panel, and a freshly drawn list opens at the first passage the agent
 * received: the list is the memory's whole text, so what was received may sit
 * far down it. On opening only the list scrolls; the panel stays where the
 * person left it.
 */
(function () {
  "use strict";

  function reveal(box, passage) {
    box.scrollTop = Math.max(passage.offsetTop - 4, 0);
  }

  document.addEventListener("click", function (event) {
    const segment = event.target.closest && event.target.closest(".strip-segment");
    const box = document.getElementById("panel-passages");
    if (!segment || !box) return;
    const passage = box.querySelector('.passage[data-position="' + segment.dataset.position + '"]');
    if (!passage) return;
    reveal(box, passage);
    box.scrollIntoView({ block: "nearest", behavior: "smooth" }); // the list sits further down the panel than the strip
  });

  // Which list was opened last (its memory and query), so a redraw of the same one keeps its scroll.
  let opened = null;
  new MutationObserver(function () {
    const box = document.getElementById("panel-passages");
    if (!box || box.dataset.view === opened) return;
    opened = box.dataset.view;
    const received = box.querySelector(".passage.received");
    if (received) reveal(box, received);
    else box.scrollTop = 0;
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
