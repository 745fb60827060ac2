/* The board's small behaviours: live-connection state, modify-in-place, keyboard shortcuts,
   countdowns. Everything else is HTMX and server-rendered partials. */
(function () {
  "use strict";

  function setLive(text, ok) {
    var el = document.getElementById("live-state");
    if (el) { el.textContent = text; el.dataset.ok = ok ? "1" : "0"; }
  }
  document.addEventListener("htmx:wsOpen", function () { setLive("live", true); });
  document.addEventListener("htmx:wsClose", function () { setLive("reconnecting…", false); });

  window.rabsEditArguments = function (button) {
    var form = button.closest("form");
    var area = form.querySelector("textarea[name=arguments]");
    area.readOnly = false;
    area.rows = 8;
    area.focus();
    button.textContent = "Run with these arguments";
    button.removeAttribute("onclick");
    button.setAttribute("hx-post", button.dataset.modifyUrl);
    button.setAttribute("hx-include", "closest form");
    window.htmx.process(button);
  };

  function openCards() {
    return Array.prototype.slice.call(document.querySelectorAll("article.approval:not(.decided)"));
  }
  function currentCard() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("article.approval") : null;
  }
  function move(step) {
    var cards = openCards();
    if (!cards.length) { return; }
    var index = cards.indexOf(currentCard());
    var next = cards[(index + step + cards.length) % cards.length] || cards[0];
    next.focus();
    next.scrollIntoView({block: "nearest"});
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) {
      if (event.key === "Escape") { target.blur(); }
      return;
    }
    var key = event.key.toLowerCase();
    if (key === "j" || key === "n") { move(1); event.preventDefault(); return; }
    if (key === "k" || key === "p") { move(-1); event.preventDefault(); return; }
    var card = currentCard() || openCards()[0];
    if (!card) { return; }
    if (key === "r") {
      var reason = card.querySelector("input[name=reason]");
      if (reason && !reason.value) { reason.focus(); event.preventDefault(); return; }
    }
    var button = card.querySelector("button[data-key='" + key + "']");
    if (button) { button.click(); event.preventDefault(); }
  });

  function refreshCountdowns() {
    var now = Date.now();
    document.querySelectorAll(".time-left[data-timeout]").forEach(function (el) {
      var left = Math.round((Date.parse(el.dataset.timeout) - now) / 60000);
      el.textContent = left > 0 ? "expires in " + left + " min" : "expiring now";
      el.classList.toggle("urgent", left <= 5);
    });
  }
  document.addEventListener("DOMContentLoaded", refreshCountdowns);

  // The live action log keeps its newest rows only (a reload shows the latest anyway): at a
  // hundred calls a second an unbounded list makes every later insertion slower.
  var LOG_ROWS = 200;
  document.addEventListener("DOMContentLoaded", function () {
    var log = document.getElementById("action-log");
    if (!log) { return; }
    new MutationObserver(function () {
      while (log.children.length > LOG_ROWS) { log.removeChild(log.lastElementChild); }
    }).observe(log, {childList: true});
  });
  setInterval(refreshCountdowns, 15000);
})();
