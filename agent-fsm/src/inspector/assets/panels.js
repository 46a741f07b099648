// The agent page's panels other than the diagram: the timeline, the
// history table and its filters, the tools in flight, the streamed text,
// the notes and the approval box. Each takes the page's model of the
// agent (`agent`, kept by agent.js) and updates its part of the page.
"use strict";

const Panels = (() => {
  const $ = (id) => document.getElementById(id);

  // "1.234 s" or "312 ms".
  function duration(ms) {
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    const m = Math.floor(ms / 60000);
    return m + " min " + Math.round((ms % 60000) / 1000) + " s";
  }

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }

  // Scrolls `box` to its end before the next frame: reading its height
  // lays the page out, which, done for every update, costs a long page
  // more than the updates themselves.
  const scrolling = new Set();
  function scrollToEnd(box) {
    if (scrolling.size === 0) {
      requestAnimationFrame(() => {
        for (const b of scrolling) b.scrollTop = b.scrollHeight;
        scrolling.clear();
      });
    }
    scrolling.add(box);
  }

  // ---- timeline: one entry per hop, with the time spent in its source.
  let longest = 1;

  function timelineEntry(hop, start) {
    const li = el("li", null, hop.from === hop.to ? "in-place" : "moved");
    li.dataset.n = hop.n;
    li.dataset.from = hop.from;
    li.dataset.to = hop.to;
    const at = el("span", "+" + duration(Math.max(0, hop.at - start)), "at");
    const what = el("span", hop.from === hop.to ? hop.from + " ↻" : hop.from + " → " + hop.to, "what");
    const event = el("span", (hop.event || "(eventless)") + (hop.action ? " / " + hop.action : ""), "event muted");
    const bar = el("span", null, "bar");
    bar.style.width = Math.max(1, Math.round((100 * hop.spent) / longest)) + "%";
    bar.title = duration(hop.spent) + " in " + hop.from;
    const spent = el("span", duration(hop.spent), "spent muted");
    li.append(at, what, event, bar, spent);
    return li;
  }

  // Adds `hops` to the timeline and the history, then drops the entries
  // of hops the page no longer keeps (`agent.hops` holds the newest
  // `agent.hops_kept`) and says how many came before those shown.
  function addHops(agent, hops) {
    const list = $("timeline");
    const rows = $("history");
    const start = agent.hops.length ? agent.hops[0].at : 0;
    const filter = currentFilter();
    for (const hop of hops) {
      if (hop.spent > longest) longest = hop.spent;
      list.appendChild(timelineEntry(hop, start));
      const tr = historyRow(hop, start);
      applyTo(tr, filter);
      rows.appendChild(tr);
    }
    while (list.children.length > agent.hops.length) list.firstElementChild.remove();
    while (rows.children.length > agent.hops.length) {
      if (!rows.firstElementChild.hidden) shown -= 1;
      rows.firstElementChild.remove();
    }
    scrollToEnd(list);
    const dropped = agent.hops.length ? agent.hops[0].n - 1 : 0;
    $("hop-count").textContent = agent.hop_count + " hops" +
      (dropped > 0 ? ", the first " + dropped + " not shown (the page keeps the last " + agent.hops_kept + ")" : "");
    $("hop-count").dataset.dropped = dropped;
    showCount();
  }

  function resetHops(agent) {
    $("timeline").replaceChildren();
    $("history").replaceChildren();
    shown = 0;
    longest = agent.hops.reduce((most, h) => Math.max(most, h.spent), 1);
    addHops(agent, agent.hops);
  }

  // ---- history: every hop, filterable by name and by staying in place.
  function historyRow(hop, start) {
    const tr = document.createElement("tr");
    tr.dataset.words = [hop.from, hop.event || "", hop.to, hop.action || ""].join(" ").toLowerCase();
    tr.dataset.inPlace = hop.from === hop.to ? "1" : "";
    tr.dataset.from = hop.from;
    tr.dataset.to = hop.to;
    tr.append(el("td", String(hop.n)), el("td", "+" + duration(Math.max(0, hop.at - start))), el("td", hop.from),
      el("td", hop.event || "(eventless)"), el("td", hop.to), el("td", hop.action || ""), el("td", duration(hop.spent)));
    return tr;
  }

  // How many history rows the filter shows: kept as rows come and go, so
  // that a hop costs the same however many are kept.
  let shown = 0;

  function currentFilter() {
    return {
      words: $("filter").value.trim().toLowerCase().split(/\s+/).filter(Boolean),
      hideInPlace: $("hide-in-place").checked,
    };
  }

  function applyTo(tr, filter) {
    const keep = (!filter.hideInPlace || !tr.dataset.inPlace) && filter.words.every((w) => tr.dataset.words.includes(w));
    tr.hidden = !keep;
    if (keep) shown += 1;
  }

  function showCount() {
    $("history-shown").textContent = shown + " of " + $("history").children.length + " shown";
  }

  function applyFilter() {
    const filter = currentFilter();
    shown = 0;
    for (const tr of $("history").children) applyTo(tr, filter);
    showCount();
  }

  function filterOn(text) {
    $("filter").value = text;
    applyFilter();
  }

  // ---- the current model call's text.
  function setText(text) {
    $("stream").textContent = text;
  }

  // The end of the text is kept, as the server keeps it: a state that
  // streams call after call without leaving it never resets it.
  const TEXT_KEPT = 64 * 1024;

  function addText(delta, reset) {
    const stream = $("stream");
    if (reset) stream.textContent = "";
    let text = stream.textContent + delta;
    if (text.length > 2 * TEXT_KEPT) text = text.slice(text.length - TEXT_KEPT);
    stream.textContent = text;
    scrollToEnd(stream);
  }

  // ---- tools in flight, with their elapsed time.
  function renderTools(agent) {
    const list = $("tools");
    if (agent.tools.length === 0) {
      list.replaceChildren(el("li", "none", "muted"));
      return;
    }
    list.replaceChildren(...agent.tools.map((tool) => {
      const li = el("li", null, "tool");
      li.dataset.id = tool.id;
      li.append(el("span", tool.label, "label"), el("span", duration(agent.serverNow() - tool.started), "elapsed muted"));
      return li;
    }));
    // The server sends the first calls in flight only: say how many more.
    if (agent.tools_more > 0) {
      const more = el("li", "and " + agent.tools_more + " more in flight, not shown", "muted more");
      more.id = "tools-more";
      list.appendChild(more);
    }
  }

  // ---- notes.
  function addNote(note, start) {
    const li = el("li", null);
    li.append(el("span", "+" + duration(Math.max(0, note.at - start)), "at muted"), el("span", " " + note.text));
    const list = $("notes");
    list.appendChild(li);
    while (list.children.length > 200) list.firstChild.remove();
  }

  // ---- the pending approval, with buttons that answer it through the
  // agent's handle (the server sends the event the agent's view chose).
  // A new approval's buttons take clicks only after it has been shown for
  // ARM_MS: a click meant for the one it replaced (the second click of a
  // double click, a click already on its way) must not answer an approval
  // the user has not read.
  const ARM_MS = 700;
  let armed = null; // the approval whose buttons wait to take clicks
  function renderApproval(agent) {
    const box = $("approval");
    const approval = agent.finished ? null : agent.approval;
    box.hidden = !approval;
    if (!approval) return;
    if (box.dataset.id === String(approval.id)) return; // shown already, as it was left
    box.dataset.id = approval.id;
    $("approval-summary").textContent = approval.summary;
    // The server sends a long summary's start, and how many bytes it left
    // out: say so, and link to the whole text.
    $("approval-cut").hidden = !(approval.cut > 0);
    if (approval.cut > 0) {
      $("approval-more").textContent = "… and " + approval.cut + " bytes more, not shown here:";
      $("approval-all").href = "/api/agents/" + agent.id + "/approvals/" + approval.id + "/summary";
    }
    $("approval-result").textContent = "";
    for (const button of box.querySelectorAll("button")) button.disabled = true;
    clearTimeout(armed);
    armed = setTimeout(() => {
      if (box.dataset.id !== String(approval.id)) return;
      for (const button of box.querySelectorAll("button")) button.disabled = false;
    }, ARM_MS);
  }

  async function answer(agent, decision) {
    const box = $("approval");
    const id = box.dataset.id;
    for (const button of box.querySelectorAll("button")) button.disabled = true;
    const url = "/api/agents/" + agent.id + "/approvals/" + id + "/" + decision;
    try {
      const response = await fetch(url, { method: "POST", headers: { "x-agent-fsm-inspector": "1" } });
      $("approval-result").textContent = response.ok ? decision + " sent" : await response.text();
    } catch (e) {
      $("approval-result").textContent = "not sent: " + e;
      // Nothing came back: the click may be tried again (the server takes
      // an approval's answer once).
      if (box.dataset.id === id) for (const button of box.querySelectorAll("button")) button.disabled = false;
    }
  }

  // ---- a state's rows and time, when it is clicked.
  function showState(agent, name) {
    const box = $("state-info");
    box.hidden = false;
    box.dataset.state = name;
    $("info-name").textContent = name;
    let total = 0;
    let entries = 0;
    for (const hop of agent.hops) {
      if (hop.from === name && hop.to !== name) total += hop.spent;
      if (hop.to === name && hop.from !== name) entries += 1;
    }
    if (agent.state === name && !agent.finished) total += agent.serverNow() - agent.entered;
    if (agent.hops.length && agent.hops[0].from === name) entries += 1;
    const partial = agent.hops.length && agent.hops[0].n > 1 ? " (in the hops kept)" : "";
    $("info-time").textContent = "entered " + entries + " times, " + duration(total) + " in it" + partial;
    const rows = agent.rows.filter((r) => r.from === name);
    $("info-rows").replaceChildren(...rows.map((r) => {
      const tr = document.createElement("tr");
      const condition = [r.pattern, r.guard && "[" + r.guard + "]"].filter(Boolean).join(" ");
      tr.append(el("td", (r.any ? "* + " : "") + (r.event || "(eventless)")), el("td", condition), el("td", r.to),
        el("td", r.action || ""));
      return tr;
    }));
    if (rows.length === 0) $("info-rows").replaceChildren(el("tr", "no row leaves it (terminal)", "muted"));
    filterOn(name);
  }

  function wire(agent) {
    $("filter").addEventListener("input", applyFilter);
    $("hide-in-place").addEventListener("change", applyFilter);
    $("info-close").addEventListener("click", () => {
      $("state-info").hidden = true;
      filterOn("");
    });
    $("approval").querySelector(".approve").addEventListener("click", () => answer(agent, "approve"));
    $("approval").querySelector(".deny").addEventListener("click", () => answer(agent, "deny"));
  }

  return { duration, addHops, resetHops, setText, addText, renderTools, addNote, renderApproval, showState, wire };
})();
