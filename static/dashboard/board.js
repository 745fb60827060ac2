/* The board's small behaviours: live-connection state, modify-in-place, keyboard shortcuts,
   countdowns. Everything else is HTMX and server-rendered partials. */
(function () {
  "use strict";

  function setLive(text, ok) {
    var el = document.getElementById("live-state");
    if (el) { el.textContent = text; el.dataset.ok = ok ? "1" : "0"; }
  }
  // The socket carries only what happens while it is open. When it opens again after a drop, the
  // page fetches itself and swaps in its live regions, so nothing that happened in between is
  // missing; a card or note the reviewer is in the middle of (focused, typed into, being edited)
  // is kept as it is. Events that arrive while the fetch is under way start one more round.
  var everOpened = false;
  var resyncing = false;
  var arrivedDuringResync = 0;
  document.addEventListener("htmx:wsOpen", function () {
    setLive("live", true);
    if (everOpened) { resync(3); }
    everOpened = true;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (resyncing) { arrivedDuringResync += 1; }
  });
  document.addEventListener("htmx:wsClose", function (event) {
    var code = event.detail && event.detail.event ? event.detail.event.code : 0;
    if (code === 4401) { setLive("signed out: reload the page to sign in", false); return; }
    setLive("reconnecting…", false);
    // The extension reconnects after an abnormal closure (1006), a restart (1012) or "try
    // again later" (1013). A server going away cleanly (1001) or failing (1011) gets the
    // page reloaded instead, once nobody is typing in it.
    if (code === 1001 || code === 1011) { reloadWhenIdle(); }
  });

  function isDirty(el) {
    if (el.contains(document.activeElement) && document.activeElement !== document.body) {
      return true;
    }
    if (el.querySelector("[data-editing]")) { return true; }
    var fields = el.querySelectorAll("input:not([type=hidden]), textarea");
    return Array.prototype.some.call(fields, function (f) { return f.value !== f.defaultValue; });
  }

  function reloadWhenIdle() {
    var content = document.getElementById("live-content");
    if (content && isDirty(content)) {
      setLive("disconnected: reloads when you finish typing", false);
      setTimeout(reloadWhenIdle, 5000);
      return;
    }
    setTimeout(function () { window.location.reload(); }, 1000 + Math.random() * 2000);
  }

  function resync(rounds) {
    if (rounds <= 0 || resyncing || !document.getElementById("live-content")) { return; }
    resyncing = true;
    arrivedDuringResync = 0;
    fetch(window.location.href, {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (response) {
        if (!response.ok || response.redirected) { throw new Error("board " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var content = fresh.getElementById("live-content");
        var current = document.getElementById("live-content");
        if (!content || !current) { return; }
        var focused = document.activeElement;
        current.querySelectorAll("article[id], li[id]").forEach(function (old) {
          var counterpart = content.querySelector("#" + CSS.escape(old.id));
          if (counterpart && isDirty(old)) { counterpart.replaceWith(old); }
        });
        current.replaceWith(content);
        var count = fresh.getElementById("open-count");
        var shownCount = document.getElementById("open-count");
        if (count && shownCount) { shownCount.replaceWith(count); }
        window.htmx.process(content);
        if (focused && focused.isConnected) { focused.focus(); }
        capLog();
        filterLog();
        refreshCountdowns();
      })
      .catch(function () { /* the next reconnect tries again; a reload shows everything */ })
      .then(function () {
        resyncing = false;
        if (arrivedDuringResync) { resync(rounds - 1); }
      });
  }

  window.rabsEditArguments = function (button) {
    var form = button.closest("form");
    var area = form.querySelector("textarea[name=arguments]");
    area.readOnly = false;
    area.rows = 8;
    form.dataset.editing = "1";
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

  // Screen readers hear what arrives and what a key did (the page's live region).
  function announce(text) {
    var region = document.getElementById("approvals-announce");
    if (!region) { return; }
    region.textContent = "";
    setTimeout(function () { region.textContent = text; }, 50);
  }
  function watchNewCards() {
    var list = document.getElementById("approval-list");
    if (!list || list.dataset.watched) { return; }
    list.dataset.watched = "1";
    new MutationObserver(function (records) {
      records.forEach(function (record) {
        record.addedNodes.forEach(function (node) {
          if (node.nodeType !== 1) { return; }
          var card = node.matches("article.approval") ? node : node.querySelector("article.approval");
          if (card && !card.classList.contains("decided")) {
            var heading = card.querySelector("h2");
            announce("New approval: " + (heading ? heading.textContent.trim() : ""));
          }
        });
      });
    }).observe(list, {childList: true, subtree: true});
  }
  document.addEventListener("DOMContentLoaded", watchNewCards);

  // After a key decided a card, focus stays in the list: once the card is replaced (by the
  // answer or by the live event, whichever comes first), on the open card that took its place.
  function refocusAfter(card) {
    var id = card.id;
    var index = openCards().indexOf(card);
    var tries = 0;
    var timer = setInterval(function () {
      var now = document.getElementById(id);
      tries += 1;
      if (now === card && tries < 200) { return; }
      clearInterval(timer);
      setTimeout(function () { settleFocus(card, now, index); }, 80);  // after htmx settles
    }, 50);
  }
  function settleFocus(card, now, index) {
    var note = now && now !== card ? now.querySelector(".decided-note") : null;
    if (note) { announce(note.textContent.trim()); }
    var active = document.activeElement;
    var moved = active && active !== document.body && !(now && now.contains(active)) &&
      !card.contains(active);
    if (moved) { return; }  // the reviewer went elsewhere meanwhile
    var cards = openCards();
    if (cards.length) { cards[Math.min(Math.max(index, 0), cards.length - 1)].focus(); }
  }

  function showKeys() {
    var dialog = document.getElementById("keys-help");
    if (dialog && !dialog.open) { dialog.showModal(); }
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) {
      if (event.key === "Escape") { target.blur(); return; }
      // r asked for a reason: Enter in it rejects.
      if (event.key === "Enter" && target.name === "reason") {
        var rejecting = target.closest("article.approval[data-rejecting]");
        if (rejecting && target.value.trim()) {
          event.preventDefault();
          refocusAfter(rejecting);
          var reject = rejecting.querySelector("button[data-key='r']");
          reject.focus();  // no id: htmx does not put focus back on the swapped card
          reject.click();
        }
      }
      return;
    }
    if (event.key === "?") { showKeys(); event.preventDefault(); return; }
    var key = event.key.toLowerCase();
    if (key === "m") { key = "e"; }  // the older key for edit
    if (key === "j" || key === "n") { move(1); event.preventDefault(); return; }
    if (key === "k" || key === "p") { move(-1); event.preventDefault(); return; }
    var card = currentCard() || openCards()[0];
    if (!card) { return; }
    if (key === "r") {
      var reason = card.querySelector("input[name=reason]");
      if (reason && !reason.value.trim()) {
        card.dataset.rejecting = "1";
        reason.focus();
        announce("Reason for rejecting, then Enter");
        event.preventDefault();
        return;
      }
    }
    var button = card.querySelector("button[data-key='" + key + "']");
    if (button) {
      if (key !== "e") { refocusAfter(card); button.focus(); }
      button.click();
      event.preventDefault();
    }
  });

  function refreshCountdowns() {
    var now = Date.now();
    document.querySelectorAll(".time-left[data-timeout]").forEach(function (el) {
      var ms = Date.parse(el.dataset.timeout) - now;
      var left = Math.ceil(ms / 60000);
      if (ms <= 0) {
        el.textContent = "overdue: deciding it now expires it";
      } else {
        el.textContent = left >= 120 ? "expires in " + Math.round(left / 60) + " h" :
          "expires in " + left + " min";
      }
      el.classList.toggle("urgent", left <= 5);
    });
  }
  document.addEventListener("DOMContentLoaded", refreshCountdowns);

  // A batch decides only the rows ticked, after a confirmation naming how many and where each
  // came from; with nothing ticked it says so and sends nothing.
  window.rabsConfirmBatch = function (button) {
    var form = button.closest("form");
    var action = button.dataset.batchAction;
    var ticked = Array.prototype.slice.call(form.querySelectorAll("input[name=approval]:checked"));
    var hint = form.querySelector(".batch-hint");
    var done = action === "approve" ? "approved" : "rejected";
    if (!ticked.length) {
      hint.textContent = "Nothing is ticked, so nothing was " + done +
        ": tick the calls you have looked at.";
      hint.classList.add("error");
      return;
    }
    if (action === "reject" && !form.querySelector("input[name=reason]").value.trim()) {
      hint.textContent = "A rejection needs a reason the agents will see.";
      hint.classList.add("error");
      return;
    }
    var origins = {};
    ticked.forEach(function (box) {
      origins[box.dataset.origin] = (origins[box.dataset.origin] || 0) + 1;
    });
    var dialog = form.querySelector("dialog.batch-confirm");
    var count = ticked.length + (ticked.length === 1 ? " call" : " calls");
    dialog.querySelector(".confirm-title").textContent =
      (action === "approve" ? "Approve " : "Reject ") + count + "? Each came from:";
    var list = dialog.querySelector(".confirm-origins");
    list.textContent = "";
    Object.keys(origins).forEach(function (origin) {
      var item = document.createElement("li");
      item.textContent = origins[origin] + " × " + origin;
      list.appendChild(item);
    });
    var go = dialog.querySelector(".confirm-go");
    go.textContent = (action === "approve" ? "Approve " : "Reject ") + count;
    go.className = (action === "approve" ? "approve" : "reject") + " confirm-go";
    go.setAttribute("hx-post", go.dataset[action + "Url"]);
    go.setAttribute("hx-include", "closest form");
    window.htmx.process(go);
    hint.classList.remove("error");
    hint.textContent = "";
    dialog.showModal();
  };

  // Ids are shown short; a click on one copies the whole id (it is in the title too).
  document.addEventListener("click", function (event) {
    var el = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!el || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(el.dataset.copy).then(function () {
      el.classList.add("copied");
      setTimeout(function () { el.classList.remove("copied"); }, 1200);
    }, function () { /* not allowed here: the title still shows it */ });
  });

  // The action log of one agent drops the rows of other agents the live stream brings.
  function filterLog() {
    var log = document.getElementById("action-log");
    if (!log || !log.dataset.agent || log.dataset.filtered) { return; }
    log.dataset.filtered = "1";
    var keep = log.dataset.agent;
    new MutationObserver(function () {
      Array.prototype.slice.call(log.children).forEach(function (row) {
        if (row.dataset.agent && row.dataset.agent !== keep) { log.removeChild(row); }
      });
    }).observe(log, {childList: true});
  }
  document.addEventListener("DOMContentLoaded", filterLog);

  // The live action log keeps its newest rows only (a reload shows the latest anyway): at a
  // hundred calls a second an unbounded list makes every later insertion slower.
  var LOG_ROWS = 200;
  function capLog() {
    var log = document.getElementById("action-log");
    if (!log || log.dataset.capped) { return; }
    log.dataset.capped = "1";
    new MutationObserver(function () {
      while (log.children.length > LOG_ROWS) { log.removeChild(log.lastElementChild); }
    }).observe(log, {childList: true});
  }
  document.addEventListener("DOMContentLoaded", capLog);
  setInterval(refreshCountdowns, 15000);
})();
