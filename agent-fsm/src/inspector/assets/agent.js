// One agent's page: follows the agent's updates (server-sent events: a
// snapshot, then one message per change) and draws its machine.
//
// The diagram is the machine's own Mermaid text (`DESCRIPTION.mermaid`,
// the one its rustdoc shows) drawn by Mermaid 11.12.2, served from the
// binary: the same layout as the docs, and no layout code of our own.
// Mermaid names each state's node `state-<id>-<n>` and each edge
// `edge<k>` (k: the edge's line among the text's `-->` lines), which is
// how the current state, the states visited and the edges walked are
// marked, and how a click finds its state. If Mermaid cannot draw, the
// states are listed as buttons instead, marked the same way.
"use strict";

const agent = {
  id: Number(location.pathname.split("/").filter(Boolean).pop()),
  hops: [],
  tools: [],
  rows: [],
  offset: 0, // client clock minus the server's page clock, in ms
  serverNow() {
    return Date.now() - this.offset;
  },
};

const $ = (id) => document.getElementById(id);

// ---- the diagram.
const diagram = {
  nodes: new Map(), // state name -> its element(s)
  edges: [], // [source id, target id, label] per `-->` line, in order
  ids: new Map(), // state name -> Mermaid id
  visited: new Set(), // state names
  walked: new Set(), // edge indices
  drawn: false,
};

function parseMermaid(text) {
  for (const line of text.split("\n")) {
    const alias = line.match(/^\s*state "(.+)" as (\S+)$/);
    if (alias) diagram.ids.set(alias[1], alias[2]);
    const edge = line.match(/^\s*(\S+) --> (\S+)(?: : (.*))?$/);
    if (edge) diagram.edges.push([edge[1], edge[2], edge[3] || ""]);
  }
}

function mermaidId(name) {
  return diagram.ids.get(name) || name;
}

async function drawDiagram() {
  const box = $("diagram");
  parseMermaid(agent.mermaid);
  const byId = new Map(agent.states.map((s) => [mermaidId(s.name), s.name]));
  try {
    mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral" });
    const { svg } = await mermaid.render("agent-diagram", agent.mermaid);
    box.innerHTML = svg;
    for (const node of box.querySelectorAll("g.node")) {
      const match = node.id.match(/^state-(.+)-\d+$/);
      const name = match && byId.get(match[1]);
      if (!name) continue;
      node.dataset.state = name;
      diagram.nodes.set(name, node);
    }
  } catch (e) {
    // No Mermaid: the states as buttons.
    box.replaceChildren(...agent.states.map((s) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "node fallback";
      button.dataset.state = s.name;
      button.textContent = s.name;
      diagram.nodes.set(s.name, button);
      return button;
    }));
  }
  for (const [name, node] of diagram.nodes) {
    node.classList.add("clickable");
    node.addEventListener("click", () => Panels.showState(agent, name));
  }
  diagram.drawn = true;
  mark(agent.hops);
}

// The edge of the diagram a hop walked: the line from its source to its
// target whose label starts with its event, else any such line, else the
// `*` node's line into its target.
function edgeOf(hop) {
  const from = mermaidId(hop.from);
  const to = mermaidId(hop.to);
  const candidates = diagram.edges.map((e, k) => [e, k]).filter(([e]) => e[1] === to);
  const direct = candidates.filter(([e]) => e[0] === from);
  const pool = direct.length ? direct : candidates.filter(([e]) => e[0].startsWith("any_state"));
  const labelled = pool.find(([e]) => hop.event && e[2].startsWith(hop.event));
  const found = labelled || pool[0];
  return found ? found[1] : -1;
}

// Marks the current state, the states visited and the edges walked,
// adding `hops` to those seen so far: the work is per new hop, not per hop
// kept, so a long session does not slow each update down. The states
// visited and edges walked stay marked after their hops leave the page.
function mark(hops) {
  for (const hop of hops) {
    diagram.visited.add(hop.from);
    diagram.visited.add(hop.to);
  }
  if (!diagram.drawn) return;
  for (const [name, node] of diagram.nodes) {
    node.classList.toggle("current", name === agent.state);
    node.classList.toggle("visited", diagram.visited.has(name));
  }
  const svg = $("diagram").querySelector("svg");
  if (!svg) return;
  for (const hop of hops) {
    if (hop.from === hop.to) continue;
    const k = edgeOf(hop);
    if (k < 0 || diagram.walked.has(k)) continue;
    diagram.walked.add(k);
    const edge = svg.querySelector('[id="edge' + k + '"]');
    if (edge) edge.classList.add("walked");
  }
}

// ---- the header.
function renderHeader() {
  $("name").textContent = agent.name;
  $("machine").textContent = agent.machine;
  $("state").textContent = agent.state;
  document.body.dataset.state = agent.state;
  $("status").textContent = agent.finished ? "finished" : "running";
  $("status").className = "status " + (agent.finished ? "finished" : "running");
  document.title = agent.name + " · " + agent.state;
}

function tick() {
  if (agent.state === undefined) return;
  $("since").textContent = agent.finished ? "" : "for " + Panels.duration(agent.serverNow() - agent.entered);
  if (agent.tools.length) Panels.renderTools(agent);
}

// ---- updates.
function onSnapshot(s) {
  const first = agent.mermaid === undefined;
  Object.assign(agent, s);
  agent.offset = Date.now() - s.now;
  renderHeader();
  Panels.resetHops(agent);
  Panels.setText(s.text);
  Panels.renderTools(agent);
  Panels.renderApproval(agent);
  $("notes").replaceChildren();
  for (const note of s.notes) Panels.addNote(note, agent.hops.length ? agent.hops[0].at : 0);
  if (first) drawDiagram();
  else mark(agent.hops);
}

function onMessage(m) {
  switch (m.t) {
    case "snapshot":
      return onSnapshot(m);
    case "hop":
      agent.hops.push(m.hop);
      // The page keeps the newest `hops_kept` (the server's own bound):
      // open for days, it would otherwise hold every hop ever made.
      if (agent.hops.length > agent.hops_kept) agent.hops.splice(0, agent.hops.length - agent.hops_kept);
      agent.hop_count = m.hop.n;
      if (m.hop.from !== m.hop.to) agent.entered = m.hop.at;
      agent.state = m.hop.to;
      renderHeader();
      Panels.addHops(agent, [m.hop]);
      return mark([m.hop]);
    case "text":
      return Panels.addText(m.delta, m.reset);
    // The server sends the first `TOOLS_SHOWN` calls in flight, and how
    // many more there are (`more`).
    case "tool": {
      if (m.tool) {
        const at = agent.tools.findIndex((t) => t.id === m.tool.id);
        if (at >= 0) agent.tools[at] = m.tool; // started again: in its place
        else agent.tools.push(m.tool);
      }
      agent.tools_more = m.more;
      return Panels.renderTools(agent);
    }
    case "tool_done":
      agent.tools = agent.tools.filter((t) => t.id !== m.id);
      if (m.next) agent.tools.push(m.next);
      agent.tools_more = m.more;
      return Panels.renderTools(agent);
    case "note":
      return Panels.addNote(m, agent.hops.length ? agent.hops[0].at : 0);
    case "approval":
      agent.approval = m.approval;
      return Panels.renderApproval(agent);
    case "end":
      agent.finished = true;
      agent.tools = [];
      agent.tools_more = 0;
      renderHeader();
      Panels.renderTools(agent);
      return Panels.renderApproval(agent);
  }
}

// The update stream is open only while the page is shown: a browser
// opens six connections at most to one host, and each open stream holds
// one, so six pages left open in other tabs would leave none for a
// seventh page, nor for a click on approve in any of them. A page shown
// again opens a new stream, which starts with a fresh snapshot.
let updates = null;

function follow() {
  const stream = new EventSource("/api/agents/" + agent.id + "/events");
  stream.onmessage = (e) => onMessage(JSON.parse(e.data));
  stream.onerror = () => {
    // A refused request (another inspector on this port now, which has a
    // token of its own) ends the stream for good: the browser does not try
    // again, and only that inspector's URL opens its pages.
    if (stream.readyState === EventSource.CLOSED) {
      $("status").textContent = "disconnected: open the inspector's URL again";
    } else {
      $("status").textContent = agent.finished ? "finished (inspector stopped)" : "disconnected, retrying";
    }
  };
  updates = stream;
}

function pause() {
  if (updates === null) return;
  updates.close();
  updates = null;
  $("status").textContent = "paused while hidden";
}

Panels.wire(agent);
document.addEventListener("visibilitychange", () => {
  if (document.hidden) pause();
  else if (updates === null) follow();
});
if (!document.hidden) follow();
setInterval(tick, 250);
